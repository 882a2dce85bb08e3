#pragma once
// Where izwi-server runs a model's engine (izwi-server --device):
//
//   cpu                   CpuExecutor (the default)
//   opencl                OpenClExecutor on the first OpenCL GPU of any
//                         platform, else the first OpenCL device
//   opencl:PLATFORM:DEVICE  that platform's device, clinfo's indices
//                         (izwi-server --list-devices prints them)
//
// parse_device_spec reads the flag; open_device opens the device once at
// start-up (for OpenCL: the context, izwi's kernels built or loaded from the
// program cache), and every model loaded afterwards runs on it. Only Qwen3
// chat models run on an OpenCL device; the loader refuses the others
// (model_loader.hpp). This header needs no OpenCL headers: a server built
// without OpenCL parses the flag and says, when opened, that it cannot.

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "izwi/config.hpp"
#include "izwi/core/error.hpp"

namespace izwi::opencl {
class Context;  // izwi/kernels/opencl/context.hpp, where OpenCL exists
}  // namespace izwi::opencl

namespace izwi::server {

/// What --device names, before the device is opened.
struct DeviceSpec {
  enum class Kind { cpu, opencl };
  Kind kind = Kind::cpu;
  /// OpenCL platform and device indices; both or neither (first GPU, else first device).
  std::optional<std::size_t> platform{};
  std::optional<std::size_t> device{};
};

/// Reads "cpu", "opencl" or "opencl:PLATFORM:DEVICE". Anything else throws
/// izwi::invalid_argument("device", ...) naming the text and the forms.
inline DeviceSpec parse_device_spec(std::string_view text);

/// The spec as the flag spells it: "cpu", "opencl", "opencl:0:1".
inline std::string to_string(const DeviceSpec& spec);

/// An opened device, shared by every model the loader puts on it.
struct ServingDevice {
  DeviceSpec spec{};
  /// "cpu", or "opencl:P:D (platform / device (driver ...))" with the indices
  /// of the device actually chosen: the /v1/models "device" field and the logs.
  std::string name = "cpu";
  /// For the start-up log: where izwi's OpenCL kernels came from (built, or
  /// loaded from the program cache, and the cache file). Empty for the CPU.
  std::string details{};
  /// The OpenCL context (null for the CPU).
  std::shared_ptr<opencl::Context> opencl_context{};
};

/// True when this build runs models on OpenCL devices (izwi::opencl was
/// found at build time and IZWI_WITH_OPENCL defined for the loader).
IZWI_DECL bool built_with_opencl() noexcept;

/// Opens `spec`'s device. The CPU always opens. OpenCL: throws
/// izwi::unavailable naming the problem when this build has no OpenCL, no
/// platform is installed, or the platform or device index does not exist;
/// izwi::opencl::opencl_error (an izwi::error) when the driver fails.
IZWI_DECL ServingDevice open_device(const DeviceSpec& spec);

/// "cpu" and every OpenCL device as "opencl:P:D  platform / device (driver ...)",
/// for izwi-server --list-devices; a last line says why there are no OpenCL
/// devices when there are none (not built with OpenCL, no platform).
IZWI_DECL std::vector<std::string> list_devices();

}  // namespace izwi::server

#include "izwi/server/impl/device.hpp"
