#pragma once
// Q8_0 weights times activations quantized to Q8_0-style blocks, with integer
// dot products: the GEMV paths (decode, batched decode: m <= gemv_max_rows)
// of matmul() for Q8_0 weights. Instantiated by the kernel variant
// translation units through matmul_kernels.hpp.
//
// The algorithm (the same in every variant, bit for bit):
// 1. Once per matmul call, before the threads start, every activation row is
//    cut into blocks of 32 values and each block quantized: d = max|x| / 127
//    rounded to binary16's 11 significant bits (a float: see
//    round_to_f16_significand), q[i] = round-to-nearest-even(x[i] *
//    (127 / max|x|)), |q| <= 127. A block with an infinite or NaN value gets d = NaN (the output is
//    NaN, as the float product would be); one whose max|x| is below about
//    4e-37 (127 / max|x| overflows) counts as zero.
// 2. For each weight block and activation block, s = sum q_w[i] * q_x[i]
//    exactly in int32 (|s| <= 32 * 128 * 127).
// 3. y = sum over blocks, in block order, of double(s) * double(d_w * d_x),
//    with d_w * d_x rounded to float: the product of a 20-bit integer and a
//    24-bit float is exact in a double, so a fused or unfused multiply-add
//    gives the same sum, and every variant adds the same doubles in the same
//    order. y is that double rounded to float.
// The error against the float product is the activations' rounding, at most
// d_x / 2 per value, plus the scale's (at most 2^-11 of it, so 127 * 2^-11 *
// d_x per value); llama.cpp quantizes activations the same way for its Q8_0
// dot products. The gain is that the weights are never widened: 32
// multiplies per block are 1 (VNNI) or 2 (AVX2) integer instructions on one
// vector, then one float multiply per block.
//
// The int8 dot products of one block, per variant (Int8Dot):
//   generic  a plain loop (scalar, SSE2: the compiler vectorises what it can)
//   avx2     the sign trick: |w| as unsigned bytes times x * sign(w) as signed
//            bytes with vpmaddubsw (pairs, into int16: at most 2 * 128 * 127,
//            no saturation), then vpmaddwd by ones into int32 (AVX2, and
//            AVX-512 BW without VNNI on 256-bit vectors)
//   vnni     w + 128 (w ^ 0x80) as unsigned bytes times x as signed bytes
//            into int32 in one vpdpbusd (AVX-512 VNNI with VL), minus
//            128 * (the block's sum of x, kept from step 1); written as
//            inline assembly so that the avx512 translation unit needs no
//            -mavx512vnni: only the "avx512" table of a CPU with VNNI
//            reaches it (dispatch.hpp). On 512-bit vectors: two pairs of
//            blocks per instruction, the 8 pairs' partial sums of four
//            vectors reduced together (q8_columns_vnni512).

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "izwi/kernels/cpu/matmul.hpp"
#include "izwi/kernels/cpu/detail/simd.hpp"
#include "izwi/kernels/cpu/detail/tile_prefetch.hpp"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace izwi::kernels::cpu::detail::inline IZWI_KERNELS_VARIANT {

/// How a variant computes the int8 dot product of two 32-value blocks:
/// a plain loop, AVX2's vpmaddubsw, AVX-512 VNNI's vpdpbusd, or (amx) the
/// VNNI tiles with AMX-INT8's tdpbsud from 9 activation rows
/// (matmul_q8_amx_kernels.hpp).
enum class Int8Dot { generic, avx2, vnni, amx };

/// Whether Dot uses the 512-bit VNNI tiles (the vnni and amx variants).
inline constexpr bool uses_vnni512(Int8Dot dot) noexcept { return dot == Int8Dot::vnni || dot == Int8Dot::amx; }

template <class Arch>
inline constexpr Int8Dot default_int8_dot = Simd<Arch>::avx2 || Simd<Arch>::avx512 ? Int8Dot::avx2 : Int8Dot::generic;

/// Most activation rows for which the variant takes this path; with more,
/// matmul widens the weights with F32 activations (matmul_kernels.hpp).
/// Measured with weights in L2 (compute bound, 1 thread; indications from a
/// loaded machine): AVX-512 with VNNI's 512-bit tiles against the 16-lane FMA
/// blocks, 512 x 1024: ahead from 2 to 8 rows (m = 2 24-46 vs 62-83 us), level
/// at 16 (180-335 vs 168-366), so every GEMV row count (a request's bits then
/// do not change between 1 and 16 rows). AVX-512 without VNNI keeps the 256-bit
/// tile, which lost from 2 rows to the FMA blocks (the per-block int32
/// reduction and scaling cost more than its integer products save: m = 4 15.6
/// vs 19.4 us, m = 16 56 vs 81 us for 256 x 1024), while one row gains 37.6 ->
/// 44.8 GB/s; AVX2 gained at every m against the 2 x 4 FMA blocks (1: 28 -> 41
/// GB/s, 4: 7.4 -> 12, 16: 2.6 -> 2.9), but from 12 rows it loses to the
/// widened tiles with the 3 x 4 blocks (AVX2-only EPYC, idle, weights from
/// memory, 3072 x 1024, alternated runs: m = 16 1.61-1.83 ms against 1.90-2.27
/// at 1 thread, 0.88-1.34 against 0.98-1.72 at 2; m = 12 1.29-1.31 against
/// 1.42-1.71, 0.65-0.76 against 0.85-0.88; end to end, batched decode of 16
/// sequences of the 0.6B shape, 1 thread, 44.1-47.3 tokens/s against 36.9-41.8,
/// at 2 threads level within the rounds' spread), so it stops at 11 as the
/// generic loop does, which gains up to about 8 rows (1: 3.9 -> 7.9, 4: 1.3 ->
/// 2.1) and loses at 16 (0.90 -> 0.38) to the same tiles.
template <class Arch, Int8Dot Dot>
inline constexpr std::size_t q8_quantized_max_rows =
    Simd<Arch>::avx512 ? (uses_vnni512(Dot) ? gemv_max_rows : 1) : 11;

