#pragma once
// Bodies of izwi/kernels/cpu/matmul.hpp.

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "izwi/core/half.hpp"
#include "izwi/kernels/cpu/detail/simd.hpp"

namespace izwi::kernels::cpu::detail {

inline float q8_0_scale(const std::byte* block) noexcept {
  std::uint16_t bits;
  std::memcpy(&bits, block, 2);
  return f16_to_f32(bits);
}

/// `lanes` weights of a dense row starting at element i, widened.
template <class Arch, DType D>
inline typename Simd<Arch>::vec load_weights(const std::byte* row, std::size_t i) noexcept {
  using S = Simd<Arch>;
  if constexpr (D == DType::f32) return S::load(reinterpret_cast<const float*>(row) + i);
  else if constexpr (D == DType::f16) return S::load_f16(reinterpret_cast<const std::uint16_t*>(row) + i);
  else return S::load_bf16(reinterpret_cast<const std::uint16_t*>(row) + i);
}

template <DType D>
inline float load_weight(const std::byte* row, std::size_t i) noexcept {
  if constexpr (D == DType::f32) {
    float v;
    std::memcpy(&v, row + 4 * i, 4);
    return v;
  } else {
    std::uint16_t bits;
    std::memcpy(&bits, row + 2 * i, 2);
    return D == DType::f16 ? f16_to_f32(bits) : bf16_to_f32(bits);
  }
}

/// Widens a whole row (k = w.cols values) into out.
template <class Arch>
inline void widen_row(const WeightMatrix& w, std::size_t r, float* out) noexcept {
  const std::byte* row = w.row(r);
  const std::size_t k = w.cols;
  switch (w.dtype) {
    case DType::f32: std::memcpy(out, row, k * sizeof(float)); return;
    case DType::f16: f16_to_f32(reinterpret_cast<const std::uint16_t*>(row), out, k); return;
    case DType::bf16: bf16_to_f32(reinterpret_cast<const std::uint16_t*>(row), out, k); return;
    case DType::q8_0: {
      using S = Simd<Arch>;
      constexpr std::size_t L = S::lanes;
      for (std::size_t b = 0; b < k / q8_0_block_values; ++b) {
        const std::byte* block = row + b * q8_0_block_bytes;
        const auto d = S::broadcast(q8_0_scale(block));
        const auto* q = reinterpret_cast<const std::int8_t*>(block + 2);
        for (std::size_t j = 0; j < q8_0_block_values; j += L)
          S::store(out + b * q8_0_block_values + j, S::load_i8(q + j) * d);
      }
      return;
    }
  }
}

// ---------------------------------------------------------------- GEMV ----

/// R activation rows times C weight rows (output columns n .. n+C-1), dense weights.
template <class Arch, DType D, std::size_t R, std::size_t C>
inline void gemv_tile_dense(const float* x, std::size_t ldx, const WeightMatrix& w, std::size_t n, float* y,
                            std::size_t ldy) noexcept {
  using S = Simd<Arch>;
  using vec = typename S::vec;
  constexpr std::size_t L = S::lanes;
  const std::size_t k = w.cols;
  const std::byte* rows[C];
  for (std::size_t c = 0; c < C; ++c) rows[c] = w.row(n + c);
  vec acc[R][C];
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t c = 0; c < C; ++c) acc[r][c] = S::zero();
  std::size_t i = 0;
  for (; i + L <= k; i += L) {
    vec wv[C];
    for (std::size_t c = 0; c < C; ++c) wv[c] = load_weights<Arch, D>(rows[c], i);
    for (std::size_t r = 0; r < R; ++r) {
      const vec xv = S::load(x + r * ldx + i);
      for (std::size_t c = 0; c < C; ++c) acc[r][c] = S::fma(xv, wv[c], acc[r][c]);
    }
  }
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t c = 0; c < C; ++c) {
      float s = S::sum(acc[r][c]);
      for (std::size_t j = i; j < k; ++j) s += x[r * ldx + j] * load_weight<D>(rows[c], j);
      y[r * ldy + n + c] = s;
    }
}

