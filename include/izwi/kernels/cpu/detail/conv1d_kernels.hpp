#pragma once
// The kernels of izwi/kernels/cpu/conv1d.hpp, written once over the SIMD
// architecture (see simd.hpp); reached through dispatch.hpp.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>


#include "izwi/kernels/cpu/conv1d.hpp"
#include "izwi/kernels/cpu/detail/matmul_bf16_dot_kernels.hpp"
#include "izwi/kernels/cpu/detail/matmul_kernels.hpp"
#include "izwi/kernels/cpu/detail/simd.hpp"
#include "izwi/kernels/cpu/thread_pool.hpp"

namespace izwi::kernels::cpu::detail::inline IZWI_KERNELS_VARIANT {

/// sin²(v) of every lane. Vector path: v = q·π + r with q = round(v / π) and
/// π split in three floats (the first two of 12 significant bits, so q·P1
/// and q·P2 are exact while |q| < 4096), then sin r by its Taylor series to
/// r¹¹ (|r| <= π/2: truncation below 6e-8). sin² ignores the sign (-1)^q. Lanes
/// beyond |v| = 8000 (never in a decoder, whose activations stay small) take
/// libm's sine. (xsimd's own sin would do, but its large-argument reduction
/// brings static tables that are shared inline symbols outside the variant
/// namespace: see docs/kernels.md, "One definition per architecture".)
template <class Arch>
inline typename Simd<Arch>::vec sin_squared_each(typename Simd<Arch>::vec v) noexcept {
  using S = Simd<Arch>;
  if constexpr (std::is_same_v<Arch, ScalarArch>) {
    const float s = std::sin(v);
    return s * s;
  } else {
    constexpr float limit = 8000.0f;
    if (xsimd::any(xsimd::abs(v) > S::broadcast(limit))) {
      alignas(64) float lanes[S::lanes];
      S::store(lanes, v);
      for (float& x : lanes) x = std::sin(x) * std::sin(x);
      return S::load(lanes);
    }
    constexpr float inv_pi = 0.318309886183790671538f;
    constexpr float p1 = 3.140625f, p2 = 0.0009675025939941406f, p3 = 1.5099580252808664e-07f;
    const auto q = xsimd::nearbyint(v * S::broadcast(inv_pi));
    auto r = S::fma(q, S::broadcast(-p1), v);
    r = S::fma(q, S::broadcast(-p2), r);
    r = S::fma(q, S::broadcast(-p3), r);
    const auto r2 = r * r;
    // sin r = r·(1 - r²/3! + r⁴/5! - r⁶/7! + r⁸/9! - r¹⁰/11!), Horner in r².
    auto poly = S::broadcast(-1.0f / 39916800.0f);
    poly = S::fma(poly, r2, S::broadcast(1.0f / 362880.0f));
    poly = S::fma(poly, r2, S::broadcast(-1.0f / 5040.0f));
    poly = S::fma(poly, r2, S::broadcast(1.0f / 120.0f));
    poly = S::fma(poly, r2, S::broadcast(-1.0f / 6.0f));
    const auto sin_r = S::fma(poly * r2, r, r);
    return sin_r * sin_r;
  }
}

template <class Arch>
inline void snake_beta(const float* x, float* y, std::size_t rows, std::size_t channels, const float* bias,
                       const float* alpha_exp, const float* inv_beta) noexcept {
  using S = Simd<Arch>;
  constexpr std::size_t L = S::lanes;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * channels;
    float* yr = y + r * channels;
    std::size_t c = 0;
    for (; c + L <= channels; c += L) {
      auto v = S::load(xr + c);
      if (bias != nullptr) v = v + S::load(bias + c);
      S::store(yr + c, S::fma(S::load(inv_beta + c), sin_squared_each<Arch>(v * S::load(alpha_exp + c)), v));
    }
    for (; c < channels; ++c) {
      const float v = bias != nullptr ? xr[c] + bias[c] : xr[c];
      const float s = std::sin(v * alpha_exp[c]);
      yr[c] = v + inv_beta[c] * (s * s);
    }
  }
}