/// Whether matmul_group_batch_invariant takes this path for Q8_0 weights,
/// at every m (so a row's bits never depend on m): where its integer dot
/// products beat the batch-invariant alternative, the register blocks over
/// weights widened in registers (AVX-512 with VNNI; AVX2, which matmul()
/// sends to the widened tiles from 12 rows, tiles that the batch-invariant
/// path may not take when k exceeds one tile depth). A row's result
/// here does not depend on the other rows or m by construction (each row is
/// quantized and summed alone, in block order).
template <class Arch, Int8Dot Dot>
inline constexpr bool q8_batch_invariant_quantized = uses_vnni512(Dot) || (Dot == Int8Dot::avx2 && !Simd<Arch>::avx512);

/// Activation rows quantized to Q8_0-style blocks (step 1 above), block by
/// block: block b of rows 0..m-1 lie side by side, so that the blocks of
/// neighbouring rows that one register block multiplies by the same weight
/// block are one load (AVX-512: two rows in one 512-bit vector).
struct QuantizedRows {
  const std::int8_t* q = nullptr;      // block b of row r: 32 values at q + (b * m + r) * 32
  const float* d = nullptr;            // its scale at d[b * m + r]
  const std::int32_t* sums = nullptr;  // its sum of q at sums[b * m + r] (the VNNI path's correction)
  std::size_t k = 0;
  std::size_t m = 0;

  std::size_t at(std::size_t r, std::size_t b) const noexcept { return b * m + r; }
  const std::int8_t* block(std::size_t r, std::size_t b) const noexcept { return q + at(r, b) * q8_0_block_values; }
};

/// An activation block's scale d rounded to binary16's 11 significant bits
/// (to nearest, ties to even), kept in float's exponent range. llama.cpp
/// stores this scale as binary16 (block_q8_0.d): with the same significand
/// both multiply the same integer block sums by the same scale products, so
/// on one Q8_0 GGUF their logits agree to float rounding, where a float
/// scale left them about 3% of the logits' range apart (4 layers; measured
/// 2026-11-29). The float range keeps what binary16 would lose: llama.cpp's
/// scale overflows to infinity above 65504 (max|x| above 8.3e6) and turns
/// subnormal below 6.1e-5 (max|x| below 7.8e-3), losing significant bits;
/// there izwi keeps 11 bits. The cost is at most 2^-11 of the scale, an
/// eighth of the rounding of q itself (half a step of a value near max|x|).
inline float round_to_f16_significand(float d) noexcept {
  std::uint32_t bits;
  std::memcpy(&bits, &d, sizeof bits);
  bits += 0x0fffu + ((bits >> 13) & 1u);  // round the 13 dropped bits to nearest, ties to even
  bits &= ~std::uint32_t{0x1fff};
  std::memcpy(&d, &bits, sizeof bits);
  return d;
}

/// One block of 32 activations: its scale, and q (step 1 above), and the sum of q.
inline float quantize_q8_block(const float* x, std::int8_t* q, std::int32_t& sum) noexcept {
  float amax = 0.0f;
  bool finite = true;
  for (std::size_t i = 0; i < q8_0_block_values; ++i) {
    const float a = std::fabs(x[i]);
    finite = finite && a <= FLT_MAX;  // false for inf and NaN
    amax = std::max(amax, a);
  }
  const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
  if (!finite || !(inv <= FLT_MAX) || amax == 0.0f) {
    std::memset(q, 0, q8_0_block_values);
    sum = 0;
    return finite ? 0.0f : std::numeric_limits<float>::quiet_NaN();
  }
  sum = 0;
  for (std::size_t i = 0; i < q8_0_block_values; ++i) {
    q[i] = static_cast<std::int8_t>(std::nearbyint(x[i] * inv));
    sum += q[i];
  }
  return round_to_f16_significand(amax / 127.0f);
}

#if defined(__AVX2__)
/// quantize_q8_block with 256-bit vectors, the same values: the same max,
/// the same scalar scale, vroundps to nearest even (as nearbyint), exact
/// integer sums. (The scalar loop cost 1-2 us per 1024 values, serial
/// before the threads start.)
inline float quantize_q8_block_avx2(const float* x, std::int8_t* q, std::int32_t& sum) noexcept {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 v[4], amax_v = _mm256_setzero_ps();
  for (int i = 0; i < 4; ++i) {
    v[i] = _mm256_loadu_ps(x + 8 * i);
    amax_v = _mm256_max_ps(amax_v, _mm256_and_ps(v[i], abs_mask));  // NaN lanes drop out: caught below
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, amax_v);
  float amax = 0.0f;
  for (float l : lanes) amax = std::max(amax, l);
  const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
  if (!(amax <= FLT_MAX) || !(inv <= FLT_MAX) || amax == 0.0f) return quantize_q8_block(x, q, sum);  // rare
  const __m256 scale = _mm256_set1_ps(inv);
  __m256i n[4];
  for (int i = 0; i < 4; ++i)
    n[i] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[i], scale), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  // A NaN (which max skipped) converts to INT_MIN: redo the block the slow way.
  const __m256i bad = _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi32(n[0], _mm256_set1_epi32(INT32_MIN)),
                                                       _mm256_cmpeq_epi32(n[1], _mm256_set1_epi32(INT32_MIN))),
                                      _mm256_or_si256(_mm256_cmpeq_epi32(n[2], _mm256_set1_epi32(INT32_MIN)),
                                                       _mm256_cmpeq_epi32(n[3], _mm256_set1_epi32(INT32_MIN))));
  if (!_mm256_testz_si256(bad, bad)) return quantize_q8_block(x, q, sum);
  // int32 -> int8 (values in -127..127: the saturating packs are exact), back into order.
  const __m256i packed = _mm256_packs_epi16(_mm256_packs_epi32(n[0], n[1]), _mm256_packs_epi32(n[2], n[3]));
  const __m256i ordered = _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), ordered);
  const __m256i total = _mm256_add_epi32(_mm256_add_epi32(n[0], n[1]), _mm256_add_epi32(n[2], n[3]));
  alignas(32) std::int32_t parts[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(parts), total);
  sum = 0;
  for (std::int32_t part : parts) sum += part;
  return round_to_f16_significand(amax / 127.0f);
}
#endif