/// The same for Q8_0 weights: 32 products per block, then one multiply by its scale.
template <class Arch, std::size_t R, std::size_t C>
inline void gemv_tile_q8_0(const float* x, std::size_t ldx, const WeightMatrix& w, std::size_t n, float* y,
                           std::size_t ldy) noexcept {
  using S = Simd<Arch>;
  using vec = typename S::vec;
  constexpr std::size_t L = S::lanes;
  constexpr std::size_t V = q8_0_block_values / L;  // vectors per block
  const std::size_t blocks = w.cols / q8_0_block_values;
  const std::byte* rows[C];
  for (std::size_t c = 0; c < C; ++c) rows[c] = w.row(n + c);
  vec acc[R][C];
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t c = 0; c < C; ++c) acc[r][c] = S::zero();
  for (std::size_t b = 0; b < blocks; ++b) {
    const float* xb = x + b * q8_0_block_values;
    for (std::size_t c = 0; c < C; ++c) {
      const std::byte* block = rows[c] + b * q8_0_block_bytes;
      const auto* q = reinterpret_cast<const std::int8_t*>(block + 2);
      vec qv[V];
      for (std::size_t v = 0; v < V; ++v) qv[v] = S::load_i8(q + v * L);
      const vec d = S::broadcast(q8_0_scale(block));
      for (std::size_t r = 0; r < R; ++r) {
        vec t = S::load(xb + r * ldx) * qv[0];
        for (std::size_t v = 1; v < V; ++v) t = S::fma(S::load(xb + r * ldx + v * L), qv[v], t);
        acc[r][c] = S::fma(t, d, acc[r][c]);
      }
    }
  }
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t c = 0; c < C; ++c) y[r * ldy + n + c] = S::sum(acc[r][c]);
}

template <class Arch, std::size_t R, std::size_t C>
inline void gemv_tile(const float* x, std::size_t ldx, const WeightMatrix& w, std::size_t n, float* y,
                      std::size_t ldy) noexcept {
  switch (w.dtype) {
    case DType::f32: gemv_tile_dense<Arch, DType::f32, R, C>(x, ldx, w, n, y, ldy); return;
    case DType::f16: gemv_tile_dense<Arch, DType::f16, R, C>(x, ldx, w, n, y, ldy); return;
    case DType::bf16: gemv_tile_dense<Arch, DType::bf16, R, C>(x, ldx, w, n, y, ldy); return;
    case DType::q8_0: gemv_tile_q8_0<Arch, R, C>(x, ldx, w, n, y, ldy); return;
  }
}

/// Output columns [n0, n1) for R rows: C columns at a time (C x R = 4
/// accumulators: enough independent FMA chains, few enough registers for AVX2).
template <class Arch, std::size_t R>
inline void gemv_columns(const float* x, std::size_t ldx, const WeightMatrix& w, std::size_t n0, std::size_t n1,
                         float* y, std::size_t ldy) noexcept {
  constexpr std::size_t C = R == 1 ? 4 : R == 2 ? 2 : 1;
  std::size_t n = n0;
  for (; n + C <= n1; n += C) gemv_tile<Arch, R, C>(x, ldx, w, n, y, ldy);
  for (; n < n1; ++n) gemv_tile<Arch, R, 1>(x, ldx, w, n, y, ldy);
}

