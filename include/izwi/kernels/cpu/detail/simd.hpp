#pragma once
// The SIMD vocabulary every CPU kernel is written in, once.
//
// `Simd<Arch>` names a vector of floats and the handful of operations the
// kernels need (load, store, fma, horizontal sums, exp, and widening loads of
// f16 / bf16 / int8 into floats). Arch is an xsimd architecture tag; xsimd 8
// defines the batch types of the architectures the translation unit is
// compiled for only, so each kernel variant is its own translation unit with
// its family's flags (src/kernels/cpu/, see dispatch.hpp), which instantiates
// the kernels for xsimd::default_arch there. `ScalarArch`, where a "vector" is
// one float, is the portable reference variant.
//
// Everything here and in the other kernel headers of detail/ lives in an
// inline namespace named by IZWI_KERNELS_VARIANT, which each variant
// translation unit sets before including them: the same inline function
// compiled with -mavx512f in one translation unit and for plain x86-64 in
// another must be two symbols, not one the linker keeps a random copy of
// (which could put AVX-512 code on the SSE2 path). For the same reason these
// headers convert f16/bf16 with their own functions rather than core/half.hpp's.
//
// The widening loads use the F16C / AVX-512 conversion instructions through
// intrinsics (xsimd 8 has no half-float type) and fall back to scalar
// conversion into a small aligned array on architectures without them.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include <bit>

#if defined(__AVX2__) || defined(__AVX512F__) || defined(__F16C__)
#include <immintrin.h>
#endif

#ifndef IZWI_KERNELS_VARIANT
/// The variant namespace of a translation unit that is not one of the
/// library's variants (a test or benchmark instantiating a kernel directly).
#define IZWI_KERNELS_VARIANT unnamed_variant
#endif

namespace izwi::kernels::cpu::detail::inline IZWI_KERNELS_VARIANT {

/// binary16 bits -> float, exactly (core/half.hpp's f16_to_f32 without its
/// F16C path, see the top). Finite values: the exponent and mantissa moved into
/// a float's and the result scaled by 2^(127 - 15), which is exact for normal
/// and subnormal halves alike; infinities and NaN keep an all-ones exponent.
inline float f16_bits_to_f32(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t rest = static_cast<std::uint32_t>(h & 0x7fffu) << 13;
  const float magnitude = rest >= (0x7c00u << 13) ? std::bit_cast<float>(rest | 0x7f800000u)
                                                 : std::bit_cast<float>(rest) * 0x1p112f;
  return std::bit_cast<float>(std::bit_cast<std::uint32_t>(magnitude) | sign);
}
/// bfloat16 bits -> float (the upper half of a binary32).
inline float bf16_bits_to_f32(std::uint16_t h) noexcept {
  return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16);
}

/// No SIMD: one float per "vector". Correct everywhere; the reference path.
struct ScalarArch {};

/// The best architecture this translation unit is compiled for (what a
/// variant translation unit instantiates the kernels with).
using KernelArch = std::conditional_t<std::is_same_v<xsimd::default_arch, xsimd::unavailable>, ScalarArch,
                                      xsimd::default_arch>;

#if defined(__AVX512F__)
/// 16 vectors of 16 floats -> the 16 sums, by halving twice across 128-bit
/// lanes, a 4x4 transpose-add inside them, and one permute into row order.
/// (A zero-masked shuffle with a full mask is the plain shuffle; GCC 12's
/// unmasked ones warn about their internal undefined vector under -Wall.)
inline __m512 sum_each_avx512_impl(const __m512* v) noexcept {
  __m512 x[8], y[4];
  for (int i = 0; i < 8; ++i)  // 128-bit lanes: [a0+a2, a1+a3, b0+b2, b1+b3]
    x[i] = _mm512_add_ps(_mm512_maskz_shuffle_f32x4(0xffff, v[2 * i], v[2 * i + 1], 0x44),
                         _mm512_maskz_shuffle_f32x4(0xffff, v[2 * i], v[2 * i + 1], 0xee));
  for (int i = 0; i < 4; ++i)  // 128-bit lane l of y[k]: four partial sums of row 4k + l
    y[i] = _mm512_add_ps(_mm512_maskz_shuffle_f32x4(0xffff, x[2 * i], x[2 * i + 1], 0x88),
                         _mm512_maskz_shuffle_f32x4(0xffff, x[2 * i], x[2 * i + 1], 0xdd));
  const __m512 z0 =
      _mm512_add_ps(_mm512_maskz_unpacklo_ps(0xffff, y[0], y[1]), _mm512_maskz_unpackhi_ps(0xffff, y[0], y[1]));
  const __m512 z1 =
      _mm512_add_ps(_mm512_maskz_unpacklo_ps(0xffff, y[2], y[3]), _mm512_maskz_unpackhi_ps(0xffff, y[2], y[3]));
  // Element e of 128-bit lane l now holds the sum of row 4e + l.
  const __m512 w =
      _mm512_add_ps(_mm512_maskz_shuffle_ps(0xffff, z0, z1, 0x44), _mm512_maskz_shuffle_ps(0xffff, z0, z1, 0xee));
  const __m512i rows = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_maskz_permutexvar_ps(0xffff, rows, w);
}
#endif