/// Rows 0..m-1 of x (k values each, k a multiple of 32) into q, d and sums
/// laid out as QuantizedRows.
inline void quantize_q8_rows(const float* x, std::size_t ldx, std::size_t m, std::size_t k, std::int8_t* q, float* d,
                             std::int32_t* sums) noexcept {
  const std::size_t blocks = k / q8_0_block_values;
  for (std::size_t r = 0; r < m; ++r)
    for (std::size_t b = 0; b < blocks; ++b) {
      const std::size_t at = b * m + r;
#if defined(__AVX2__)
      d[at] = quantize_q8_block_avx2(x + r * ldx + b * q8_0_block_values, q + at * q8_0_block_values, sums[at]);
#else
      d[at] = quantize_q8_block(x + r * ldx + b * q8_0_block_values, q + at * q8_0_block_values, sums[at]);
#endif
    }
}

/// A Q8_0 weight block's scale (its first two bytes, binary16).
inline float q8_block_scale(const std::byte* block) noexcept {
  std::uint16_t bits;
  std::memcpy(&bits, block, 2);
  return f16_bits_to_f32(bits);
}

/// Exact int32 dot product of two blocks of 32 int8 values.
inline std::int32_t dot_q8_block(const std::int8_t* a, const std::int8_t* b) noexcept {
  std::int32_t s = 0;
  for (std::size_t i = 0; i < q8_0_block_values; ++i) s += std::int32_t{a[i]} * std::int32_t{b[i]};
  return s;
}

/// Weight rows per tile: the int32 sums of one block of 4 weight rows are
/// reduced together (one transpose-add) and scaled with one vector multiply.
inline constexpr std::size_t q8_tile_cols = 4;

/// Activation rows per register block: each weight block, loaded once,
/// feeds R activation rows (AVX2: 16 vector registers allow 2).
template <class Arch>
inline constexpr std::size_t q8_tile_rows = Simd<Arch>::avx2 ? 2 : 4;

/// A tile's q8_tile_cols weight rows from n (past `cols` the last one again:
/// computed, not written) and the rows to prefetch after them (`prefetch`:
/// the first activation rows over these weights; otherwise the same rows).
inline void q8_tile_weight_rows(const WeightMatrix& w, std::size_t n, std::size_t cols, bool prefetch,
                                const std::byte** rows, const std::byte** next) noexcept {
  for (std::size_t c = 0; c < q8_tile_cols; ++c) {
    rows[c] = w.row(n + std::min(c, cols - 1));
    next[c] = prefetch && n + cols + c < w.rows ? w.row(n + cols + c) : rows[c];
  }
}

/// Generic tile: R activation rows from r0 x weight rows n .. n+cols-1
/// (cols <= 4) over all blocks; prefetches the 4 weight rows after them
/// when `prefetch` (the first rows over these weights).
template <std::size_t R>
inline void q8_tile_generic(const QuantizedRows& xq, std::size_t r0, const WeightMatrix& w, std::size_t n,
                            std::size_t cols, float* y, std::size_t ldy, bool prefetch) noexcept {
  constexpr std::size_t C = q8_tile_cols;
  const std::size_t blocks = xq.k / q8_0_block_values;
  const std::byte* rows[C];
  const std::byte* next[C];
  q8_tile_weight_rows(w, n, cols, prefetch, rows, next);
  double acc[R][C] = {};
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t offset = b * q8_0_block_bytes;
    for (std::size_t c = 0; c < C; ++c) __builtin_prefetch(next[c] + offset);
    for (std::size_t r = 0; r < R; ++r) {
      const std::int8_t* xb = xq.block(r0 + r, b);
      const float dx = xq.d[xq.at(r0 + r, b)];
      for (std::size_t c = 0; c < C; ++c) {
        const std::byte* block = rows[c] + offset;
        const std::int32_t s = dot_q8_block(reinterpret_cast<const std::int8_t*>(block + 2), xb);
        acc[r][c] += double(s) * double(q8_block_scale(block) * dx);
      }
    }
  }
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t c = 0; c < cols; ++c) y[(r0 + r) * ldy + n + c] = static_cast<float>(acc[r][c]);
}

#if defined(__AVX2__)
/// 8 int32 partial sums of |w| (unsigned bytes) times x * sign(w) (signed bytes).
template <Int8Dot Dot>
inline __m256i int8_dot_partial(__m256i magnitude, __m256i signed_x) noexcept {
  if constexpr (Dot == Int8Dot::vnni) {
    __m256i sum = _mm256_setzero_si256();
    __asm__("vpdpbusd %2, %1, %0" : "+v"(sum) : "v"(magnitude), "v"(signed_x));
    return sum;
  } else {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(magnitude, signed_x), _mm256_set1_epi16(1));
  }
}

/// The int32 dot products of one activation block (sum of its q: x_sum)
/// with 4 weight blocks, in lanes 0..3. AVX2: `unsigned_w` holds |w| and
/// `weights` the weights, for the signs (the sign trick). VNNI:
/// `unsigned_w` holds w + 128 (w ^ 0x80), whose products with x are the
/// wanted ones plus 128 * x_sum, taken off after the reduction: one
/// vpdpbusd per block and no sign instruction.
template <Int8Dot Dot>
inline __m128i q8_block_sums4(const __m256i (&unsigned_w)[4], const __m256i (&weights)[4], const std::int8_t* xb,
                              std::int32_t x_sum) noexcept {
  const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb));
  // Named values, not an array: GCC kept an array of them on the stack (-15%).
  __m256i p0, p1, p2, p3;
  if constexpr (Dot == Int8Dot::vnni) {
    p0 = int8_dot_partial<Dot>(unsigned_w[0], x);
    p1 = int8_dot_partial<Dot>(unsigned_w[1], x);
    p2 = int8_dot_partial<Dot>(unsigned_w[2], x);
    p3 = int8_dot_partial<Dot>(unsigned_w[3], x);
  } else {  // x * sign(w): |x| <= 127, so no overflow
    p0 = int8_dot_partial<Dot>(unsigned_w[0], _mm256_sign_epi8(x, weights[0]));
    p1 = int8_dot_partial<Dot>(unsigned_w[1], _mm256_sign_epi8(x, weights[1]));
    p2 = int8_dot_partial<Dot>(unsigned_w[2], _mm256_sign_epi8(x, weights[2]));
    p3 = int8_dot_partial<Dot>(unsigned_w[3], _mm256_sign_epi8(x, weights[3]));
  }
  // Lane l of 128-bit half h: the sum of elements 4h..4h+3 of p<l>.
  const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(p0, p1), _mm256_hadd_epi32(p2, p3));
  const __m128i s = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
  return Dot == Int8Dot::vnni ? _mm_sub_epi32(s, _mm_set1_epi32(128 * x_sum)) : s;
}