template <class Arch>
inline void transposed_conv_overlap_add(const float* products, std::size_t n, std::size_t kernel, std::size_t stride,
                                        std::size_t channels, const float* carry_in, const float* bias,
                                        std::size_t row_begin, std::size_t row_end, float* out,
                                        float* carry_out) noexcept {
  using S = Simd<Arch>;
  constexpr std::size_t L = S::lanes;
  const std::size_t emitted = n * stride, carried = kernel - stride;
  for (std::size_t u = row_begin; u < row_end; ++u) {
    const bool is_output = u < emitted;
    float* dst = is_output ? out + u * channels : carry_out + (u - emitted) * channels;
    const float* carry = u < carried ? carry_in + u * channels : nullptr;
    const float* add_bias = is_output ? bias : nullptr;
    // Taps reaching row u: t·S + j == u with 0 <= j < K, 0 <= t < n.
    const std::size_t t_first = u + 1 > kernel ? (u + 1 - kernel + stride - 1) / stride : 0;
    const std::size_t t_end = std::min(n, u / stride + 1);
    std::size_t c = 0;
    for (; c + L <= channels; c += L) {
      auto acc = carry != nullptr ? S::load(carry + c) : S::zero();
      for (std::size_t t = t_first; t < t_end; ++t)
        acc = acc + S::load(products + (t * kernel + (u - t * stride)) * channels + c);
      if (add_bias != nullptr) acc = acc + S::load(add_bias + c);
      S::store(dst + c, acc);
    }
    for (; c < channels; ++c) {
      float acc = carry != nullptr ? carry[c] : 0.0f;
      for (std::size_t t = t_first; t < t_end; ++t) acc += products[(t * kernel + (u - t * stride)) * channels + c];
      if (add_bias != nullptr) acc += add_bias[c];
      dst[c] = acc;
    }
  }
}

#if defined(__AVX512F__)
/// Columns [c, c + 16) of 8 rows into packed[(c + i) * 8 + r]: the [k][8]
/// layout of a row block, by a three-stage butterfly of two-source permutes
/// (pairs of rows, then quads, then all eight) instead of 128 scalar stores.
inline void transpose_8x16_avx512(const float* const* rows, std::size_t c, float* packed) noexcept {
  __m512 v[8], t[8], u[2][2][2];
  for (int r = 0; r < 8; ++r) v[r] = _mm512_loadu_ps(rows[r] + c);
  // t[2q + h]: rows 2q, 2q+1 interleaved, columns 8h .. 8h+7.
  const __m512i pair_lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i pair_hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  for (int q = 0; q < 4; ++q) {
    t[2 * q] = _mm512_permutex2var_ps(v[2 * q], pair_lo, v[2 * q + 1]);
    t[2 * q + 1] = _mm512_permutex2var_ps(v[2 * q], pair_hi, v[2 * q + 1]);
  }
  // u[h][g][x]: rows 4g .. 4g+3 per column, columns 8h + 4x .. 8h + 4x + 3.
  const __m512i quad_lo = _mm512_setr_epi32(0, 1, 16, 17, 2, 3, 18, 19, 4, 5, 20, 21, 6, 7, 22, 23);
  const __m512i quad_hi = _mm512_setr_epi32(8, 9, 24, 25, 10, 11, 26, 27, 12, 13, 28, 29, 14, 15, 30, 31);
  for (int h = 0; h < 2; ++h)
    for (int g = 0; g < 2; ++g) {
      u[h][g][0] = _mm512_permutex2var_ps(t[4 * g + h], quad_lo, t[4 * g + 2 + h]);
      u[h][g][1] = _mm512_permutex2var_ps(t[4 * g + h], quad_hi, t[4 * g + 2 + h]);
    }
  // Two columns of all eight rows per store.
  const __m512i all_lo = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
  const __m512i all_hi = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
  for (int h = 0; h < 2; ++h)
    for (int x = 0; x < 2; ++x) {
      float* dst = packed + static_cast<std::size_t>(8 * h + 4 * x) * 8;
      _mm512_storeu_ps(dst, _mm512_permutex2var_ps(u[h][0][x], all_lo, u[h][1][x]));
      _mm512_storeu_ps(dst + 16, _mm512_permutex2var_ps(u[h][0][x], all_hi, u[h][1][x]));
    }
}
#endif