template <class Arch>
struct Simd {
  using vec = xsimd::batch<float, Arch>;
  static constexpr std::size_t lanes = vec::size;
  static constexpr bool avx512 = std::is_base_of_v<xsimd::avx512f, Arch>;
  static constexpr bool avx2 = std::is_base_of_v<xsimd::avx2, Arch>;

  static vec zero() noexcept { return vec(0.0f); }
  static vec broadcast(float v) noexcept { return vec(v); }
  static vec load(const float* p) noexcept { return vec::load_unaligned(p); }
  static void store(float* p, vec v) noexcept { v.store_unaligned(p); }
  static vec fma(vec a, vec b, vec c) noexcept { return xsimd::fma(a, b, c); }
  static vec max(vec a, vec b) noexcept { return xsimd::max(a, b); }
  static vec exp(vec v) noexcept { return xsimd::exp(v); }
  static vec erf(vec v) noexcept { return xsimd::erf(v); }
  static float sum(vec v) noexcept { return xsimd::hadd(v); }
  /// Lane i of the result = sum of the lanes of v[i], for `lanes` vectors.
  static vec sum_each(const vec* v) noexcept {
#if defined(__AVX512F__)
    // xsimd 8.1's AVX-512 haddp returns the sums in a permuted lane order.
    if constexpr (avx512) return sum_each_avx512(v);
#endif
    return xsimd::haddp(v);
  }
#if defined(__AVX512F__)
  static vec sum_each_avx512(const vec* v) noexcept {
    __m512 r[16];
    for (int i = 0; i < 16; ++i) r[i] = v[i];
    return vec(sum_each_avx512_impl(r));
  }
#endif
  /// v with lanes from `count` on replaced by `fill` (masking a partial tile).
  static vec keep_first(vec v, std::size_t count, float fill) noexcept {
    if (count >= lanes) return v;
    alignas(64) static constexpr float lane_index[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    static_assert(lanes <= 16);
    return xsimd::select(vec::load_aligned(lane_index) < vec(static_cast<float>(count)), v, vec(fill));
  }
  static float max_element(vec v) noexcept {
    alignas(64) float lanes_out[lanes];
    v.store_aligned(lanes_out);
    float m = lanes_out[0];
    for (std::size_t i = 1; i < lanes; ++i) m = std::max(m, lanes_out[i]);
    return m;
  }

  /// `lanes` binary16 values from p, widened.
  static vec load_f16(const std::uint16_t* p) noexcept {
#if defined(__AVX512F__)
    if constexpr (avx512) return vec(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
#endif
#if defined(__F16C__)
    if constexpr (lanes == 8) return vec(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
#endif
    alignas(64) float tmp[lanes];
    for (std::size_t i = 0; i < lanes; ++i) tmp[i] = f16_bits_to_f32(p[i]);
    return vec::load_aligned(tmp);
  }
  /// `lanes` bfloat16 values from p, widened.
  static vec load_bf16(const std::uint16_t* p) noexcept {
#if defined(__AVX512F__)
    if constexpr (avx512)
      return vec(_mm512_castsi512_ps(
          _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16)));
#endif
#if defined(__AVX2__)
    if constexpr (avx2 && lanes == 8)
      return vec(_mm256_castsi256_ps(
          _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16)));
#endif
    alignas(64) float tmp[lanes];
    for (std::size_t i = 0; i < lanes; ++i) tmp[i] = bf16_bits_to_f32(p[i]);
    return vec::load_aligned(tmp);
  }
  /// `lanes` signed bytes from p, as floats.
  static vec load_i8(const std::int8_t* p) noexcept {
#if defined(__AVX512F__)
    if constexpr (avx512)
      return vec(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)))));