/// The generic tile's arithmetic with 256-bit integer dot products; the 4
/// weight rows' sums of a row live in the 4 doubles of one vector.
template <Int8Dot Dot, std::size_t R>
inline void q8_tile_avx2(const QuantizedRows& xq, std::size_t r0, const WeightMatrix& w, std::size_t n,
                         std::size_t cols, float* y, std::size_t ldy, bool prefetch) noexcept {
  constexpr std::size_t C = q8_tile_cols;
  const std::size_t blocks = xq.k / q8_0_block_values;
  const std::byte* rows[C];
  const std::byte* next[C];
  q8_tile_weight_rows(w, n, cols, prefetch, rows, next);
  // The next tile's rows (tile_prefetch.hpp): ascending, or per row (`next`).
  const bool ascending = prefetch && tile_prefetch_ascending(w, C);
  const AscendingPrefetch<C * q8_0_block_bytes> ahead(w, n, cols, C);
  __m256d acc[R];
  for (std::size_t r = 0; r < R; ++r) acc[r] = _mm256_setzero_pd();
  const std::size_t step = xq.m;  // rows r0.. of block b at xq.at(r0, b) = at (no multiply per block)
  for (std::size_t b = 0, at = r0; b < blocks; ++b, at += step) {
    const std::size_t offset = b * q8_0_block_bytes;
    if (ascending) ahead.step(b);
    else for (std::size_t c = 0; c < C; ++c) __builtin_prefetch(next[c] + offset);
    __m256i weights[4], unsigned_w[4];
    std::uint16_t scale_bits[4];
    for (std::size_t c = 0; c < C; ++c) {
      std::memcpy(&scale_bits[c], rows[c] + offset, 2);
      weights[c] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[c] + offset + 2));
      unsigned_w[c] = Dot == Int8Dot::vnni ? _mm256_xor_si256(weights[c], _mm256_set1_epi8(char(0x80)))
                                           : _mm256_abs_epi8(weights[c]);  // -128 -> 128 as an unsigned byte
    }
    std::uint64_t packed;
    std::memcpy(&packed, scale_bits, 8);
    const __m128 dw = _mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<long long>(packed)));  // exact
    for (std::size_t r = 0; r < R; ++r) {
      const __m128i s = q8_block_sums4<Dot>(unsigned_w, weights, xq.q + (at + r) * q8_0_block_values, xq.sums[at + r]);
      const __m128 d = _mm_mul_ps(dw, _mm_set1_ps(xq.d[at + r]));
      acc[r] = _mm256_add_pd(acc[r], _mm256_mul_pd(_mm256_cvtepi32_pd(s), _mm256_cvtps_pd(d)));
    }
  }
  for (std::size_t r = 0; r < R; ++r) {
    alignas(16) float out[4];
    _mm_store_ps(out, _mm256_cvtpd_ps(acc[r]));
    for (std::size_t c = 0; c < cols; ++c) y[(r0 + r) * ldy + n + c] = out[c];
  }
}
#endif

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
// ------------------------------------------ AVX-512 with VNNI: 512-bit tiles ----
//
// Each vpdpbusd multiplies two pairs (weight block, activation block) at
// once, one per 256-bit half, and the int32 partial sums of 8 pairs (four
// such vectors) are reduced together by a transposing tree into one vector
// of 8 block sums, then scaled and added in 8 double lanes, lane = pair.
// Per pair that is about one shuffle, where q8_block_sums4 spends about two
// (three vphaddd and an extract for 4 pairs); every term and every add is
// the one the scalar loop makes, in block order, so the bits stay the same.

/// 8 int32 partial sums per half: w + 128 (unsigned bytes) times x (signed bytes).
inline __m512i vnni_dot512(__m512i unsigned_w, __m512i x) noexcept {
  __m512i sum = _mm512_setzero_si512();
  __asm__("vpdpbusd %2, %1, %0" : "+v"(sum) : "v"(unsigned_w), "v"(x));
  return sum;
}

/// z0..z3 each hold pair a_i in their low half and pair b_i in their high
/// half (8 int32 partial sums each): returns the 8 sums [a0 a1 a2 a3 b0 b1 b2 b3].
inline __m256i sum_halves4(__m512i z0, __m512i z1, __m512i z2, __m512i z3) noexcept {
  // Per 128-bit chunk: 2 partials each of (z0, z1), then of (z2, z3) ...
  const __m512i t01 = _mm512_add_epi32(_mm512_unpacklo_epi32(z0, z1), _mm512_unpackhi_epi32(z0, z1));
  const __m512i t23 = _mm512_add_epi32(_mm512_unpacklo_epi32(z2, z3), _mm512_unpackhi_epi32(z2, z3));
  // ... then one partial each of z0..z3 per chunk: chunks 0, 1 the a's, 2, 3 the b's.
  const __m512i t = _mm512_add_epi32(_mm512_unpacklo_epi64(t01, t23), _mm512_unpackhi_epi64(t01, t23));
  const __m512i chunks = _mm512_shuffle_i32x4(t, t, _MM_SHUFFLE(3, 1, 2, 0));  // [c0 c2 c1 c3]
  return _mm256_add_epi32(_mm512_castsi512_si256(chunks), _mm512_extracti64x4_epi64(chunks, 1));
}

/// The first 4 bytes of a block (its binary16 scale, then 2 weights) in
/// every lane: a broadcast load, no shuffle.
inline __m256i q8_scale_word(const std::byte* block) noexcept {
  std::int32_t word;
  std::memcpy(&word, block, 4);
  return _mm256_set1_epi32(word);
}