/// Packs the im2col rows [m0, m0 + MR) of a causal convolution as pack_rows
/// packs activation rows ([k][MR], rows past m zero): the row of output r is
/// its taps' input rows back to back, read where they lie.
template <class Arch>
inline void pack_tap_rows(const float* const* taps, std::size_t m, std::size_t kernel, std::size_t in,
                          std::size_t m0, float* packed) noexcept {
  constexpr std::size_t MR = GemmShape<Arch>::mr;
  const std::size_t k = kernel * in;
#if defined(__AVX512F__)
  if constexpr (Simd<Arch>::avx512 && MR == 8) {
    if (m0 + MR <= m) {  // a full block: 16 columns of its 8 rows at a time
      const float* rows[MR];
      for (std::size_t j = 0; j < kernel; ++j) {
        for (std::size_t r = 0; r < MR; ++r) rows[r] = taps[(m0 + r) * kernel + j];
        float* dst = packed + j * in * MR;
        std::size_t c = 0;
        for (; c + 16 <= in; c += 16) transpose_8x16_avx512(rows, c, dst + c * MR);
        for (; c < in; ++c)
          for (std::size_t r = 0; r < MR; ++r) dst[c * MR + r] = rows[r][c];
      }
      return;
    }
  }
#endif
  for (std::size_t r = 0; r < MR; ++r) {
    if (m0 + r >= m) {
      for (std::size_t kk = 0; kk < k; ++kk) packed[kk * MR + r] = 0.0f;
      continue;
    }
    for (std::size_t j = 0; j < kernel; ++j) {
      const float* row = taps[(m0 + r) * kernel + j];
      float* dst = packed + j * in * MR + r;
      for (std::size_t c = 0; c < in; ++c) dst[c * MR] = row[c];
    }
  }
}

/// Rows of one conv1d_gemm pass: the packed rows stay near 16 MB (and,
/// without GemmPanels, the weights are packed once per pass and panel slice,
/// cheap beside the pass's FLOPs at 512 rows or more).
inline constexpr std::size_t conv1d_pass_floats = std::size_t{1} << 22;

/// Packs w into GemmPanels' layout (conv1d.hpp): panel p (output columns
/// [64p, 64p + 64), zero past w.rows) at p * 64 * w.cols, as sub-panels of
/// 32 columns [k][32]. Like pack_panel, a pack_depth slice of each row is
/// widened into an L1 buffer and transposed from there. Every variant packs
/// the same floats (widening is exact) and reads them: its micro-kernel's nr
/// columns divide the 32 of a sub-panel.
template <class Arch>
inline void pack_gemm_panels(const WeightMatrix& w, float* panels) noexcept {
  using G = GemmShape<Arch>;
  constexpr std::size_t NC = gemm_panel_columns, SUB = gemm_panel_sub_columns;
  static_assert(G::nc == NC && SUB % G::nr == 0 && NC % SUB == 0);
  alignas(64) float buffer[NC * G::pack_depth];
  const std::size_t k = w.cols;
  for (std::size_t n0 = 0; n0 < w.rows; n0 += NC) {
    float* panel = panels + n0 * k;
    for (std::size_t k0 = 0; k0 < k; k0 += G::pack_depth) {
      const std::size_t depth = std::min(G::pack_depth, k - k0);
      for (std::size_t j = 0; j < NC; ++j) {
        float* dst = buffer + j * G::pack_depth;
        if (n0 + j < w.rows) widen_row<Arch>(w, n0 + j, k0, depth, dst);
        else std::fill(dst, dst + depth, 0.0f);
      }
      for (std::size_t j = 0; j < NC; j += SUB) {
        float* sub = panel + (j / SUB) * k * SUB + k0 * SUB;
        for (std::size_t kk = 0; kk < depth; ++kk)
          for (std::size_t c = 0; c < SUB; ++c) sub[kk * SUB + c] = buffer[(j + c) * G::pack_depth + kk];
      }
    }
  }
}