#endif
#if defined(__AVX2__)
    if constexpr (avx2 && lanes == 8) {
      std::int64_t eight;
      std::memcpy(&eight, p, 8);
      return vec(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(eight))));
    }
#endif
    alignas(64) float tmp[lanes];
    for (std::size_t i = 0; i < lanes; ++i) tmp[i] = static_cast<float>(p[i]);
    return vec::load_aligned(tmp);
  }
};


template <>
struct Simd<ScalarArch> {
  using vec = float;
  static constexpr std::size_t lanes = 1;
  static constexpr bool avx512 = false;
  static constexpr bool avx2 = false;

  static vec zero() noexcept { return 0.0f; }
  static vec broadcast(float v) noexcept { return v; }
  static vec load(const float* p) noexcept { return *p; }
  static void store(float* p, vec v) noexcept { *p = v; }
  static vec fma(vec a, vec b, vec c) noexcept { return a * b + c; }
  static vec max(vec a, vec b) noexcept { return std::max(a, b); }
  static vec exp(vec v) noexcept { return std::exp(v); }
  static vec erf(vec v) noexcept { return std::erf(v); }
  static float sum(vec v) noexcept { return v; }
  static vec sum_each(const vec* v) noexcept { return v[0]; }
  static vec keep_first(vec v, std::size_t count, float fill) noexcept { return count >= 1 ? v : fill; }
  static float max_element(vec v) noexcept { return v; }
  static vec load_f16(const std::uint16_t* p) noexcept { return f16_bits_to_f32(*p); }
  static vec load_bf16(const std::uint16_t* p) noexcept { return bf16_bits_to_f32(*p); }
  static vec load_i8(const std::int8_t* p) noexcept { return static_cast<float>(*p); }
};

/// Dot product of two float arrays of length n.
template <class Arch>
inline float dot(const float* a, const float* b, std::size_t n) noexcept {
  using S = Simd<Arch>;
  constexpr std::size_t L = S::lanes;
  typename S::vec acc0 = S::zero(), acc1 = S::zero();
  std::size_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    acc0 = S::fma(S::load(a + i), S::load(b + i), acc0);
    acc1 = S::fma(S::load(a + i + L), S::load(b + i + L), acc1);
  }
  for (; i + L <= n; i += L) acc0 = S::fma(S::load(a + i), S::load(b + i), acc0);
  float s = S::sum(acc0 + acc1);
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

/// y[i] = y[i] * scale + a * x[i] over n floats.
template <class Arch>
inline void scale_add(float* y, float scale, float a, const float* x, std::size_t n) noexcept {
  using S = Simd<Arch>;
  constexpr std::size_t L = S::lanes;
  const auto vs = S::broadcast(scale), va = S::broadcast(a);
  std::size_t i = 0;
  for (; i + L <= n; i += L) S::store(y + i, S::fma(va, S::load(x + i), S::load(y + i) * vs));
  for (; i < n; ++i) y[i] = y[i] * scale + a * x[i];
}

/// n binary16 values widened into out.
template <class Arch>
inline void widen_f16(const std::uint16_t* in, float* out, std::size_t n) noexcept {
  using S = Simd<Arch>;
  std::size_t i = 0;
  for (; i + S::lanes <= n; i += S::lanes) S::store(out + i, S::load_f16(in + i));
  for (; i < n; ++i) out[i] = f16_bits_to_f32(in[i]);
}
/// n bfloat16 values widened into out.
template <class Arch>
inline void widen_bf16(const std::uint16_t* in, float* out, std::size_t n) noexcept {
  using S = Simd<Arch>;
  std::size_t i = 0;
  for (; i + S::lanes <= n; i += S::lanes) S::store(out + i, S::load_bf16(in + i));
  for (; i < n; ++i) out[i] = bf16_bits_to_f32(in[i]);
}

}  // namespace izwi::kernels::cpu::detail::inline IZWI_KERNELS_VARIANT
