#pragma once
// Exact widening of IEEE binary16 and bfloat16 to binary32.

#include <bit>
#include <cstdint>

namespace izwi::io::detail {

inline float bf16_to_f32(std::uint16_t bits) noexcept {
  // bfloat16 is the upper half of a binary32.
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

inline float f16_to_f32(std::uint16_t bits) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1fu;
  std::uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1fu) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));  // inf, nan
  if (exponent != 0) return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  if (mantissa == 0) return std::bit_cast<float>(sign);  // signed zero
  // Subnormal half: normalise; every one is a normal float.
  std::uint32_t e = 113;
  while ((mantissa & 0x400u) == 0) {
    mantissa <<= 1;
    --e;
  }
  return std::bit_cast<float>(sign | (e << 23) | ((mantissa & 0x3ffu) << 13));
}

}  // namespace izwi::io::detail