/// y[r][o] for rows [r0, r1) and every o < w.rows, each the dot product of
/// output r's taps with weight row o: per tap, lane-wise partial sums over
/// the channels' whole vectors, the lanes reduced and the tail channels added
/// in order, then the taps' sums added in order. One fixed order per element,
/// whatever the rows or the split.
template <class Arch>
inline void conv1d_dot_rows(const float* const* taps, std::size_t r0, std::size_t r1, std::size_t kernel,
                            std::size_t in, const WeightMatrix& w, float* weights_f32, float* y,
                            std::size_t ldy) noexcept {
  using S = Simd<Arch>;
  constexpr std::size_t L = S::lanes;
  for (std::size_t o = 0; o < w.rows; ++o) {
    widen_row<Arch>(w, o, weights_f32);
    for (std::size_t r = r0; r < r1; ++r) {
      float total = 0.0f;
      for (std::size_t j = 0; j < kernel; ++j) {
        const float* x = taps[r * kernel + j];
        const float* wj = weights_f32 + j * in;
        auto acc = S::zero();
        std::size_t c = 0;
        for (; c + L <= in; c += L) acc = S::fma(S::load(x + c), S::load(wj + c), acc);
        float tap = S::sum(acc);
        for (; c < in; ++c) tap += x[c] * wj[c];
        total += tap;
      }
      y[r * ldy + o] = total;
    }
  }
}

template <class Arch>
inline void conv1d_dot(const float* const* taps, std::size_t m, std::size_t kernel, std::size_t in,
                       const WeightMatrix& w, float* y, std::size_t ldy, ThreadPool& pool) noexcept {
  const std::size_t rows_per_task = 256, tasks = (m + rows_per_task - 1) / rows_per_task;
  pool.parallel_for(tasks, [&](std::size_t task, std::size_t worker) {
    auto* weights_f32 = static_cast<float*>(pool.scratch(worker, kernel * in * sizeof(float)));
    conv1d_dot_rows<Arch>(taps, task * rows_per_task, std::min(m, (task + 1) * rows_per_task), kernel, in, w,
                          weights_f32, y, ldy);
  });
}

