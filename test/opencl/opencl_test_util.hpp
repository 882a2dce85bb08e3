#pragma once
// What the OpenCL tests share: the device (or a SKIPPED line saying why there
// is none) and error measures.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "izwi/kernels/opencl/context.hpp"

namespace izwi::testing {

/// ContextOptions field by field (designated initializers that leave fields
/// out trip -Wmissing-field-initializers).
inline opencl::ContextOptions opencl_options(std::filesystem::path cache_dir,
                                             std::optional<std::size_t> platform = std::nullopt,
                                             std::optional<std::size_t> device = std::nullopt) {
  opencl::ContextOptions options;
  options.platform = platform;
  options.device = device;
  options.program_cache_dir = std::move(cache_dir);
  return options;
}

/// The first OpenCL device (PoCL's CPU device in CI), shared by the tests of
/// one process, with the program cache in the build tree; null, with a
/// "SKIPPED:" warning naming the reason, when the host has none.
inline std::shared_ptr<opencl::Context> opencl_context() {
  static std::shared_ptr<opencl::Context> context;
  static std::string reason;
  if (!context && reason.empty()) {
    if (!opencl::Context::any_device(&reason)) {
      // reason says why
    } else {
      try {
        context = opencl::Context::create(opencl_options("opencl-program-cache"));
      } catch (const izwi::error& e) {
        reason = e.what();
      }
    }
  }
  if (!context) WARN("SKIPPED: no OpenCL device: " << reason);
  return context;
}

/// max |a - b| / max(max |b|, floor): the error relative to the output's
/// scale; infinity when the sizes differ or `a` holds a NaN or infinity.
inline double relative_error(std::span<const float> a, std::span<const float> b, double floor = 1e-30) {
  if (a.size() != b.size()) return INFINITY;
  double diff = 0, scale = floor;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  }
  return diff / scale;
}

}  // namespace izwi::testing
