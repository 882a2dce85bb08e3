#pragma once
// 16-bit floats of model files and KV caches: IEEE binary16 ("f16") and
// bfloat16 ("bf16"), stored as their raw bits in std::uint16_t.
//
// Widening to binary32 is exact. Narrowing rounds to nearest, ties to even,
// as PyTorch, numpy and ggml do, so a tensor converted here has the same bits
// as one converted there: f16 overflows to infinity past 65504 (after
// rounding) and keeps subnormals; NaN stays a quiet NaN of the same sign.
//
// The scalar functions are constexpr-free inline functions usable anywhere;
// the array conversions use the F16C / AVX-512 conversion instructions when
// the translation unit is compiled for them (-mf16c, -march=native) and the
// scalar functions otherwise, with the same results either way.

#include <bit>
#include <cstddef>
#include <cstdint>

namespace izwi {

/// binary16 bits -> float (exact; subnormals, infinities and NaN included).
inline float f16_to_f32(std::uint16_t bits) noexcept;
/// bfloat16 bits -> float (exact: bfloat16 is the upper half of a binary32).
inline float bf16_to_f32(std::uint16_t bits) noexcept;
/// float -> binary16 bits, round to nearest even.
inline std::uint16_t f32_to_f16(float value) noexcept;
/// float -> bfloat16 bits, round to nearest even.
inline std::uint16_t f32_to_bf16(float value) noexcept;

/// Converts `n` values from `in` to `out` (arrays must not overlap).
inline void f16_to_f32(const std::uint16_t* in, float* out, std::size_t n) noexcept;
inline void bf16_to_f32(const std::uint16_t* in, float* out, std::size_t n) noexcept;
inline void f32_to_f16(const float* in, std::uint16_t* out, std::size_t n) noexcept;
inline void f32_to_bf16(const float* in, std::uint16_t* out, std::size_t n) noexcept;

}  // namespace izwi

#include "izwi/core/impl/half.hpp"