template <class Arch>
inline void conv1d_gemm(const float* const* taps, std::size_t m, std::size_t kernel, std::size_t in,
                        const WeightMatrix& w, const float* packed, float* y, std::size_t ldy,
                        ThreadPool& pool) noexcept {
  using G = GemmShape<Arch>;
  const std::size_t k = kernel * in, n = w.rows;
  if (m == 0 || n == 0) return;
  if (n <= conv1d_dot_max_outputs) {
    conv1d_dot<Arch>(taps, m, kernel, in, w, y, ldy, pool);
    return;
  }
  const std::size_t panels = (n + G::nc - 1) / G::nc;
  const std::size_t pass_rows = std::max<std::size_t>(512, conv1d_pass_floats / k) / G::mr * G::mr;
  auto* xp = static_cast<float*>(pool.shared_scratch(std::min(pass_rows, (m + G::mr - 1) / G::mr * G::mr) * k *
                                                     sizeof(float)));
  for (std::size_t first = 0; first < m; first += pass_rows) {
    const std::size_t rows = std::min(pass_rows, m - first), blocks = (rows + G::mr - 1) / G::mr;
    pool.parallel_for(blocks, [&](std::size_t b, std::size_t) {
      pack_tap_rows<Arch>(taps + first * kernel, rows, kernel, in, b * G::mr, xp + b * G::mr * k);
    });
    // Tasks: a panel of output columns x a slice of the row blocks, enough of
    // them for every thread even when the layer has one or two panels.
    const std::size_t slices = std::clamp<std::size_t>((4 * pool.size() + panels - 1) / panels, 1, blocks);
    pool.parallel_for(panels * slices, [&](std::size_t task, std::size_t worker) {
      const std::size_t p = task / slices, slice = task % slices;
      const std::size_t n0 = p * G::nc, cols = std::min(G::nc, n - n0);
      const std::size_t b0 = slice * blocks / slices, b1 = (slice + 1) * blocks / slices;
      if (packed != nullptr) {  // GemmPanels: sub-panels of 32 columns, nr of them at a time
        constexpr std::size_t SUB = gemm_panel_sub_columns;
        const float* panel = packed + n0 * k;
        for (std::size_t b = b0; b < b1; ++b)
          for (std::size_t j = 0; j < cols; j += G::nr)
            gemm_micro<Arch, SUB>(xp + b * G::mr * k, k, panel + (j / SUB) * k * SUB + j % SUB,
                                  y + (first + b * G::mr) * ldy + n0 + j, ldy, std::min(G::mr, rows - b * G::mr),
                                  std::min(G::nr, cols - j), false);
        return;
      }
      float* panel = static_cast<float*>(pool.scratch(worker, (G::nc * k + G::nc * G::pack_depth) * sizeof(float)));
      pack_panel<Arch>(w, n0, panel, panel + G::nc * k);
      for (std::size_t b = b0; b < b1; ++b)
        for (std::size_t j = 0; j < cols; j += G::nr)
          gemm_micro<Arch>(xp + b * G::mr * k, k, panel + (j / G::nr) * k * G::nr, y + (first + b * G::mr) * ldy + n0 + j,
                           ldy, std::min(G::mr, rows - b * G::mr), std::min(G::nr, cols - j), false);
    });
  }
}

// ------------------------------------------- bf16 on AMX (codec GEMM) ----

