#pragma once
// parse_device_spec and to_string (izwi/server/device.hpp), inline in every
// build mode; the IZWI_DECL functions are in impl/device.ipp.

#include <charconv>
#include <system_error>

namespace izwi::server {

namespace detail {

/// A decimal index ("0", "12"): digits only, no sign, no overflow.
inline std::optional<std::size_t> parse_device_index(std::string_view digits) {
  if (digits.empty() || digits.size() > 9) return std::nullopt;
  std::size_t value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc{} || end != digits.data() + digits.size()) return std::nullopt;
  return value;
}

}  // namespace detail

inline DeviceSpec parse_device_spec(std::string_view text) {
  const auto refuse = [&](const std::string& why) -> DeviceSpec {
    throw invalid_argument("device", "'" + std::string(text.substr(0, 64)) + "' " + why +
                                         " (expected cpu, opencl or opencl:PLATFORM:DEVICE; izwi-server "
                                         "--list-devices prints the indices)");
  };
  DeviceSpec spec;
  if (text == "cpu") return spec;
  constexpr std::string_view opencl = "opencl";
  if (text.substr(0, opencl.size()) != opencl) return refuse("is not a device kind");
  spec.kind = DeviceSpec::Kind::opencl;
  std::string_view rest = text.substr(opencl.size());
  if (rest.empty()) return spec;
  if (rest.front() != ':') return refuse("is not a device kind");
  rest.remove_prefix(1);
  const std::size_t colon = rest.find(':');
  if (colon == std::string_view::npos) return refuse("names a platform but no device");
  spec.platform = detail::parse_device_index(rest.substr(0, colon));
  spec.device = detail::parse_device_index(rest.substr(colon + 1));
  if (!spec.platform || !spec.device) return refuse("has a platform or device index that is not a number");
  return spec;
}

inline std::string to_string(const DeviceSpec& spec) {
  if (spec.kind == DeviceSpec::Kind::cpu) return "cpu";
  if (!spec.platform || !spec.device) return "opencl";
  return "opencl:" + std::to_string(*spec.platform) + ":" + std::to_string(*spec.device);
}

}  // namespace izwi::server

#if !defined(IZWI_SEPARATE_COMPILATION)
#include "izwi/server/impl/device.ipp"
#endif