/// The binary16 scales of the blocks at `offset` of rows[0..7] as floats
/// (exact): lane c's dword from row c by blends of broadcast loads, then its
/// low halves packed (vpmovdw). (Gathering them through general registers,
/// a load, shift and or each, cost about 25 instructions per 8 rows.)
inline __m256 q8_scales8(const std::byte* const* rows, std::size_t offset) noexcept {
  __m256i v = q8_scale_word(rows[0] + offset);
  v = _mm256_blend_epi32(v, q8_scale_word(rows[1] + offset), 0x02);
  v = _mm256_blend_epi32(v, q8_scale_word(rows[2] + offset), 0x04);
  v = _mm256_blend_epi32(v, q8_scale_word(rows[3] + offset), 0x08);
  v = _mm256_blend_epi32(v, q8_scale_word(rows[4] + offset), 0x10);
  v = _mm256_blend_epi32(v, q8_scale_word(rows[5] + offset), 0x20);
  v = _mm256_blend_epi32(v, q8_scale_word(rows[6] + offset), 0x40);
  v = _mm256_blend_epi32(v, q8_scale_word(rows[7] + offset), 0x80);
  return _mm256_cvtph_ps(_mm256_cvtepi32_epi16(v));
}

/// The same for rows[0..3].
inline __m128 q8_scales4(const std::byte* const* rows, std::size_t offset) noexcept {
  __m128i v = _mm256_castsi256_si128(q8_scale_word(rows[0] + offset));
  v = _mm_blend_epi32(v, _mm256_castsi256_si128(q8_scale_word(rows[1] + offset)), 0x2);
  v = _mm_blend_epi32(v, _mm256_castsi256_si128(q8_scale_word(rows[2] + offset)), 0x4);
  v = _mm_blend_epi32(v, _mm256_castsi256_si128(q8_scale_word(rows[3] + offset)), 0x8);
  return _mm_cvtph_ps(_mm_cvtepi32_epi16(v));
}

/// A Q8_0 block's 32 weights.
inline __m256i q8_weights(const std::byte* block) noexcept {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 2));
}

/// w + 128 as unsigned bytes (w ^ 0x80).
inline __m512i q8_unsigned(__m512i w) noexcept { return _mm512_xor_si512(w, _mm512_set1_epi8(char(0x80))); }

/// How far past a tile's weight rows the first row group prefetches: the
/// next 8 rows when `prefetch` and they exist (the weight rows are
/// equally spaced, so one distance serves every row of the tile and
/// keeps the general registers for the row pointers), else 0 (its own rows).
inline std::size_t q8_prefetch_distance(const WeightMatrix& w, std::size_t n, bool prefetch) noexcept {
  return prefetch && n + 16 <= w.rows ? 8 * w.row_bytes() : 0;
}

/// One activation row r x 8 weight rows n .. n+cols-1 (cols <= 8; past
/// cols the last row again, not written). Prefetches the 8 weight rows
/// after them when `prefetch`.
inline void q8_tile_vnni512_row(const QuantizedRows& xq, std::size_t r, const WeightMatrix& w, std::size_t n,
                                std::size_t cols, float* y, std::size_t ldy, bool prefetch) noexcept {
  const std::size_t blocks = xq.k / q8_0_block_values;
  const std::byte* rows[8];
  for (std::size_t c = 0; c < 8; ++c) rows[c] = w.row(n + std::min(c, cols - 1));
  const std::size_t ahead = q8_prefetch_distance(w, n, prefetch);
  __m512d acc = _mm512_setzero_pd();
  const std::size_t step = xq.m;
  for (std::size_t b = 0, at = r; b < blocks; ++b, at += step) {  // at = xq.at(r, b)
    const std::size_t offset = b * q8_0_block_bytes;
    for (std::size_t c = 0; c < 8; ++c) __builtin_prefetch(rows[c] + ahead + offset);
    const __m512i x = _mm512_broadcast_i64x4(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq.q + at * q8_0_block_values)));
    __m512i z[4];
    for (std::size_t c = 0; c < 4; ++c)  // weight rows c and c + 4 in one vector
      z[c] = vnni_dot512(q8_unsigned(_mm512_inserti64x4(_mm512_castsi256_si512(q8_weights(rows[c] + offset)),
                                                        q8_weights(rows[c + 4] + offset), 1)),
                         x);
    // The products of w + 128 are the wanted ones plus 128 * (the block's sum of x).
    const __m256i s = _mm256_sub_epi32(sum_halves4(z[0], z[1], z[2], z[3]),
                                       _mm256_set1_epi32(128 * xq.sums[at]));
    const __m256 dw = q8_scales8(rows, offset);
    const __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(xq.d[at]));
    // double(s) * double(d) is exact: the fused add rounds as the plain one.
    acc = _mm512_fmadd_pd(_mm512_cvtepi32_pd(s), _mm512_cvtps_pd(d), acc);
  }
  alignas(32) float out[8];
  _mm256_store_ps(out, _mm512_cvtpd_ps(acc));
  for (std::size_t c = 0; c < cols; ++c) y[r * ldy + n + c] = out[c];
}