template <class Arch>
inline void gemv(const float* x, std::size_t ldx, std::size_t m, const WeightMatrix& w, float* y, std::size_t ldy,
                 ThreadPool& pool) noexcept {
  const std::size_t n = w.rows;
  // About 8 tasks per thread (uneven cores and a loaded machine balance
  // themselves), at least 16 columns each.
  std::size_t chunk = (n + pool.size() * 8 - 1) / (pool.size() * 8);
  chunk = std::max<std::size_t>(16, (chunk + 3) / 4 * 4);
  const std::size_t tasks = (n + chunk - 1) / chunk;
  pool.parallel_for(tasks, [&](std::size_t task, std::size_t) {
    const std::size_t n0 = task * chunk, n1 = std::min(n, n0 + chunk);
    for (std::size_t r = 0; r < m;) {
      const float* xr = x + r * ldx;
      float* yr = y + r * ldy;
      switch (m - r) {
        case 1: gemv_columns<Arch, 1>(xr, ldx, w, n0, n1, yr, ldy); r += 1; break;
        case 2: gemv_columns<Arch, 2>(xr, ldx, w, n0, n1, yr, ldy); r += 2; break;
        case 3: gemv_columns<Arch, 3>(xr, ldx, w, n0, n1, yr, ldy); r += 3; break;
        default: gemv_columns<Arch, 4>(xr, ldx, w, n0, n1, yr, ldy); r += 4; break;
      }
    }
  });
}

// ---------------------------------------------------------------- GEMM ----

template <class Arch>
struct GemmShape {
  static constexpr std::size_t lanes = Simd<Arch>::lanes;
  /// Columns per micro-kernel: two vectors (four floats on the scalar path).
  static constexpr std::size_t nr = std::is_same_v<Arch, ScalarArch> ? 4 : 2 * lanes;
  static constexpr std::size_t nr_vectors = nr / lanes;
  /// Activation rows per micro-kernel: MR x 2 accumulators + 2 weight vectors
  /// + 1 broadcast fit the register file (32 zmm for AVX-512, 16 ymm for AVX2).
  static constexpr std::size_t mr = Simd<Arch>::avx512 ? 8 : 4;
  /// Output columns per task (one packed panel).
  static constexpr std::size_t nc = 64 >= nr ? 64 / nr * nr : nr;
};

/// Packs output columns [n0, n0 + nc) of w into `panel` as
/// [nc / nr sub-panels][k][nr] floats; columns past w.rows are zero.
template <class Arch>
inline void pack_panel(const WeightMatrix& w, std::size_t n0, float* panel, float* row_buffer) noexcept {
  using G = GemmShape<Arch>;
  const std::size_t k = w.cols;
  for (std::size_t j = 0; j < G::nc; ++j) {
    float* sub = panel + (j / G::nr) * k * G::nr + (j % G::nr);
    if (n0 + j >= w.rows) {
      for (std::size_t kk = 0; kk < k; ++kk) sub[kk * G::nr] = 0.0f;
      continue;
    }
    widen_row<Arch>(w, n0 + j, row_buffer);
    for (std::size_t kk = 0; kk < k; ++kk) sub[kk * G::nr] = row_buffer[kk];
  }
}

/// MR x NR block of y from MR activation rows and one packed sub-panel, over all of k.
template <class Arch, std::size_t MR>
inline void gemm_micro(const float* x, std::size_t ldx, std::size_t k, const float* sub, float* y, std::size_t ldy,
                       std::size_t valid_cols) noexcept {
  using S = Simd<Arch>;
  using G = GemmShape<Arch>;
  using vec = typename S::vec;
  constexpr std::size_t L = S::lanes;
  constexpr std::size_t NV = G::nr_vectors;
  vec acc[MR][NV];
  for (std::size_t r = 0; r < MR; ++r)
    for (std::size_t v = 0; v < NV; ++v) acc[r][v] = S::zero();
  for (std::size_t kk = 0; kk < k; ++kk) {
    vec b[NV];
    for (std::size_t v = 0; v < NV; ++v) b[v] = S::load(sub + kk * G::nr + v * L);
    for (std::size_t r = 0; r < MR; ++r) {
      const vec a = S::broadcast(x[r * ldx + kk]);
      for (std::size_t v = 0; v < NV; ++v) acc[r][v] = S::fma(a, b[v], acc[r][v]);
    }
  }
  if (valid_cols == G::nr) {
    for (std::size_t r = 0; r < MR; ++r)
      for (std::size_t v = 0; v < NV; ++v) S::store(y + r * ldy + v * L, acc[r][v]);
  } else {
    alignas(64) float tmp[G::nr];
    for (std::size_t r = 0; r < MR; ++r) {
      for (std::size_t v = 0; v < NV; ++v) S::store(tmp + v * L, acc[r][v]);
      std::memcpy(y + r * ldy, tmp, valid_cols * sizeof(float));
    }
  }
}

