#pragma once
// Conversions between binary32 and the two 16-bit float formats of model
// files: exact widening of IEEE binary16 and bfloat16 to binary32, and
// narrowing with round-to-nearest-even (what PyTorch, numpy and ggml do, so a
// tensor converted here has the same bits as one converted there).

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

/// binary32 -> bfloat16, round to nearest even; NaN stays a (quiet) NaN.
inline std::uint16_t f32_to_bf16(float value) noexcept {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
  const std::uint32_t rounded = bits + 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>(rounded >> 16);
}

/// binary32 -> IEEE binary16, round to nearest even; values past 65504 (after
/// rounding) become infinity, tiny values become subnormals or zero.
inline std::uint16_t f32_to_f16(float value) noexcept {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u)  // NaN: keep the top payload bits, force quiet
    return static_cast<std::uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  if (magnitude >= 0x38800000u) {  // at or above 2^-14: a normal half, or overflow
    // Round the 13 dropped mantissa bits to nearest even, then rebias the
    // exponent (127 -> 15); a carry out of the mantissa bumps the exponent.
    std::uint32_t rounded = magnitude + 0xfffu + ((magnitude >> 13) & 1u);
    rounded -= 112u << 23;
    if (rounded >= 0x0f800000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // infinity
    return static_cast<std::uint16_t>(sign | (rounded >> 13));
  }
  // Below 2^-14: a subnormal half. Adding 0.5f aligns the value's bits to the
  // half's subnormal grid and lets the FPU round to nearest even.
  const float aligned = std::bit_cast<float>(magnitude) + 0.5f;
  return static_cast<std::uint16_t>(sign | (std::bit_cast<std::uint32_t>(aligned) - 0x3f000000u));
}

}  // namespace izwi::io::detail