/// Activation rows r0 .. r0+2P-1 (P pairs) x 4 weight rows n .. n+cols-1
/// (cols <= 4): each weight block, loaded once into both halves of a
/// vector, meets two rows' blocks (side by side in xq) per vpdpbusd.
/// Prefetches `ahead` bytes past its rows (q8_prefetch_distance).
template <std::size_t P>
inline void q8_tile_vnni512_pairs(const QuantizedRows& xq, std::size_t r0, const WeightMatrix& w, std::size_t n,
                                  std::size_t cols, std::size_t ahead, float* y, std::size_t ldy) noexcept {
  const std::size_t blocks = xq.k / q8_0_block_values;
  const std::byte* rows[4];
  for (std::size_t c = 0; c < 4; ++c) rows[c] = w.row(n + std::min(c, cols - 1));
  __m512d acc[P];
  for (std::size_t p = 0; p < P; ++p) acc[p] = _mm512_setzero_pd();
  const std::size_t step = xq.m;
  for (std::size_t b = 0, at0 = r0; b < blocks; ++b, at0 += step) {  // at0 = xq.at(r0, b)
    const std::size_t offset = b * q8_0_block_bytes;
    for (std::size_t c = 0; c < 4; ++c) __builtin_prefetch(rows[c] + ahead + offset);
    __m512i wu[4];
    for (std::size_t c = 0; c < 4; ++c) wu[c] = q8_unsigned(_mm512_broadcast_i64x4(q8_weights(rows[c] + offset)));
    const __m128 dw4 = q8_scales4(rows, offset);
    const __m256 dw = _mm256_set_m128(dw4, dw4);
    for (std::size_t p = 0; p < P; ++p) {
      const std::size_t at = at0 + 2 * p;  // rows r0 + 2p and r0 + 2p + 1: at and at + 1
      const __m512i x = _mm512_loadu_si512(xq.q + at * q8_0_block_values);
      // Lanes 0..3: row r x weight rows 0..3; lanes 4..7: row r + 1.
      const __m256i raw = sum_halves4(vnni_dot512(wu[0], x), vnni_dot512(wu[1], x), vnni_dot512(wu[2], x),
                                      vnni_dot512(wu[3], x));
      const __m256i x_sums = _mm256_set_m128i(_mm_set1_epi32(xq.sums[at + 1]), _mm_set1_epi32(xq.sums[at]));
      const __m256i s = _mm256_sub_epi32(raw, _mm256_slli_epi32(x_sums, 7));
      const __m256 dx = _mm256_set_m128(_mm_set1_ps(xq.d[at + 1]), _mm_set1_ps(xq.d[at]));
      acc[p] = _mm512_fmadd_pd(_mm512_cvtepi32_pd(s), _mm512_cvtps_pd(_mm256_mul_ps(dw, dx)), acc[p]);
    }
  }
  for (std::size_t p = 0; p < P; ++p) {
    alignas(32) float out[8];
    _mm256_store_ps(out, _mm512_cvtpd_ps(acc[p]));
    for (std::size_t c = 0; c < cols; ++c) {
      y[(r0 + 2 * p) * ldy + n + c] = out[c];
      y[(r0 + 2 * p + 1) * ldy + n + c] = out[4 + c];
    }
  }
}

// ------------------------------------- 16 weight rows, transposed ----
//
// With several activation rows the tiles above spend most of their
// instructions after the products: each vpdpbusd yields per-lane partial
// sums of one (weight row, activation row) pair that sum_halves4 must then
// reduce across lanes, about 30 vector instructions per 2 x 4 block pair for
// 8 vpdpbusd. Transposed, the reduction disappears: 16 weight rows' blocks
// are rearranged in registers (24 shuffles) into 8 vectors whose lane j holds
// 4 consecutive bytes of row j, so that 8 vpdpbusd against one activation
// row's block, 4 bytes broadcast each, leave the 16 exact block sums in the
// 16 lanes. The shuffles are paid once per block for all activation rows.
// Every sum, scale product and double addition is the one the tiles above
// make, in block order, so the bits are the same (batch invariance holds
// whichever tile computes a row).

/// The transposed vectors' lane order: lane l holds weight row
/// q8_t16_lane_row[l] of the 16 (what the unpack/shuffle network leaves).
inline constexpr int q8_t16_lane_row[16] = {0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15};

/// sum + (w + 128 as unsigned bytes) . (x as signed bytes), 4-byte groups per lane.
inline __m512i vnni_dot512_add(__m512i sum, __m512i unsigned_w, __m512i x) noexcept {
  __asm__("vpdpbusd %2, %1, %0" : "+v"(sum) : "v"(unsigned_w), "v"(x));
  return sum;
}

/// The blocks at `block` (+ j * stride for row j) of 16 weight rows,
/// transposed: t[e] lane l = bytes 4e .. 4e+3 of row q8_t16_lane_row[l], as
/// w + 128.
inline void q8_t16_transpose(const std::byte* block, std::size_t stride, __m512i (&t)[8]) noexcept {
  __m512i z[8];  // z[j] = [row j | row j + 8], 8 dwords each
  for (std::size_t j = 0; j < 8; ++j)
    z[j] = _mm512_inserti64x4(_mm512_castsi256_si512(q8_weights(block + j * stride)),
                              q8_weights(block + (j + 8) * stride), 1);
  // Per 128-bit chunk, after the two unpack stages, v[g][e] holds dword e
  // (chunks 0, 2) and 4 + e (chunks 1, 3) of rows 4g .. 4g+3 (chunks 0, 1)
  // and 4g+8 .. 4g+11 (chunks 2, 3).
  __m512i v[2][4];
  for (std::size_t g = 0; g < 2; ++g) {
    const __m512i* q = z + 4 * g;
    const __m512i lo01 = _mm512_unpacklo_epi32(q[0], q[1]), hi01 = _mm512_unpackhi_epi32(q[0], q[1]);
    const __m512i lo23 = _mm512_unpacklo_epi32(q[2], q[3]), hi23 = _mm512_unpackhi_epi32(q[2], q[3]);
    v[g][0] = _mm512_unpacklo_epi64(lo01, lo23);
    v[g][1] = _mm512_unpackhi_epi64(lo01, lo23);
    v[g][2] = _mm512_unpacklo_epi64(hi01, hi23);
    v[g][3] = _mm512_unpackhi_epi64(hi01, hi23);
  }
  for (std::size_t e = 0; e < 4; ++e) {
    t[e] = q8_unsigned(_mm512_shuffle_i32x4(v[0][e], v[1][e], _MM_SHUFFLE(2, 0, 2, 0)));
    t[e + 4] = q8_unsigned(_mm512_shuffle_i32x4(v[0][e], v[1][e], _MM_SHUFFLE(3, 1, 3, 1)));
  }
}

/// The gather offsets of the 16 transposed weight rows' block starts (lane
/// l: row q8_t16_lane_row[l], rows `stride` bytes apart).
inline __m512i q8_t16_scale_offsets(std::size_t stride) noexcept {
  return _mm512_mullo_epi32(_mm512_loadu_si512(q8_t16_lane_row), _mm512_set1_epi32(static_cast<int>(stride)));
}

/// Each lane's binary16 weight scale: the low half of the dword that starts its row's block.
inline __m512 q8_t16_weight_scales(__m512i scale_offsets, const std::byte* block) noexcept {
  return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_i32gather_epi32(scale_offsets, block, 1)));
}

