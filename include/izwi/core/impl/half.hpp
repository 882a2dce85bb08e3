#pragma once
// Bodies of izwi/core/half.hpp.

#include <bit>
#include <cstddef>
#include <cstdint>

#if defined(__F16C__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace izwi {

inline float f16_to_f32(std::uint16_t bits) noexcept {
#if defined(__F16C__)
  return _cvtsh_ss(bits);  // one instruction; the same result as below
#endif
  const std::uint32_t sign = (static_cast<std::uint32_t>(bits) & 0x8000u) << 16;
  const std::uint32_t magnitude = static_cast<std::uint32_t>(bits) & 0x7fffu;
  if (magnitude >= 0x7c00u)  // infinity or NaN: all-ones exponent, payload kept
    return std::bit_cast<float>(sign | 0x7f800000u | ((magnitude & 0x3ffu) << 13));
  // Exponent and mantissa shifted into a float's mantissa alignment read as
  // a float 2^112 too small (the bias gap 127 - 15); one exact multiply fixes
  // normals and subnormals alike (a half subnormal lands on a float subnormal,
  // which is why this needs IEEE subnormals: no -ffast-math/DAZ here).
  const float scaled = std::bit_cast<float>(magnitude << 13) * 0x1p112f;
  return std::bit_cast<float>(sign | std::bit_cast<std::uint32_t>(scaled));
}

inline float bf16_to_f32(std::uint16_t bits) noexcept {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

inline std::uint16_t f32_to_f16(float value) noexcept {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  std::uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u)  // NaN: top payload bits, forced quiet
    return static_cast<std::uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  if (magnitude >= 0x477ff000u)  // 65520 and up (and infinity) round to infinity
    return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (magnitude < 0x38800000u) {
    // Below 2^-14 the result is a half subnormal. Adding 0.5f puts the value's
    // bits on the half-subnormal grid (ulp of 0.5f is 2^-24, a half subnormal's
    // ulp) and lets the FPU do the round-to-nearest-even.
    const float aligned = std::bit_cast<float>(magnitude) + 0.5f;
    return static_cast<std::uint16_t>(sign | (std::bit_cast<std::uint32_t>(aligned) - 0x3f000000u));
  }
  // Normal half: rebias the exponent (127 -> 15) and round away the 13 low
  // mantissa bits to nearest even; a carry into the exponent is the right result.
  const std::uint32_t odd = (magnitude >> 13) & 1u;
  magnitude += (static_cast<std::uint32_t>(15 - 127) << 23) + 0xfffu + odd;
  return static_cast<std::uint16_t>(sign | (magnitude >> 13));
}

inline std::uint16_t f32_to_bf16(float value) noexcept {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40u);  // quiet NaN
  return static_cast<std::uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

inline void f16_to_f32(const std::uint16_t* in, float* out, std::size_t n) noexcept {
  std::size_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(out + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i))));
#endif
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
#endif
  for (; i < n; ++i) out[i] = f16_to_f32(in[i]);
}

inline void bf16_to_f32(const std::uint16_t* in, float* out, std::size_t n) noexcept {
  // A shift per element; compilers vectorise this loop on their own.
  for (std::size_t i = 0; i < n; ++i) out[i] = bf16_to_f32(in[i]);
}

inline void f32_to_f16(const float* in, std::uint16_t* out, std::size_t n) noexcept {
  std::size_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        _mm512_cvtps_ph(_mm512_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#endif
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#endif
  for (; i < n; ++i) out[i] = f32_to_f16(in[i]);
}

inline void f32_to_bf16(const float* in, std::uint16_t* out, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) out[i] = f32_to_bf16(in[i]);
}

}  // namespace izwi