template <class Arch, std::size_t MR>
inline void gemm_rows(std::size_t rows, const float* x, std::size_t ldx, std::size_t k, const float* sub, float* y,
                      std::size_t ldy, std::size_t valid_cols) noexcept {
  if constexpr (MR > 1) {
    if (rows < MR) return gemm_rows<Arch, MR - 1>(rows, x, ldx, k, sub, y, ldy, valid_cols);
  }
  gemm_micro<Arch, MR>(x, ldx, k, sub, y, ldy, valid_cols);
}

template <class Arch>
inline void gemm(const float* x, std::size_t ldx, std::size_t m, const WeightMatrix& w, float* y, std::size_t ldy,
                 ThreadPool& pool) noexcept {
  using G = GemmShape<Arch>;
  const std::size_t k = w.cols, n = w.rows;
  const std::size_t tasks = (n + G::nc - 1) / G::nc;
  const std::size_t panel_floats = G::nc * k;
  pool.parallel_for(tasks, [&](std::size_t task, std::size_t worker) {
    float* panel = static_cast<float*>(pool.scratch(worker, (panel_floats + k) * sizeof(float)));
    const std::size_t n0 = task * G::nc;
    pack_panel<Arch>(w, n0, panel, panel + panel_floats);
    const std::size_t cols = std::min(G::nc, n - n0);
    for (std::size_t m0 = 0; m0 < m; m0 += G::mr) {
      const std::size_t rows = std::min(G::mr, m - m0);
      for (std::size_t j = 0; j < cols; j += G::nr)
        gemm_rows<Arch, G::mr>(rows, x + m0 * ldx, ldx, k, panel + (j / G::nr) * k * G::nr, y + m0 * ldy + n0 + j,
                               ldy, std::min(G::nr, cols - j));
    }
  });
}

template <class Arch>
inline void matmul(const float* x, std::size_t ldx, std::size_t m, const WeightMatrix& w, float* y, std::size_t ldy,
                   ThreadPool& pool) noexcept {
  if (m == 0 || w.rows == 0) return;
  if (m <= gemv_max_rows) gemv<Arch>(x, ldx, m, w, y, ldy, pool);
  else gemm<Arch>(x, ldx, m, w, y, ldy, pool);
}

}  // namespace izwi::kernels::cpu::detail

namespace izwi::kernels::cpu {

inline void matmul(const float* x, std::size_t ldx, std::size_t m, const WeightMatrix& w, float* y, std::size_t ldy,
                   ThreadPool& pool) noexcept {
  assert(ldx >= w.cols && ldy >= w.rows);
  assert(w.dtype != DType::q8_0 || w.cols % q8_0_block_values == 0);
  detail::matmul<detail::KernelArch>(x, ldx, m, w, y, ldy, pool);
}

inline void matmul(const float* x, std::size_t m, std::size_t k, const WeightMatrix& w, float* y,
                   ThreadPool& pool) noexcept {
  assert(k == w.cols);
  (void)k;
  matmul(x, w.cols, m, w, y, w.rows, pool);
}

inline void dequantize_row(const WeightMatrix& w, std::size_t row, float* out) noexcept {
  detail::widen_row<detail::KernelArch>(w, row, out);
}

}  // namespace izwi::kernels::cpu
