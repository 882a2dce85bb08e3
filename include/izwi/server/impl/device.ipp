#pragma once
// The IZWI_DECL functions of izwi/server/device.hpp: inline in header-only
// builds; compiled once, in <izwi/server/src.hpp>, under
// IZWI_SEPARATE_COMPILATION. The OpenCL work itself is in
// impl/opencl_device.ipp, which only IZWI_WITH_OPENCL builds compile.

#if defined(IZWI_WITH_OPENCL)
#include "izwi/server/detail/opencl_device.hpp"
#endif

namespace izwi::server {

IZWI_DECL bool built_with_opencl() noexcept {
#if defined(IZWI_WITH_OPENCL)
  return true;
#else
  return false;
#endif
}

IZWI_DECL ServingDevice open_device(const DeviceSpec& spec) {
  if (spec.kind == DeviceSpec::Kind::cpu) return ServingDevice{};
#if defined(IZWI_WITH_OPENCL)
  return detail::open_opencl_device(spec);
#else
  throw unavailable("this izwi-server was built without OpenCL (izwi::opencl needs OpenCL's headers and ICD loader "
                    "at build time, Debian: ocl-icd-opencl-dev); use --device cpu");
#endif
}

IZWI_DECL std::vector<std::string> list_devices() {
#if defined(IZWI_WITH_OPENCL)
  std::vector<std::string> lines{"cpu"};
  for (std::string& line : detail::list_opencl_devices()) lines.push_back(std::move(line));
  return lines;
#else
  return {"cpu", "(no OpenCL devices: this izwi-server was built without OpenCL)"};
#endif
}

}  // namespace izwi::server