/// float -> bf16 bits, to nearest even, NaN kept quiet: core/half.hpp's
/// f32_to_bf16, restated here so the variant objects define no inline
/// function outside their namespace (check_variant_symbols.cmake).
inline std::uint16_t round_to_bf16_bits(float value) noexcept {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
  return static_cast<std::uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

/// GemmPanels::bf16's tile layout (conv1d.hpp): panel p (output columns
/// [64p, 64p + 64)) at p · k_blocks · 4 · 512 bf16, its B tile (kb, t) at
/// (kb · 4 + t) · 512: row q of the tile is the k-pairs (2q, 2q + 1) of
/// values [32kb, 32kb + 32) of columns 64p + 16t + c, c < 16 (amx::pack_panel's
/// layout, zero past the matrix and past k). Every value rounded to nearest
/// even from its exact f32 widening: the same bits whatever the caller.
template <class Arch>
inline void pack_gemm_panels_bf16(const WeightMatrix& w, std::uint16_t* panels) noexcept {
  constexpr std::size_t TK = 32, TR = 16, TV = 512, NC = 64;
  const std::size_t k = w.cols, k_blocks = (k + TK - 1) / TK;
  std::fill(panels, panels + (w.rows + NC - 1) / NC * k_blocks * (NC / TR) * TV, std::uint16_t{0});
  std::vector<float> row(k);
  for (std::size_t n = 0; n < w.rows; ++n) {
    widen_row<Arch>(w, n, row.data());
    std::uint16_t* panel = panels + n / NC * k_blocks * (NC / TR) * TV;
    const std::size_t t = n % NC / TR, c = n % TR;
    for (std::size_t kk = 0; kk < k; ++kk)
      panel[(kk / TK * (NC / TR) + t) * TV + kk % TK / 2 * TK + 2 * c + kk % 2] = round_to_bf16_bits(row[kk]);
  }
}

#if defined(__AVX512F__) && defined(__AVX512BW__)
/// Rows [r0, r0 + 16) of the implicit im2col matrix (rows past m zero) as A
/// tiles, k_blocks of them: 16 values at a time from one tap's row when they
/// lie in it, gathered otherwise; rounded as amx::round_to_bf16.
inline void pack_tap_rows_bf16(const float* const* taps, std::size_t m, std::size_t kernel, std::size_t in,
                               std::size_t r0, std::size_t k_blocks, std::uint16_t* tiles) noexcept {
  using namespace amx;
  const std::size_t k = kernel * in;
  alignas(64) float gathered[16];
  for (std::size_t r = 0; r < tile_rows; ++r) {
    const bool present = r0 + r < m;
    for (std::size_t k0 = 0; k0 < k_blocks * tile_k; k0 += 16) {
      std::uint16_t* dst = tiles + k0 / tile_k * tile_values + r * tile_k + k0 % tile_k;
      const std::size_t valid = present && k0 < k ? std::min<std::size_t>(16, k - k0) : 0;
      __m512 v = _mm512_setzero_ps();
      if (valid != 0 && k0 % in + valid <= in) {
        const __mmask16 mask = static_cast<__mmask16>((1u << valid) - 1u);
        v = _mm512_maskz_loadu_ps(mask, taps[(r0 + r) * kernel + k0 / in] + k0 % in);
      } else if (valid != 0) {
        for (std::size_t i = 0; i < 16; ++i)
          gathered[i] = i < valid ? taps[(r0 + r) * kernel + (k0 + i) / in][(k0 + i) % in] : 0.0f;
        v = _mm512_load_ps(gathered);
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), round_to_bf16(v));
    }
  }
}

/// The two bf16 codec GEMMs' passes: the im2col rows packed as A tiles
/// (pack_tap_rows_bf16), an even number of 16-row blocks per pass (about
/// conv1d_pass_floats values, at least 32 blocks), then
/// multiply(tiles, blocks, first row, rows) for the pass.
template <class MultiplyPass>
inline void for_each_bf16_pass(const float* const* taps, std::size_t m, std::size_t kernel, std::size_t in,
                               ThreadPool& pool, MultiplyPass&& multiply) noexcept {
  using namespace amx;
  const std::size_t k_blocks = (kernel * in + tile_k - 1) / tile_k, block_values = k_blocks * tile_values;
  const std::size_t pass_blocks = std::max<std::size_t>(32, conv1d_pass_floats / 2 / block_values) / 2 * 2;
  const std::size_t all_blocks = (m + tile_rows - 1) / tile_rows;
  auto* xa = static_cast<std::uint16_t*>(
      pool.shared_scratch(std::min(pass_blocks, all_blocks) * block_values * sizeof(std::uint16_t)));
  for (std::size_t first_block = 0; first_block < all_blocks; first_block += pass_blocks) {
    const std::size_t blocks = std::min(pass_blocks, all_blocks - first_block), first = first_block * tile_rows;
    const std::size_t rows = std::min(blocks * tile_rows, m - first);
    pool.parallel_for(blocks, [&](std::size_t b, std::size_t) {
      pack_tap_rows_bf16(taps + first * kernel, rows, kernel, in, b * tile_rows, k_blocks, xa + b * block_values);
    });
    multiply(static_cast<const std::uint16_t*>(xa), blocks, first, rows);
  }
}

