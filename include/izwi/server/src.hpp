#pragma once
// izwi-server's compiled part, for IZWI_SEPARATE_COMPILATION (see
// izwi/config.hpp): the stock model loader, once. The CMake target
// izwi::server_compiled is this translation unit (src/izwi_server.cpp); it
// links izwi::compiled, which holds the engines the loader instantiates.
// Where OpenCL exists, src/izwi_server_opencl.cpp joins it with the loader's
// OpenCL half (IZWI_WITH_OPENCL; izwi/server/detail/opencl_loader.hpp).

#if !defined(IZWI_SEPARATE_COMPILATION)
#error "izwi/server/src.hpp is for IZWI_SEPARATE_COMPILATION builds"
#endif

#include "izwi/server/model_loader.hpp"
#include "izwi/server/impl/device.ipp"
#include "izwi/server/impl/model_loader.ipp"
