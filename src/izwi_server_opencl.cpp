// izwi::server_compiled, where izwi is built with OpenCL: the server's
// OpenCL device and the stock loader's OpenCL half
// (include/izwi/server/detail/opencl_device.hpp, opencl_loader.hpp), the one
// translation unit that instantiates the OpenCL engines.
#include <izwi/server/detail/opencl_device.hpp>
#include <izwi/server/detail/opencl_loader.hpp>
#include <izwi/server/impl/opencl_device.ipp>
#include <izwi/server/impl/opencl_loader.ipp>