/// conv1d.hpp's conv1d_gemm_bf16: the row blocks packed as A tiles per pass
/// (as conv1d_gemm packs its rows), then tasks of a 64-column panel x a slice
/// of the row blocks, 2 x 2 tiles (1 x 2 for a lone last block) per 32 values
/// of k. Each output is its row's tile products accumulated over k in one
/// order, whatever m, the pairing, the split or the thread count.
template <class Arch>
inline void conv1d_gemm_bf16(const float* const* taps, std::size_t m, std::size_t kernel, std::size_t in,
                             std::size_t n, const std::uint16_t* panels, float* y, std::size_t ldy,
                             ThreadPool& pool) noexcept {
  static_assert(Simd<Arch>::avx512, "the AMX path is built in the AVX-512 variant only");
  using namespace amx;
  if (m == 0 || n == 0) return;
  const std::size_t k_blocks = (kernel * in + tile_k - 1) / tile_k;
  const std::size_t num_panels = (n + panel_columns - 1) / panel_columns;
  const std::size_t panel_values = k_blocks * panel_tiles * tile_values, block_values = k_blocks * tile_values;
  for_each_bf16_pass(taps, m, kernel, in, pool, [&](const std::uint16_t* xa, std::size_t blocks, std::size_t first,
                                                    std::size_t rows) {
    const std::size_t pairs = (blocks + 1) / 2;
    const std::size_t slices = std::clamp<std::size_t>((4 * pool.size() + num_panels - 1) / num_panels, 1, pairs);
    pool.parallel_for(num_panels * slices, [&](std::size_t task, std::size_t worker) {
      const std::size_t p = task / slices, slice = task % slices;
      const std::size_t n0 = p * panel_columns, cols = std::min(panel_columns, n - n0);
      const std::uint16_t* panel = panels + p * panel_values;
      float* spill = static_cast<float*>(pool.scratch(worker, tile_rows * tile_rows * sizeof(float)));
      load_config();
      for (std::size_t pair = slice * pairs / slices; pair < (slice + 1) * pairs / slices; ++pair) {
        const std::size_t b = 2 * pair;
        multiply_row_blocks_by_panel(xa + b * block_values, b + 1 < blocks, k_blocks, panel, cols,
                                     y + (first + b * tile_rows) * ldy + n0, ldy, rows - b * tile_rows, spill);
      }
      release();
    });
  });
}

// ------------------------------ bf16 with vdpbf16ps (codec GEMM) ----
//
// The same operands as the AMX kernel above (rows packed as A tiles, the
// panels of pack_gemm_panels_bf16), multiplied with vdpbf16ps where the CPU
// has AVX512_BF16 and no AMX (matmul_bf16_dot_kernels.hpp). A B tile's row q
// is pair q of 16 columns, one vector; an A tile's row r holds pair q of row
// r at dword q: so per pair, the micro-kernel loads the 4 vectors of a
// panel's 64 columns and broadcasts each of 4 rows' pairs, 16 accumulators
// (4 rows x 64 columns, one column per lane), summed over the tiles of k in
// order: each output one chain, whatever m, the split or the thread count.

/// Rows [r, r + rows) (rows <= 4) of one 16-row A-tile block x the panel's
/// cols (<= 64) columns, into y. The panels need no alignment (a
/// GemmPanels vector's).
inline void conv1d_bf16_dot_micro(const std::uint16_t* block, std::size_t r, std::size_t rows, std::size_t k_blocks,
                                  const std::uint16_t* panel, std::size_t cols, float* y, std::size_t ldy) noexcept {
  using namespace amx;
  constexpr std::size_t R = 4, V = panel_tiles;  // 4 rows x 4 vectors of 16 columns
  __m512 acc[R][V];
  for (std::size_t i = 0; i < R; ++i)
    for (std::size_t v = 0; v < V; ++v) acc[i][v] = _mm512_setzero_ps();
  const auto* a = reinterpret_cast<const std::uint32_t*>(block) + r * tile_k / 2;
  const auto* b = reinterpret_cast<const std::uint32_t*>(panel);
  for (std::size_t kb = 0; kb < k_blocks; ++kb) {
    const std::uint32_t* a_tile = a + kb * tile_values / 2;
    const std::uint32_t* b_tiles = b + kb * V * tile_values / 2;
    for (std::size_t q = 0; q < tile_k / 2; ++q) {
      __m512i bv[V];
      for (std::size_t v = 0; v < V; ++v) bv[v] = _mm512_loadu_si512(b_tiles + v * tile_values / 2 + q * 16);
      for (std::size_t i = 0; i < R; ++i) {
        const __m512i av = _mm512_set1_epi32(static_cast<int>(a_tile[i * tile_k / 2 + q]));
        for (std::size_t v = 0; v < V; ++v) acc[i][v] = bf16dot::dot(acc[i][v], av, bv[v]);
      }
    }
  }
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t v = 0; v < V && v * 16 < cols; ++v) {
      const std::size_t left = cols - v * 16;
      const auto mask = static_cast<__mmask16>(left >= 16 ? 0xffffu : (1u << left) - 1u);
      _mm512_mask_storeu_ps(y + i * ldy + v * 16, mask, acc[i][v]);
    }
}

