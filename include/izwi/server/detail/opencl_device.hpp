#pragma once
// izwi-server's OpenCL device (izwi/server/device.hpp's open_device and
// list_devices), for builds with IZWI_WITH_OPENCL only. Declared without
// OpenCL's headers; the bodies (impl/opencl_device.ipp) need only the
// context (izwi/kernels/opencl/context.hpp), none of the engines. The device
// types are declared, not included: device.hpp's bodies include this header
// (header-only builds), so it must not need device.hpp complete.

#include <string>
#include <vector>

#include "izwi/config.hpp"

namespace izwi::server {
struct DeviceSpec;
struct ServingDevice;
}  // namespace izwi::server

namespace izwi::server::detail {

/// open_device for an OpenCL spec: the context, and the name with the
/// chosen device's platform and device indices.
IZWI_DECL ServingDevice open_opencl_device(const DeviceSpec& spec);

/// "opencl:P:D  platform / device (driver ..., GPU)" for every device, or one
/// line saying why there is none.
IZWI_DECL std::vector<std::string> list_opencl_devices();

}  // namespace izwi::server::detail

#if !defined(IZWI_SEPARATE_COMPILATION)
#include "izwi/server/impl/opencl_device.ipp"
#endif
