#pragma once
// BF16 weights on AVX512_BF16's vdpbf16ps: matmul()'s path for BF16 weights
// from bf16_dot_min_rows (8) activation rows on (batched decode and
// prefill), in the "avx512" table of a CPU with AVX512_BF16 and without AMX
// (AMD Zen 4 and 5; dispatch.hpp, baseline.cpp). Instantiated through
// matmul_kernels.hpp by avx512.cpp only.
//
// Why: one vdpbf16ps zmm does 32 multiply-adds (16 lanes, a pair of bf16
// values each) where vfmadd231ps does 16, and it takes the weights as
// stored, with no widening instruction. On the AMD EPYC (Zen 5, AVX512_BF16,
// no AMX) of 2026-12-07 they issue at nearly the same rate (12 independent
// chains in registers, 1 thread, a timing loop run alone with the load not
// checked: 7.3 G vdpbf16ps/s against 8.1 G vfmadd231ps/s), so BF16's
// compute-bound products can run up to 1.8x as fast. On Sapphire Rapids vdpbf16ps issues at
// half that rate (matmul_amx_kernels.hpp); CPUs with AMX keep the AMX path,
// or the widening one when the OS withholds the tiles.
//
// Both paths round the activations to bf16 once per call (to nearest even,
// as core/half.hpp's f32_to_bf16, NaN kept), as the AMX path and llama.cpp
// do for BF16 weights: each result lies within 2^-8 * sum |x w| of the f32
// product; vdpbf16ps also treats bf16 subnormals (below 2^-126) as zero.
// A row's result does not depend on the other rows of the call.
//
// Up to gemv_max_rows rows (batched decode): the rows are rounded into
// scratch, padded with zeros to a multiple of 32 values. A register block of
// 4 activation rows x 4 weight rows keeps 16 accumulators over all of k; each
// step reads 32 values of each weight row in place (one cache line, masked
// past k) and prefetches the same line of the 4 rows that follow, as the
// widening batched GEMV does; the 16 sums are then reduced lane-wise
// (store_block_sums). The weights stream from memory once.
//
// More rows (prefill): the activations are packed once per block of `mr`
// rows as [k-pairs][mr] dwords (a pair: values 2p and 2p + 1 of one row);
// each task packs a panel of `nc` weight rows as [nc / nr sub-panels]
// [k-pairs][nr] dwords, a slice of pairs at a time so the transpose stays
// in L1; the micro-kernel keeps mr x 2 accumulators (nr = 32 output
// columns, one per lane), and per pair loads two weight vectors and
// broadcasts each row's pair. Each output is one chain over the pairs.
//
// vdpbf16ps is inline assembly, so avx512.cpp needs no -mavx512bf16 flag
// and the compiler emits no bf16 instruction anywhere else in it; only the
// table chosen on a CPU with AVX512_BF16 reaches this code. matmul_group
// (matmul_kernels.hpp) calls bf16_dot_matmul through the declaration there;
// variant_table.hpp includes this header for its definition.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "izwi/kernels/cpu/matmul.hpp"
#include "izwi/kernels/cpu/thread_pool.hpp"
#include "izwi/kernels/cpu/detail/matmul_amx_kernels.hpp"
#include "izwi/kernels/cpu/detail/matmul_kernels.hpp"
#include "izwi/kernels/cpu/detail/simd.hpp"

#if defined(__AVX512F__) && defined(__AVX512BW__)
#include <immintrin.h>
#endif

