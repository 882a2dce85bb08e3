#pragma once
// The bodies of izwi/server/detail/opencl_device.hpp: inline in header-only
// builds with IZWI_WITH_OPENCL; compiled once, in
// src/izwi_server_opencl.cpp, under IZWI_SEPARATE_COMPILATION.

#include <utility>

#include "izwi/kernels/opencl/context.hpp"
#include "izwi/server/detail/opencl_device.hpp"
#include "izwi/server/device.hpp"

namespace izwi::server::detail {

/// clinfo's (platform, device) indices of `device`: its platform's place in
/// clGetPlatformIDs, its place among that platform's devices.
inline std::pair<std::size_t, std::size_t> opencl_device_indices(cl_device_id device) {
  cl_platform_id platform = nullptr;
  opencl::check(clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof platform, &platform, nullptr),
                "clGetDeviceInfo(CL_DEVICE_PLATFORM)");
  const auto platforms = opencl::detail::platforms();
  for (std::size_t p = 0; p < platforms.size(); ++p) {
    if (platforms[p] != platform) continue;
    const auto devices = opencl::detail::devices(platforms[p], CL_DEVICE_TYPE_ALL);
    for (std::size_t d = 0; d < devices.size(); ++d)
      if (devices[d] == device) return {p, d};
  }
  throw unavailable("OpenCL: the chosen device is not among its platform's devices");
}

IZWI_DECL ServingDevice open_opencl_device(const DeviceSpec& spec) {
  opencl::ContextOptions options;
  options.platform = spec.platform;
  options.device = spec.device;
  ServingDevice opened;
  opened.spec = spec;
  opened.opencl_context = opencl::Context::create(options);
  const opencl::Context& context = *opened.opencl_context;
  const auto [platform, device] = opencl_device_indices(context.device());
  opened.spec.platform = platform;
  opened.spec.device = device;
  opened.name = to_string(opened.spec) + " (" + context.description() + ")";
  const bool cached = context.program_origin() == opencl::ProgramOrigin::loaded_from_cache;
  opened.details = std::string(cached ? "kernels loaded from the program cache " : "kernels built from source") +
                   (context.program_cache_file().empty() ? std::string(cached ? "" : ", program cache off")
                    : cached                             ? context.program_cache_file().string()
                                                         : ", cached in " + context.program_cache_file().string());
  return opened;
}

IZWI_DECL std::vector<std::string> list_opencl_devices() {
  std::vector<std::string> lines;
  const auto platforms = opencl::detail::platforms();
  if (platforms.empty())
    return {"(no OpenCL devices: no OpenCL platform is installed; Debian: pocl-opencl-icd, or a GPU vendor's ICD)"};
  for (std::size_t p = 0; p < platforms.size(); ++p) {
    const auto devices = opencl::detail::devices(platforms[p], CL_DEVICE_TYPE_ALL);
    const std::string platform_name = opencl::detail::platform_info_string(platforms[p], CL_PLATFORM_NAME);
    for (std::size_t d = 0; d < devices.size(); ++d) {
      cl_device_type type = 0;
      clGetDeviceInfo(devices[d], CL_DEVICE_TYPE, sizeof type, &type, nullptr);
      lines.push_back("opencl:" + std::to_string(p) + ":" + std::to_string(d) + "  " + platform_name + " / " +
                      opencl::detail::device_info_string(devices[d], CL_DEVICE_NAME) + " (driver " +
                      opencl::detail::device_info_string(devices[d], CL_DRIVER_VERSION) + ", " +
                      ((type & CL_DEVICE_TYPE_GPU) ? "GPU" : (type & CL_DEVICE_TYPE_CPU) ? "CPU" : "other") + ")");
    }
  }
  if (lines.empty()) lines.push_back("(no OpenCL devices: the installed OpenCL platforms report none)");
  return lines;
}

}  // namespace izwi::server::detail