/// Adds one activation row's block to its 16 double accumulators: s, the
/// 16 block sums of w + 128 (unsigned) times x, less 128 * x_sum (the
/// block's sum of x), times float(d_w * d_x). double(s) * double(d) is
/// exact, so the fused add rounds as the plain one. Every tile over the
/// transposed weights scales this way, so a row's bits do not depend on
/// which one computed it.
inline void q8_t16_accumulate(__m512d (&acc)[2], __m512i s, __m512 dw, float dx, std::int32_t x_sum) noexcept {
  s = _mm512_sub_epi32(s, _mm512_set1_epi32(128 * x_sum));
  const __m512 d = _mm512_mul_ps(dw, _mm512_set1_ps(dx));
  acc[0] = _mm512_fmadd_pd(_mm512_cvtepi32_pd(_mm512_castsi512_si256(s)), _mm512_cvtps_pd(_mm512_castps512_ps256(d)),
                           acc[0]);
  acc[1] = _mm512_fmadd_pd(_mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(s, 1)),
                           _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(d), 1))), acc[1]);
}

/// A row's 16 accumulators, rounded to float, into y[0..15] in row order.
inline void q8_t16_store(const __m512d (&acc)[2], float* y) noexcept {
  // Both halves in one vector (insertf64x4: AVX-512 F, where insertf32x8 needs DQ).
  const __m512 lanes = _mm512_castpd_ps(_mm512_insertf64x4(
      _mm512_castps_pd(_mm512_castps256_ps512(_mm512_cvtpd_ps(acc[0]))), _mm256_castps_pd(_mm512_cvtpd_ps(acc[1])), 1));
  // Lanes [rows 0-3, 8-11, 4-7, 12-15] back into row order.
  _mm512_storeu_ps(y, _mm512_shuffle_f32x4(lanes, lanes, _MM_SHUFFLE(3, 1, 2, 0)));
}