/// conv1d.hpp's conv1d_gemm_bf16 on vdpbf16ps: rows packed per pass as the
/// AMX kernel packs them, then tasks of a 64-column panel x a slice of the
/// 16-row blocks.
template <class Arch>
inline void conv1d_gemm_bf16_dot(const float* const* taps, std::size_t m, std::size_t kernel, std::size_t in,
                                 std::size_t n, const std::uint16_t* panels, float* y, std::size_t ldy,
                                 ThreadPool& pool) noexcept {
  static_assert(Simd<Arch>::avx512, "the vdpbf16ps path is built in the AVX-512 variant only");
  using namespace amx;
  if (m == 0 || n == 0) return;
  const std::size_t k_blocks = (kernel * in + tile_k - 1) / tile_k;
  const std::size_t num_panels = (n + panel_columns - 1) / panel_columns;
  const std::size_t panel_values = k_blocks * panel_tiles * tile_values, block_values = k_blocks * tile_values;
  for_each_bf16_pass(taps, m, kernel, in, pool, [&](const std::uint16_t* xa, std::size_t blocks, std::size_t first,
                                                    std::size_t rows) {
    const std::size_t slices = std::clamp<std::size_t>((4 * pool.size() + num_panels - 1) / num_panels, 1, blocks);
    pool.parallel_for(num_panels * slices, [&](std::size_t task, std::size_t) {
      const std::size_t p = task / slices, slice = task % slices;
      const std::size_t n0 = p * panel_columns, cols = std::min(panel_columns, n - n0);
      const std::uint16_t* panel = panels + p * panel_values;
      for (std::size_t b = slice * blocks / slices; b < (slice + 1) * blocks / slices; ++b) {
        const std::size_t block_rows = std::min(tile_rows, rows - b * tile_rows);
        for (std::size_t r = 0; r < block_rows; r += 4)
          conv1d_bf16_dot_micro(xa + b * block_values, r, std::min<std::size_t>(4, block_rows - r), k_blocks, panel,
                                cols, y + (first + b * tile_rows + r) * ldy + n0, ldy);
      }
    });
  });
}
#else
template <class Arch>
void conv1d_gemm_bf16(const float* const* taps, std::size_t m, std::size_t kernel, std::size_t in, std::size_t n,
                      const std::uint16_t* panels, float* y, std::size_t ldy,
                      ThreadPool& pool) noexcept;  // never instantiated outside the AVX-512 variant
template <class Arch>
void conv1d_gemm_bf16_dot(const float* const* taps, std::size_t m, std::size_t kernel, std::size_t in, std::size_t n,
                          const std::uint16_t* panels, float* y, std::size_t ldy,
                          ThreadPool& pool) noexcept;  // never instantiated outside the AVX-512 variant
#endif

}  // namespace izwi::kernels::cpu::detail::inline IZWI_KERNELS_VARIANT