namespace izwi::kernels::cpu::detail::inline IZWI_KERNELS_VARIANT {

#if defined(__AVX512F__) && defined(__AVX512BW__)

namespace bf16dot {

inline constexpr std::size_t values = 32;    // bf16 values per vector
inline constexpr std::size_t block_rows = 4;  // batched decode: activation rows per register block
inline constexpr std::size_t block_cols = 4;  // and weight rows
inline constexpr std::size_t mr = 8;         // GEMM: activation rows per micro-kernel (16 accumulators)
inline constexpr std::size_t nr = 32;        // output columns per micro-kernel (two vectors)
inline constexpr std::size_t nc = 64;        // output columns per task (one packed panel)
inline constexpr std::size_t pack_pairs = 64;  // pairs per transpose slice of pack_panel

/// acc + the 16 lane-wise dot products of the bf16 pairs of a and b.
inline __m512 dot(__m512 acc, __m512i a, __m512i b) noexcept {
  __asm__("vdpbf16ps %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
  return acc;
}

/// 16 floats -> bf16 bits, rounded as the AMX path rounds them.
using amx::round_to_bf16;

/// Values [k0, k0 + 16) of row, rounded; zero past k.
inline __m256i rounded_values(const float* row, std::size_t k0, std::size_t k) noexcept {
  const std::size_t valid = k0 < k ? std::min<std::size_t>(16, k - k0) : 0;
  const auto mask = static_cast<__mmask16>((1u << valid) - 1u);
  return round_to_bf16(_mm512_maskz_loadu_ps(mask, valid != 0 ? row + k0 : row));
}

// ------------------------------------------------------ batched decode ----

/// Rows [0, m) of x rounded to bf16, row r at out + r * ld (ld a multiple of
/// 32 values, at least k), zero past k.
inline void round_rows(const float* x, std::size_t ldx, std::size_t m, std::size_t k, std::uint16_t* out,
                       std::size_t ld) noexcept {
  for (std::size_t r = 0; r < m; ++r)
    for (std::size_t k0 = 0; k0 < ld; k0 += 16)
      _mm256_store_si256(reinterpret_cast<__m256i*>(out + r * ld + k0), rounded_values(x + r * ldx, k0, k));
}

/// R rounded rows x weight rows n .. n+cols-1 (cols <= C) over all of k;
/// prefetches the C rows that follow when `prefetch` (the first rows over
/// these weights).
template <class Arch, std::size_t R, std::size_t C>
inline void decode_block(const std::uint16_t* xb, std::size_t ldb, const WeightMatrix& w, std::size_t n,
                         std::size_t cols, float* y, std::size_t ldy, bool prefetch) noexcept {
  using vec = typename Simd<Arch>::vec;
  const std::size_t k = w.cols;
  const std::byte* rows[C];
  const std::byte* next[C];
  block_weight_rows<C>(w, n, cols, prefetch, rows, next);
  __m512 acc[R][C];
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
  // The main loop is written out, without a lambda for its step: with one,
  // GCC kept the accumulators in memory (664 against 458 us, docs/kernels.md);
  // the masked tail past the last 32 values follows it.
  std::size_t i = 0;
  for (; i + values <= k; i += values) {
    for (std::size_t c = 0; c < C; ++c) __builtin_prefetch(next[c] + 2 * i);
    __m512i xv[R];
    for (std::size_t r = 0; r < R; ++r) xv[r] = _mm512_load_si512(xb + r * ldb + i);
    for (std::size_t c = 0; c < C; ++c) {
      const __m512i wv = _mm512_loadu_si512(rows[c] + 2 * i);
      for (std::size_t r = 0; r < R; ++r) acc[r][c] = dot(acc[r][c], xv[r], wv);
    }
  }
  if (i < k) {  // the rounded rows are zero there too
    const auto mask = static_cast<__mmask32>((std::uint64_t{1} << (k - i)) - 1);
    for (std::size_t c = 0; c < C; ++c) {
      const __m512i wv = _mm512_maskz_loadu_epi16(mask, rows[c] + 2 * i);
      for (std::size_t r = 0; r < R; ++r) acc[r][c] = dot(acc[r][c], _mm512_load_si512(xb + r * ldb + i), wv);
    }
  }
  vec sums[R][C];
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t c = 0; c < C; ++c) sums[r][c] = acc[r][c];
  store_block_sums<Arch, R, C>(sums, y + n, ldy, cols, true);
}

template <class Arch>
inline void decode_columns(const std::uint16_t* xb, std::size_t ldb, std::size_t m, const WeightMatrix& w,
                           std::size_t n0, std::size_t n1, float* y, std::size_t ldy) noexcept {
  constexpr std::size_t R = block_rows, C = block_cols;
  for (std::size_t n = n0; n < n1; n += C) {
    const std::size_t cols = std::min(C, n1 - n);
    std::size_t r = 0;
    for (; r + R <= m; r += R) decode_block<Arch, R, C>(xb + r * ldb, ldb, w, n, cols, y + r * ldy, ldy, r == 0);
    const std::uint16_t* xr = xb + r * ldb;
    float* yr = y + r * ldy;
    switch (m - r) {
      case 1: decode_block<Arch, 1, C>(xr, ldb, w, n, cols, yr, ldy, r == 0); break;
      case 2: decode_block<Arch, 2, C>(xr, ldb, w, n, cols, yr, ldy, r == 0); break;
      case 3: decode_block<Arch, 3, C>(xr, ldb, w, n, cols, yr, ldy, r == 0); break;
      default: break;
    }
  }
}

template <class Arch>
inline void decode(const float* x, std::size_t ldx, std::size_t m, const MatmulOutput* outs, std::size_t count,
                   ThreadPool& pool) noexcept {
  const std::size_t k = outs[0].weight->cols;
  const std::size_t ldb = (k + values - 1) / values * values;
  auto* xb = static_cast<std::uint16_t*>(pool.shared_scratch(m * ldb * sizeof(std::uint16_t)));
  round_rows(x, ldx, m, k, xb, ldb);
  // About 8 tasks per thread over all outputs, whole register blocks of columns.
  std::size_t chunk = (total_rows(outs, count) + pool.size() * 8 - 1) / (pool.size() * 8);
  chunk = std::max<std::size_t>(4 * block_cols, (chunk + block_cols - 1) / block_cols * block_cols);
  const GroupTasks tasks(outs, count, chunk);
  pool.parallel_for(tasks.total(), [&](std::size_t task, std::size_t) {
    const auto [out, n0, n1] = tasks.range(task);
    decode_columns<Arch>(xb, ldb, m, *out->weight, n0, n1, out->y, out->ldy);
  });
}

// ---------------------------------------------------------------- GEMM ----

/// Activation rows [r0, r0 + mr) rounded and packed as [pairs][mr] dwords
/// (rows past m and values past k zero).
inline void pack_row_pairs(const float* x, std::size_t ldx, std::size_t m, std::size_t k, std::size_t r0,
                           std::size_t pairs, std::uint32_t* packed) noexcept {
  alignas(64) std::uint32_t chunk[16];  // 16 pairs of one row
  for (std::size_t r = 0; r < mr; ++r) {
    if (r0 + r >= m) {
      for (std::size_t p = 0; p < pairs; ++p) packed[p * mr + r] = 0;
      continue;
    }
    const float* row = x + (r0 + r) * ldx;
    for (std::size_t p0 = 0; p0 < pairs; p0 += 16) {
      _mm256_store_si256(reinterpret_cast<__m256i*>(chunk), rounded_values(row, 2 * p0, k));
      _mm256_store_si256(reinterpret_cast<__m256i*>(chunk) + 1, rounded_values(row, 2 * p0 + 16, k));
      for (std::size_t p = p0; p < std::min(pairs, p0 + 16); ++p) packed[p * mr + r] = chunk[p - p0];
    }
  }
}

/// Weight rows [n0, n0 + nc) as [nc / nr sub-panels][pairs][nr] dwords: the
/// pair p of row j is its values 2p and 2p + 1 (the second zero when k is
/// odd); rows past the matrix are zero.
inline void pack_panel(const WeightMatrix& w, std::size_t n0, std::size_t pairs, std::uint32_t* panel) noexcept {
  const std::size_t k = w.cols, whole = k / 2;
  for (std::size_t p0 = 0; p0 < pairs; p0 += pack_pairs) {
    const std::size_t p1 = std::min(pairs, p0 + pack_pairs);
    for (std::size_t j = 0; j < nc; ++j) {
      std::uint32_t* dst = panel + (j / nr) * pairs * nr + j % nr;
      if (n0 + j >= w.rows) {
        for (std::size_t p = p0; p < p1; ++p) dst[p * nr] = 0;
        continue;
      }
      const std::byte* row = w.row(n0 + j);
      const std::size_t stop = std::min(p1, whole);
      for (std::size_t p = p0; p < stop; ++p) std::memcpy(dst + p * nr, row + 4 * p, 4);
      if (stop < p1) {  // k odd: the last pair holds one value
        std::uint16_t last;
        std::memcpy(&last, row + 2 * (k - 1), 2);
        dst[whole * nr] = last;
      }
    }
  }
}

/// rows x cols (<= mr x nr) of y from mr packed rows and one sub-panel, both `pairs` deep.
inline void micro(const std::uint32_t* xp, std::size_t pairs, const std::uint32_t* sub, float* y, std::size_t ldy,
                  std::size_t rows, std::size_t cols) noexcept {
  __m512 acc[mr][2];
  for (std::size_t r = 0; r < mr; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (std::size_t p = 0; p < pairs; ++p) {
    const __m512i b0 = _mm512_load_si512(sub + p * nr), b1 = _mm512_load_si512(sub + p * nr + 16);
    for (std::size_t r = 0; r < mr; ++r) {
      const __m512i a = _mm512_set1_epi32(static_cast<int>(xp[p * mr + r]));
      acc[r][0] = dot(acc[r][0], a, b0);
      acc[r][1] = dot(acc[r][1], a, b1);
    }
  }
  const auto low = static_cast<__mmask16>(cols >= 16 ? 0xffffu : (1u << cols) - 1u);
  const auto high = static_cast<__mmask16>(cols >= 32 ? 0xffffu : cols > 16 ? (1u << (cols - 16)) - 1u : 0u);
  for (std::size_t r = 0; r < rows; ++r) {
    _mm512_mask_storeu_ps(y + r * ldy, low, acc[r][0]);
    _mm512_mask_storeu_ps(y + r * ldy + 16, high, acc[r][1]);
  }
}

inline void gemm(const float* x, std::size_t ldx, std::size_t m, const MatmulOutput* outs, std::size_t count,
                 ThreadPool& pool) noexcept {
  const std::size_t k = outs[0].weight->cols, pairs = (k + 1) / 2;
  const std::size_t row_blocks = (m + mr - 1) / mr;
  auto* xp = static_cast<std::uint32_t*>(pool.shared_scratch(row_blocks * mr * pairs * sizeof(std::uint32_t)));
  pool.parallel_for(row_blocks, [&](std::size_t b, std::size_t) {
    pack_row_pairs(x, ldx, m, k, b * mr, pairs, xp + b * mr * pairs);
  });
  const GroupTasks tasks(outs, count, nc);
  pool.parallel_for(tasks.total(), [&](std::size_t task, std::size_t worker) {
    const auto [out, n0, n1] = tasks.range(task);
    auto* panel = static_cast<std::uint32_t*>(pool.scratch(worker, nc * pairs * sizeof(std::uint32_t)));
    pack_panel(*out->weight, n0, pairs, panel);
    const std::size_t cols = n1 - n0;
    for (std::size_t b = 0; b < row_blocks; ++b)
      for (std::size_t j = 0; j < cols; j += nr)
        micro(xp + b * mr * pairs, pairs, panel + (j / nr) * pairs * nr, out->y + b * mr * out->ldy + n0 + j,
              out->ldy, std::min(mr, m - b * mr), std::min(nr, cols - j));
  });
}

}  // namespace bf16dot

template <class Arch>
inline void bf16_dot_matmul(const float* x, std::size_t ldx, std::size_t m, const MatmulOutput* outs,
                            std::size_t count, ThreadPool& pool) noexcept {
  static_assert(Simd<Arch>::avx512, "the vdpbf16ps path is built in the AVX-512 variant only");
  if (m <= gemv_max_rows) bf16dot::decode<Arch>(x, ldx, m, outs, count, pool);
  else bf16dot::gemm(x, ldx, m, outs, count, pool);
}

#endif  // AVX-512

}  // namespace izwi::kernels::cpu::detail::inline IZWI_KERNELS_VARIANT