/// Activation rows r0 .. r0+R-1 x weight rows n .. n+15 (all 16 written).
/// Prefetches `ahead` bytes past its rows (the first row group: the next 16
/// rows; 0, its own rows, for the others).
template <std::size_t R>
inline void q8_tile_vnni512_t16(const QuantizedRows& xq, std::size_t r0, const WeightMatrix& w, std::size_t n,
                                std::size_t ahead, float* y, std::size_t ldy) noexcept {
  const std::size_t blocks = xq.k / q8_0_block_values, stride = w.row_bytes();
  const std::byte* first = w.row(n);
  const __m512i scale_offsets = q8_t16_scale_offsets(stride);
  __m512d acc[R][2];
  for (std::size_t r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_pd();
  for (std::size_t b = 0, at0 = r0; b < blocks; ++b, at0 += xq.m) {  // at0 = xq.at(r0, b)
    const std::byte* block = first + b * q8_0_block_bytes;
    for (std::size_t j = 0; j < 16; ++j) __builtin_prefetch(block + j * stride + ahead);
    __m512i t[8];
    q8_t16_transpose(block, stride, t);
    const __m512 dw = q8_t16_weight_scales(scale_offsets, block);
    for (std::size_t r = 0; r < R; ++r) {
      const std::size_t at = at0 + r;
      const std::int8_t* xb = xq.q + at * q8_0_block_values;
      __m512i s = _mm512_setzero_si512();
      for (std::size_t e = 0; e < 8; ++e) {
        std::int32_t x4;
        std::memcpy(&x4, xb + 4 * e, 4);
        s = vnni_dot512_add(s, t[e], _mm512_set1_epi32(x4));
      }
      q8_t16_accumulate(acc[r], s, dw, xq.d[at], xq.sums[at]);
    }
  }
  for (std::size_t r = 0; r < R; ++r) q8_t16_store(acc[r], y + (r0 + r) * ldy + n);
}

/// Whether q8_columns_vnni512 takes the transposed 16-row tile: from 2
/// activation rows (one row is memory bound, and the 1 x 8 tile streams
/// with fewer instructions), and while the rows' offsets fit the gather's
/// 32-bit indices.
inline bool q8_t16_applies(std::size_t m, const WeightMatrix& w) noexcept {
  return m >= 2 && 15 * w.row_bytes() <= std::size_t{INT32_MAX};
}

/// Activation rows r0 .. m-1 x weight rows n .. n+15, 8 rows at a time (8 x
/// 2 double accumulators and the 8 weight vectors fill the 32 registers);
/// the first group prefetches the next 16 weight rows, the others find
/// these in L1 (or L2 when k is large).
inline void q8_columns_vnni512_t16(const QuantizedRows& xq, std::size_t m, const WeightMatrix& w, std::size_t n,
                                   float* y, std::size_t ldy, std::size_t r0 = 0) noexcept {
  const std::size_t ahead = n + 32 <= w.rows ? 16 * w.row_bytes() : 0;
  std::size_t r = r0;
  for (; r + 8 <= m; r += 8) q8_tile_vnni512_t16<8>(xq, r, w, n, r == r0 ? ahead : 0, y, ldy);
  const std::size_t a = r == r0 ? ahead : 0;
  switch (m - r) {
    case 0: break;
    case 1: q8_tile_vnni512_t16<1>(xq, r, w, n, a, y, ldy); break;
    case 2: q8_tile_vnni512_t16<2>(xq, r, w, n, a, y, ldy); break;
    case 3: q8_tile_vnni512_t16<3>(xq, r, w, n, a, y, ldy); break;
    case 4: q8_tile_vnni512_t16<4>(xq, r, w, n, a, y, ldy); break;
    case 5: q8_tile_vnni512_t16<5>(xq, r, w, n, a, y, ldy); break;
    case 6: q8_tile_vnni512_t16<6>(xq, r, w, n, a, y, ldy); break;
    default: q8_tile_vnni512_t16<7>(xq, r, w, n, a, y, ldy); break;
  }
}

/// q8_columns for AVX-512 with VNNI. From 2 activation rows, 16 weight rows
/// at a time transposed (above) while 16 remain. Else 8 weight rows at a
/// time; over them, rows in groups of 4 (two 4 x 4 tiles), then a pair, then
/// a single row (the 1 x 8 tile, also all of batch-1 decode).
inline void q8_columns_vnni512(const QuantizedRows& xq, std::size_t m, const WeightMatrix& w, std::size_t n0,
                               std::size_t n1, float* y, std::size_t ldy) noexcept {
  std::size_t n = n0;
  if (q8_t16_applies(m, w))
    for (; n + 16 <= n1; n += 16) q8_columns_vnni512_t16(xq, m, w, n, y, ldy);
  for (; n < n1; n += 8) {
    const std::size_t cols = std::min<std::size_t>(8, n1 - n);
    std::size_t r = 0;
    auto both_halves = [&](auto tile) {
      const std::size_t ahead = q8_prefetch_distance(w, n, r == 0);
      tile(n, std::min<std::size_t>(4, cols), ahead);
      if (cols > 4) tile(n + 4, cols - 4, ahead);
    };
    for (; r + 4 <= m; r += 4)
      both_halves([&](std::size_t n_tile, std::size_t c, std::size_t ahead) {
        q8_tile_vnni512_pairs<2>(xq, r, w, n_tile, c, ahead, y, ldy);
      });
    if (r + 2 <= m) {
      both_halves([&](std::size_t n_tile, std::size_t c, std::size_t ahead) {
        q8_tile_vnni512_pairs<1>(xq, r, w, n_tile, c, ahead, y, ldy);
      });
      r += 2;
    }
    if (r < m) q8_tile_vnni512_row(xq, r, w, n, cols, y, ldy, r == 0);
  }
}
#endif

template <class Arch, Int8Dot Dot, std::size_t R>
inline void q8_tile(const QuantizedRows& xq, std::size_t r0, const WeightMatrix& w, std::size_t n, std::size_t cols,
                    float* y, std::size_t ldy, bool prefetch) noexcept {
#if defined(__AVX2__)
  if constexpr (Dot != Int8Dot::generic) {
    q8_tile_avx2<Dot, R>(xq, r0, w, n, cols, y, ldy, prefetch);
    return;
  }
#endif
  static_assert(Dot == Int8Dot::generic || Simd<Arch>::avx2 || Simd<Arch>::avx512, "integer dot needs AVX2");
  q8_tile_generic<R>(xq, r0, w, n, cols, y, ldy, prefetch);
}

/// Weight rows [n0, n1) of w for all m quantized rows: 4 weight rows at a
/// time, every group of R rows over them (the weights from L1 after the first).
template <class Arch, Int8Dot Dot>
inline void q8_columns(const QuantizedRows& xq, std::size_t m, const WeightMatrix& w, std::size_t n0, std::size_t n1,
                       float* y, std::size_t ldy) noexcept {
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
  if constexpr (uses_vnni512(Dot)) {
    q8_columns_vnni512(xq, m, w, n0, n1, y, ldy);
    return;
  }
#endif
  constexpr std::size_t R = q8_tile_rows<Arch>;
  for (std::size_t n = n0; n < n1; n += q8_tile_cols) {
    const std::size_t cols = std::min(q8_tile_cols, n1 - n);
    std::size_t r = 0;
    for (; r + R <= m; r += R) q8_tile<Arch, Dot, R>(xq, r, w, n, cols, y, ldy, r == 0);
    for (; r < m; ++r) q8_tile<Arch, Dot, 1>(xq, r, w, n, cols, y, ldy, r == 0);
  }
}

/// Whether every output's weights are Q8_0 (the integer path takes a group
/// only whole, so that its outputs equal one matmul per weight).
inline bool all_q8_0(const MatmulOutput* outs, std::size_t count) noexcept {
  for (std::size_t i = 0; i < count; ++i)
    if (outs[i].weight->dtype != DType::q8_0) return false;
  return true;
}

/// q8_columns of one variant and dot product.
using Q8ColumnsFn = void (*)(const QuantizedRows& xq, std::size_t m, const WeightMatrix& w, std::size_t n0,
                             std::size_t n1, float* y, std::size_t ldy) noexcept;

/// matmul_group for Q8_0 weights and 1 to gemv_max_rows activation rows:
/// quantizes the rows once into the pool's shared scratch, then splits the
/// weight rows of all outputs over the threads (about 8 tasks per thread,
/// whole tiles each), each running `columns`. (A function pointer rather
/// than a template argument: the "avx512" tables with and without VNNI then
/// share one parallel_for instantiation, and GCC keeps inlining the pool's
/// run() into all of them; an out-of-line copy compiled with AVX-512 flags
/// is a symbol the linker could pick for the SSE2 path, see
/// test/kernels/check_variant_symbols.cmake.)
template <class Arch>
inline void q8_gemv_quantized(const float* x, std::size_t ldx, std::size_t m, const MatmulOutput* outs,
                              std::size_t count, ThreadPool& pool, Q8ColumnsFn columns) noexcept {
  const std::size_t k = outs[0].weight->cols;
  const std::size_t q_bytes = (m * k + 63) / 64 * 64;
  const std::size_t blocks = m * (k / q8_0_block_values);
  auto* scratch = static_cast<std::byte*>(pool.shared_scratch(q_bytes + blocks * (sizeof(float) + sizeof(std::int32_t))));
  auto* q = reinterpret_cast<std::int8_t*>(scratch);
  auto* d = reinterpret_cast<float*>(scratch + q_bytes);
  auto* sums = reinterpret_cast<std::int32_t*>(d + blocks);
  quantize_q8_rows(x, ldx, m, k, q, d, sums);
  const QuantizedRows xq{q, d, sums, k, m};
  std::size_t rows = 0;
  for (std::size_t i = 0; i < count; ++i) rows += outs[i].weight->rows;
  std::size_t chunk = (rows + pool.size() * 8 - 1) / (pool.size() * 8);
  chunk = std::max<std::size_t>(16, (chunk + 15) / 16 * 16);  // whole tiles of 4, 8 and 16 weight rows
  std::size_t first[matmul_group_max + 1] = {};
  for (std::size_t i = 0; i < count; ++i) first[i + 1] = first[i] + (outs[i].weight->rows + chunk - 1) / chunk;
  pool.parallel_for(first[count], [&](std::size_t task, std::size_t) {
    std::size_t i = 0;
    while (task >= first[i + 1]) ++i;
    const WeightMatrix& w = *outs[i].weight;
    const std::size_t n0 = (task - first[i]) * chunk;
    columns(xq, m, w, n0, std::min(w.rows, n0 + chunk), outs[i].y, outs[i].ldy);
  });
}

}  // namespace izwi::kernels::cpu::detail::inline IZWI_KERNELS_VARIANT
