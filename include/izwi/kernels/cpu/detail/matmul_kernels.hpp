#pragma once
// The matmul kernels of izwi/kernels/cpu/matmul.hpp, written once over the
// SIMD architecture (see simd.hpp for the variant namespace); instantiated by
// the kernel variant translation units and reached through dispatch.hpp.

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "izwi/kernels/cpu/matmul.hpp"
#include "izwi/kernels/cpu/detail/matmul_amx_kernels.hpp"
#include "izwi/kernels/cpu/detail/matmul_q8_amx_kernels.hpp"
#include "izwi/kernels/cpu/detail/matmul_q8_kernels.hpp"
#include "izwi/kernels/cpu/detail/simd.hpp"
#include "izwi/kernels/cpu/detail/tile_prefetch.hpp"

namespace izwi::kernels::cpu::detail::inline IZWI_KERNELS_VARIANT {

inline float q8_0_scale(const std::byte* block) noexcept {
  std::uint16_t bits;
  std::memcpy(&bits, block, 2);
  return f16_bits_to_f32(bits);
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
    return D == DType::f16 ? f16_bits_to_f32(bits) : bf16_bits_to_f32(bits);
  }
}

/// Widens elements [k0, k0 + count) of row r into out (for q8_0, k0 and
/// count are multiples of 32).
template <class Arch>
inline void widen_row(const WeightMatrix& w, std::size_t r, std::size_t k0, std::size_t count, float* out) noexcept {
  const std::byte* row = w.row(r);
  switch (w.dtype) {
    case DType::f32: std::memcpy(out, row + k0 * 4, count * sizeof(float)); return;
    case DType::f16: widen_f16<Arch>(reinterpret_cast<const std::uint16_t*>(row) + k0, out, count); return;
    case DType::bf16: widen_bf16<Arch>(reinterpret_cast<const std::uint16_t*>(row) + k0, out, count); return;
    case DType::q8_0: {
      using S = Simd<Arch>;
      constexpr std::size_t L = S::lanes;
      for (std::size_t b = 0; b < count / q8_0_block_values; ++b) {
        const std::byte* block = row + (k0 / q8_0_block_values + b) * q8_0_block_bytes;
        const auto d = S::broadcast(q8_0_scale(block));
        const auto* q = reinterpret_cast<const std::int8_t*>(block + 2);
        for (std::size_t j = 0; j < q8_0_block_values; j += L)
          S::store(out + b * q8_0_block_values + j, S::load_i8(q + j) * d);
      }
      return;
    }
  }
}

template <class Arch>
inline void widen_row(const WeightMatrix& w, std::size_t r, float* out) noexcept {
  widen_row<Arch>(w, r, 0, w.cols, out);
}

// ---------------------------------------------------------------- GEMV ----

/// R activation rows times C weight rows (output columns n .. n+C-1), dense
/// weights; `Ascending`: how it prefetches the next tile (tile_prefetch.hpp).
template <class Arch, DType D, std::size_t R, std::size_t C, bool Ascending>
inline void gemv_tile_dense(const float* x, std::size_t ldx, const WeightMatrix& w, std::size_t n, float* y,
                            std::size_t ldy) noexcept {
  using S = Simd<Arch>;
  using vec = typename S::vec;
  constexpr std::size_t L = S::lanes;
  const std::size_t k = w.cols;
  constexpr std::size_t elem_bytes = D == DType::f32 ? 4 : 2;
  const std::byte* rows[C];
  const std::byte* next[C];
  for (std::size_t c = 0; c < C; ++c) rows[c] = w.row(n + c);
  for (std::size_t c = 0; c < C; ++c) next[c] = n + C + c < w.rows ? w.row(n + C + c) : rows[c];
  const AscendingPrefetch<C * L * elem_bytes> ahead(w, n, C, C);
  vec acc[R][C];
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t c = 0; c < C; ++c) acc[r][c] = S::zero();
  std::size_t i = 0;
  for (; i + L <= k; i += L) {
    if constexpr (Ascending) ahead.step(i / L);
    else for (std::size_t c = 0; c < C; ++c) __builtin_prefetch(next[c] + i * elem_bytes);
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

template <class Arch, DType D, std::size_t R, std::size_t C>
inline void gemv_tile_dense(const float* x, std::size_t ldx, const WeightMatrix& w, std::size_t n, float* y,
                            std::size_t ldy) noexcept {
  if (tile_prefetch_ascending(w, C)) gemv_tile_dense<Arch, D, R, C, true>(x, ldx, w, n, y, ldy);
  else gemv_tile_dense<Arch, D, R, C, false>(x, ldx, w, n, y, ldy);
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
  const std::byte* next[C];
  for (std::size_t c = 0; c < C; ++c) rows[c] = w.row(n + c);
  for (std::size_t c = 0; c < C; ++c) next[c] = n + C + c < w.rows ? w.row(n + C + c) : rows[c];
  vec acc[R][C];
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t c = 0; c < C; ++c) acc[r][c] = S::zero();
  for (std::size_t b = 0; b < blocks; ++b) {
    for (std::size_t c = 0; c < C; ++c) __builtin_prefetch(next[c] + b * q8_0_block_bytes);  // as for dense rows
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

/// Output columns [n0, n1) for R rows: C columns at a time (4 to 8
/// accumulators: enough independent FMA chains to hide the FMA latency when
/// several rows make the tile compute-bound, few enough registers for AVX2).
template <class Arch, std::size_t R>
inline void gemv_columns(const float* x, std::size_t ldx, const WeightMatrix& w, std::size_t n0, std::size_t n1,
                         float* y, std::size_t ldy) noexcept {
  constexpr std::size_t C = R <= 2 ? 4 : 2;
  std::size_t n = n0;
  for (; n + C <= n1; n += C) gemv_tile<Arch, R, C>(x, ldx, w, n, y, ldy);
  for (; n < n1; ++n) gemv_tile<Arch, R, 1>(x, ldx, w, n, y, ldy);
}

/// The tasks of one matmul_group pass: each output's weight rows cut into
/// chunks of `chunk` rows (its last one shorter), numbered output by output.
struct GroupTasks {
  struct Range {
    const MatmulOutput* output;
    std::size_t n0, n1;  // weight rows (output columns) [n0, n1)
  };
  const MatmulOutput* outputs;
  std::size_t count, chunk;
  std::size_t first[matmul_group_max + 1] = {};

  GroupTasks(const MatmulOutput* outs, std::size_t n_outputs, std::size_t rows_per_task) noexcept
      : outputs(outs), count(n_outputs), chunk(rows_per_task) {
    for (std::size_t i = 0; i < count; ++i)
      first[i + 1] = first[i] + (outputs[i].weight->rows + chunk - 1) / chunk;
  }
  std::size_t total() const noexcept { return first[count]; }
  Range range(std::size_t task) const noexcept {
    std::size_t i = 0;
    while (task >= first[i + 1]) ++i;
    const std::size_t n0 = (task - first[i]) * chunk;
    return {&outputs[i], n0, std::min(outputs[i].weight->rows, n0 + chunk)};
  }
};

/// Weight rows of all outputs together.
inline std::size_t total_rows(const MatmulOutput* outs, std::size_t count) noexcept {
  std::size_t rows = 0;
  for (std::size_t i = 0; i < count; ++i) rows += outs[i].weight->rows;
  return rows;
}

/// Points x at a 64-byte-aligned copy of its m rows of k values (rows 16
/// floats apart) in the pool's shared scratch, unless they already are: the
/// GEMVs load every activation vector once per weight row of a tile, and a
/// 64-byte load across two cache lines costs two L1 accesses. On the
/// Sapphire Rapids Xeon, izwi's own A/B: F16 batch-1 decode 13-15% faster
/// with the engine's then 16-byte-aligned activations copied (docs/kernels.md,
/// "GEMV"); the batched GEMV lost 20% without it. The copy changes no arithmetic.
inline void align_activations(const float*& x, std::size_t& ldx, std::size_t m, std::size_t k,
                              ThreadPool& pool) noexcept {
  if (reinterpret_cast<std::uintptr_t>(x) % 64 == 0 && ldx % 16 == 0) return;
  const std::size_t ld = (k + 15) / 16 * 16;
  auto* aligned = static_cast<float*>(pool.shared_scratch(m * ld * sizeof(float)));
  for (std::size_t r = 0; r < m; ++r) std::memcpy(aligned + r * ld, x + r * ldx, k * sizeof(float));
  x = aligned;
  ldx = ld;
}

template <class Arch>
inline void gemv(const float* x, std::size_t ldx, std::size_t m, const MatmulOutput* outs, std::size_t count,
                 ThreadPool& pool) noexcept {
  align_activations(x, ldx, m, outs[0].weight->cols, pool);
  // About 8 tasks per thread over all outputs (uneven cores and a loaded
  // machine balance themselves), at least 16 columns each.
  std::size_t chunk = (total_rows(outs, count) + pool.size() * 8 - 1) / (pool.size() * 8);
  chunk = std::max<std::size_t>(16, (chunk + 3) / 4 * 4);
  const GroupTasks tasks(outs, count, chunk);
  pool.parallel_for(tasks.total(), [&](std::size_t task, std::size_t) {
    const auto [out, n0, n1] = tasks.range(task);
    const WeightMatrix& w = *out->weight;
    const std::size_t ldy = out->ldy;
    // (matmul() sends only single rows here, gemv_batched() takes 2 to 16;
    // this path stays correct for any m.) With more than 4 activation rows,
    // the rows go over the weights in groups of 4, one L1-sized slice of
    // weight rows at a time: memory delivers each weight once, the later
    // groups read it from L1.
    const std::size_t slice = std::max<std::size_t>(4, (16384 / std::max<std::size_t>(1, w.row_bytes())) / 4 * 4);
    for (std::size_t s0 = n0; s0 < n1; s0 += slice) {
      const std::size_t s1 = std::min(n1, s0 + slice);
      for (std::size_t r = 0; r < m;) {
        const float* xr = x + r * ldx;
        float* yr = out->y + r * ldy;
        switch (m - r) {
          case 1: gemv_columns<Arch, 1>(xr, ldx, w, s0, s1, yr, ldy); r += 1; break;
          case 2: gemv_columns<Arch, 2>(xr, ldx, w, s0, s1, yr, ldy); r += 2; break;
          case 3: gemv_columns<Arch, 3>(xr, ldx, w, s0, s1, yr, ldy); r += 3; break;
          default: gemv_columns<Arch, 4>(xr, ldx, w, s0, s1, yr, ldy); r += 4; break;
        }
      }
    }
  });
}

// ------------------------------------------------------ batched GEMV ----
//
// 2 to gemv_max_rows activation rows (batched decode): too few for the
// GEMM's packing to pay. A register block of R activation rows x C weight
// rows keeps R * C accumulators over the whole depth k, so each weight
// vector, widened in registers, feeds R FMAs and each activation vector C
// FMAs (the GEMV above keeps 8 and widens each weight vector once per 4
// rows); the R * C sums are then reduced 16 (8 on AVX2) at a time with one
// transpose-add. The weight rows of a block stay in L1 for the next group of
// rows. Q8_0 with many rows instead widens a tile of weight rows once into
// an f32 buffer (q * d) and runs every row over it: its widening (int8 ->
// float, times the scale) costs more than an f16 one. Activations that are
// not 64-byte aligned are first copied to aligned scratch (align_activations).

template <class Arch>
struct BatchedShape {
  static constexpr bool scalar = std::is_same_v<Arch, ScalarArch>;
  /// Activation rows x weight rows per register block: AVX-512 6 x 4 = 24
  /// accumulators + 6 activation vectors + 1 widened weight vector, 31 of
  /// the 32 registers: each widening (vcvtph2ps, or BF16's shift) feeds 6
  /// FMAs, not 4. On the Zen 5 EPYC, kernel benchmark, weights from memory,
  /// 1 thread, izwi alone, two alternated runs (load 0.35, an attribution),
  /// 6 x 4 against 4 x 4, CPU microseconds: F16 m = 16 738-762 against
  /// 770-772 (3072 x 1024) and 681-682 against 797-814 (1024 x 3072), m = 8
  /// 354-360 against 367-376; BF16 widened m = 16 708-741 against 794-807.
  /// (On the Sapphire Rapids Xeon, 4 x 6 measured no faster than 4 x 4.) AVX2 3 x 4:
  /// 12 accumulators + 3 activation vectors + 1 widened weight vector, all
  /// 16 registers. 3 x 4 against 2 x 4 on the AVX2-only EPYC, idle, kernel
  /// benchmark, 3072 x 1024, 1 thread, medians of 3 alternated runs: BF16
  /// m = 4 / 8 / 16 in 0.63 / 1.01 / 1.78 ms against 0.67 / 1.10 / 1.99;
  /// F16 0.59 / 0.92 / 1.70 against 0.62 / 0.95 / 1.54 (m = 16 level
  /// within the runs' spread, 1.45-1.85 against 1.51-1.69).
  static constexpr std::size_t rows = Simd<Arch>::avx512 ? 6 : scalar ? 4 : 3;
  static constexpr std::size_t cols = 4;
  /// Q8_0 rows from which the widened-tile path is taken, and the depth of
  /// its tiles in values (a multiple of 32 and of the vector width):
  /// cols x depth f32 weights + rows x depth activations fit L1.
  static constexpr std::size_t tile_min_rows = 12;
  static constexpr std::size_t depth = 1024;
};

/// Lane-wise reduction of R x C accumulators into y[r * ldy + c] (c < cols),
/// added to what is there unless `first`.
template <class Arch, std::size_t R, std::size_t C>
inline void store_block_sums(typename Simd<Arch>::vec (&acc)[R][C], float* y, std::size_t ldy, std::size_t cols,
                             bool first) noexcept {
  using S = Simd<Arch>;
  using vec = typename S::vec;
  constexpr std::size_t L = S::lanes, N = R * C, G = (N + L - 1) / L;
  vec all[G * L];
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t c = 0; c < C; ++c) all[r * C + c] = acc[r][c];
  for (std::size_t j = N; j < G * L; ++j) all[j] = S::zero();
  alignas(64) float sums[G * L];
  for (std::size_t g = 0; g < G; ++g) S::store(sums + g * L, S::sum_each(all + g * L));
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      float& out = y[r * ldy + c];
      out = first ? sums[r * C + c] : out + sums[r * C + c];
    }
}

/// The C weight rows of a register block from row n (rows past `cols`
/// repeat the last one: computed, not written), and the C rows after them
/// to prefetch when `prefetch` (else the block's own rows again).
template <std::size_t C>
inline void block_weight_rows(const WeightMatrix& w, std::size_t n, std::size_t cols, bool prefetch,
                              const std::byte* (&rows)[C], const std::byte* (&next)[C]) noexcept {
  for (std::size_t c = 0; c < C; ++c) {
    rows[c] = w.row(n + std::min(c, cols - 1));
    next[c] = prefetch && n + cols + c < w.rows ? w.row(n + cols + c) : rows[c];
  }
}

/// R activation rows x weight rows n .. n+cols-1 (cols <= C) over all of k,
/// widening the weights in registers; prefetches the C rows that follow
/// when `prefetch` (the first group of rows over these weights).
template <class Arch, DType D, std::size_t R, std::size_t C>
inline void batched_block(const float* x, std::size_t ldx, const WeightMatrix& w, std::size_t n, std::size_t cols,
                          float* y, std::size_t ldy, bool prefetch) noexcept {
  using S = Simd<Arch>;
  using vec = typename S::vec;
  constexpr std::size_t L = S::lanes;
  const std::size_t k = w.cols;
  const std::byte* rows[C];
  const std::byte* next[C];
  block_weight_rows<C>(w, n, cols, prefetch, rows, next);
  vec acc[R][C];
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t c = 0; c < C; ++c) acc[r][c] = S::zero();
  // The inner loops have no branch: one in them made GCC spill the accumulators.
  if constexpr (D == DType::q8_0) {
    constexpr std::size_t V = q8_0_block_values / L;
    for (std::size_t b = 0; b < k / q8_0_block_values; ++b) {
      const std::size_t offset = b * q8_0_block_bytes;
      for (std::size_t c = 0; c < C; ++c) __builtin_prefetch(next[c] + offset);
      const float* xb = x + b * q8_0_block_values;
      for (std::size_t v = 0; v < V; ++v) {
        vec xv[R];
        for (std::size_t r = 0; r < R; ++r) xv[r] = S::load(xb + r * ldx + v * L);
        for (std::size_t c = 0; c < C; ++c) {
          const std::byte* block = rows[c] + offset;
          const vec wv =
              S::load_i8(reinterpret_cast<const std::int8_t*>(block + 2) + v * L) * S::broadcast(q8_0_scale(block));
          for (std::size_t r = 0; r < R; ++r) acc[r][c] = S::fma(xv[r], wv, acc[r][c]);
        }
      }
    }
    store_block_sums<Arch, R, C>(acc, y + n, ldy, cols, true);
  } else {
    // One cache line of each weight row per step, and its prefetch.
    constexpr std::size_t elem_bytes = D == DType::f32 ? 4 : 2;
    constexpr std::size_t U = std::max<std::size_t>(1, 64 / (elem_bytes * L));
    std::size_t i = 0;
    for (; i + U * L <= k; i += U * L) {
      for (std::size_t c = 0; c < C; ++c) __builtin_prefetch(next[c] + i * elem_bytes);
      for (std::size_t u = 0; u < U; ++u) {
        vec xv[R];
        for (std::size_t r = 0; r < R; ++r) xv[r] = S::load(x + r * ldx + i + u * L);
        for (std::size_t c = 0; c < C; ++c) {
          const vec wv = load_weights<Arch, D>(rows[c], i + u * L);
          for (std::size_t r = 0; r < R; ++r) acc[r][c] = S::fma(xv[r], wv, acc[r][c]);
        }
      }
    }
    for (; i + L <= k; i += L) {
      vec xv[R];
      for (std::size_t r = 0; r < R; ++r) xv[r] = S::load(x + r * ldx + i);
      for (std::size_t c = 0; c < C; ++c) {
        const vec wv = load_weights<Arch, D>(rows[c], i);
        for (std::size_t r = 0; r < R; ++r) acc[r][c] = S::fma(xv[r], wv, acc[r][c]);
      }
    }
    store_block_sums<Arch, R, C>(acc, y + n, ldy, cols, true);
    for (std::size_t r = 0; r < R; ++r)
      for (std::size_t c = 0; c < cols; ++c) {
        float s = 0;
        for (std::size_t j = i; j < k; ++j) s += x[r * ldx + j] * load_weight<D>(rows[c], j);
        y[r * ldy + n + c] += s;
      }
  }
}

template <class Arch, DType D>
inline void batched_columns(const float* x, std::size_t ldx, std::size_t m, const WeightMatrix& w, std::size_t n0,
                            std::size_t n1, float* y, std::size_t ldy) noexcept {
  using B = BatchedShape<Arch>;
  constexpr std::size_t C = B::cols, R = B::rows;
  for (std::size_t n = n0; n < n1; n += C) {
    const std::size_t cols = std::min(C, n1 - n);
    std::size_t r = 0;
    for (; r + R <= m; r += R) batched_block<Arch, D, R, C>(x + r * ldx, ldx, w, n, cols, y + r * ldy, ldy, r == 0);
    const std::size_t left = m - r;
    const float* xr = x + r * ldx;
    float* yr = y + r * ldy;
    if constexpr (R > 1) if (left == 1) batched_block<Arch, D, 1, C>(xr, ldx, w, n, cols, yr, ldy, r == 0);
    if constexpr (R > 2) if (left == 2) batched_block<Arch, D, 2, C>(xr, ldx, w, n, cols, yr, ldy, r == 0);
    if constexpr (R > 3) if (left == 3) batched_block<Arch, D, 3, C>(xr, ldx, w, n, cols, yr, ldy, r == 0);
    if constexpr (R > 4) if (left == 4) batched_block<Arch, D, 4, C>(xr, ldx, w, n, cols, yr, ldy, r == 0);
    if constexpr (R > 5) if (left == 5) batched_block<Arch, D, 5, C>(xr, ldx, w, n, cols, yr, ldy, r == 0);
  }
}

/// Q8_0 weight rows n .. n+count-1 (count <= C), values [k0, k0 + depth),
/// widened into buf (row j at buf + j * depth), read side by side a block at
/// a time with the same blocks of the rows that follow prefetched. Rows from
/// `count` to C are zero.
template <class Arch, std::size_t C>
inline void widen_q8_0_tile(const WeightMatrix& w, std::size_t n, std::size_t count, std::size_t k0,
                            std::size_t depth, float* buf) noexcept {
  using S = Simd<Arch>;
  constexpr std::size_t L = S::lanes;
  for (std::size_t b = 0; b < depth / q8_0_block_values; ++b) {
    const std::size_t offset = (k0 / q8_0_block_values + b) * q8_0_block_bytes;
    for (std::size_t j = 0; j < count; ++j) {
      const std::byte* block = w.row(n + j) + offset;
      if (n + count + j < w.rows) __builtin_prefetch(w.row(n + count + j) + offset);
      const auto d = S::broadcast(q8_0_scale(block));
      const auto* q = reinterpret_cast<const std::int8_t*>(block + 2);
      for (std::size_t i = 0; i < q8_0_block_values; i += L)
        S::store(buf + j * depth + b * q8_0_block_values + i, S::load_i8(q + i) * d);
    }
  }
  for (std::size_t j = count; j < C; ++j) std::fill(buf + j * depth, buf + (j + 1) * depth, 0.0f);
}

/// R activation rows x C rows of a widened tile, `depth` values (a multiple
/// of the vector width).
template <class Arch, std::size_t R, std::size_t C>
inline void tile_block(const float* x, std::size_t ldx, const float* buf, std::size_t depth, float* y,
                       std::size_t ldy, std::size_t cols, bool first) noexcept {
  using S = Simd<Arch>;
  using vec = typename S::vec;
  constexpr std::size_t L = S::lanes;
  vec acc[R][C];
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t c = 0; c < C; ++c) acc[r][c] = S::zero();
  for (std::size_t i = 0; i < depth; i += L) {
    vec xv[R];
    for (std::size_t r = 0; r < R; ++r) xv[r] = S::load(x + r * ldx + i);
    for (std::size_t c = 0; c < C; ++c) {
      const vec wv = S::load(buf + c * depth + i);
      for (std::size_t r = 0; r < R; ++r) acc[r][c] = S::fma(xv[r], wv, acc[r][c]);
    }
  }
  store_block_sums<Arch, R, C>(acc, y, ldy, cols, first);
}

template <class Arch>
inline void q8_0_tile_columns(const float* x, std::size_t ldx, std::size_t m, const WeightMatrix& w, std::size_t n0,
                              std::size_t n1, float* y, std::size_t ldy, float* buf) noexcept {
  using B = BatchedShape<Arch>;
  constexpr std::size_t C = B::cols, R = B::rows;
  const std::size_t k = w.cols;
  for (std::size_t n = n0; n < n1; n += C) {
    const std::size_t cols = std::min(C, n1 - n);
    for (std::size_t k0 = 0; k0 < k; k0 += B::depth) {
      const std::size_t depth = std::min(B::depth, k - k0);
      widen_q8_0_tile<Arch, C>(w, n, cols, k0, depth, buf);
      std::size_t r = 0;
      for (; r + R <= m; r += R)
        tile_block<Arch, R, C>(x + r * ldx + k0, ldx, buf, depth, y + r * ldy + n, ldy, cols, k0 == 0);
      const std::size_t left = m - r;
      const float* xr = x + r * ldx + k0;
      float* yr = y + r * ldy + n;
      if constexpr (R > 1) if (left == 1) tile_block<Arch, 1, C>(xr, ldx, buf, depth, yr, ldy, cols, k0 == 0);
      if constexpr (R > 2) if (left == 2) tile_block<Arch, 2, C>(xr, ldx, buf, depth, yr, ldy, cols, k0 == 0);
      if constexpr (R > 3) if (left == 3) tile_block<Arch, 3, C>(xr, ldx, buf, depth, yr, ldy, cols, k0 == 0);
      if constexpr (R > 4) if (left == 4) tile_block<Arch, 4, C>(xr, ldx, buf, depth, yr, ldy, cols, k0 == 0);
      if constexpr (R > 5) if (left == 5) tile_block<Arch, 5, C>(xr, ldx, buf, depth, yr, ldy, cols, k0 == 0);
    }
  }
}

/// `widened_q8_0_tiles`: Q8_0 from tile_min_rows rows on may take the
/// widened-tile path. Off (matmul_group_batch_invariant), it is taken only
/// when k fits one depth block: its per-block partial sums then are the
/// register blocks' sums (the same products q * d, the same FMA order), and
/// with more blocks they are not.
template <class Arch>
inline void gemv_batched(const float* x, std::size_t ldx, std::size_t m, const MatmulOutput* outs, std::size_t count,
                         ThreadPool& pool, bool widened_q8_0_tiles = true) noexcept {
  using B = BatchedShape<Arch>;
  align_activations(x, ldx, m, outs[0].weight->cols, pool);
  // About 8 tasks per thread over all outputs, whole register blocks of columns.
  std::size_t chunk = (total_rows(outs, count) + pool.size() * 8 - 1) / (pool.size() * 8);
  chunk = std::max<std::size_t>(4 * B::cols, (chunk + B::cols - 1) / B::cols * B::cols);
  const GroupTasks tasks(outs, count, chunk);
  pool.parallel_for(tasks.total(), [&](std::size_t task, std::size_t worker) {
    const auto [out, n0, n1] = tasks.range(task);
    const WeightMatrix& w = *out->weight;
    float* y = out->y;
    const std::size_t ldy = out->ldy;
    if ((widened_q8_0_tiles || w.cols <= B::depth) && w.dtype == DType::q8_0 && m >= B::tile_min_rows) {
      auto* buf = static_cast<float*>(pool.scratch(worker, B::cols * B::depth * sizeof(float)));
      q8_0_tile_columns<Arch>(x, ldx, m, w, n0, n1, y, ldy, buf);
      return;
    }
    switch (w.dtype) {
      case DType::f32: batched_columns<Arch, DType::f32>(x, ldx, m, w, n0, n1, y, ldy); return;
      case DType::f16: batched_columns<Arch, DType::f16>(x, ldx, m, w, n0, n1, y, ldy); return;
      case DType::bf16: batched_columns<Arch, DType::bf16>(x, ldx, m, w, n0, n1, y, ldy); return;
      case DType::q8_0: batched_columns<Arch, DType::q8_0>(x, ldx, m, w, n0, n1, y, ldy); return;
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
  /// + 1 broadcast fit the register file (32 zmm for AVX-512, 16 ymm for AVX2:
  /// 6 rows, 12 independent FMA chains, measured 13-27% faster than 4 on
  /// three of the codec's four convolution stages at 1 thread;
  /// docs/kernels.md). SSE2, with no FMA, keeps 4 (not measured at 6).
  static constexpr std::size_t mr = Simd<Arch>::avx512 ? 8 : Simd<Arch>::avx2 ? 6 : 4;
  /// Output columns per task (one packed panel).
  static constexpr std::size_t nc = 64 >= nr ? 64 / nr * nr : nr;
  /// Weight values widened per row before each transpose step of packing
  /// (a multiple of the Q8_0 block).
  static constexpr std::size_t pack_depth = 64;
};

/// Packs output columns [n0, n0 + nc) of w into `panel` as
/// [nc / nr sub-panels][k][nr] floats; columns past w.rows are zero.
/// Rows are widened a slice of pack_depth values at a time into `buffer`
/// (nc x pack_depth floats) and transposed from there, so both sides of the
/// transpose stay in L1 (a whole-row transpose missed L1 on every store).
template <class Arch>
inline void pack_panel(const WeightMatrix& w, std::size_t n0, float* panel, float* buffer) noexcept {
  using G = GemmShape<Arch>;
  const std::size_t k = w.cols;
  for (std::size_t k0 = 0; k0 < k; k0 += G::pack_depth) {
    const std::size_t depth = std::min(G::pack_depth, k - k0);
    for (std::size_t j = 0; j < G::nc; ++j) {
      float* dst = buffer + j * G::pack_depth;
      if (n0 + j < w.rows) widen_row<Arch>(w, n0 + j, k0, depth, dst);
      else std::fill(dst, dst + depth, 0.0f);
    }
    for (std::size_t j = 0; j < G::nc; j += G::nr) {
      float* sub = panel + (j / G::nr) * k * G::nr + k0 * G::nr;
      for (std::size_t kk = 0; kk < depth; ++kk)
        for (std::size_t c = 0; c < G::nr; ++c) sub[kk * G::nr + c] = buffer[(j + c) * G::pack_depth + kk];
    }
  }
}

/// Packs activation rows [m0, m0 + mr) as [k][mr] floats (rows past m are
/// zero), so the micro-kernel reads one contiguous stream instead of mr
/// rows a page apart.
template <class Arch>
inline void pack_rows(const float* x, std::size_t ldx, std::size_t m, std::size_t k, std::size_t m0,
                      float* packed) noexcept {
  constexpr std::size_t MR = GemmShape<Arch>::mr;
  for (std::size_t r = 0; r < MR; ++r) {
    if (m0 + r >= m) {
      for (std::size_t kk = 0; kk < k; ++kk) packed[kk * MR + r] = 0.0f;
      continue;
    }
    const float* row = x + (m0 + r) * ldx;
    for (std::size_t kk = 0; kk < k; ++kk) packed[kk * MR + r] = row[kk];
  }
}

/// MR x NR block of y from a packed slice of MR activation rows and a packed
/// sub-panel slice, both of depth k; adds to y when `accumulate` (every
/// slice after the first). Writes `rows` rows and `cols` columns. The
/// sub-panel's rows are LDB floats apart (NR of them read): pack_panel's NR,
/// or the wider sub-panels of conv1d's GemmPanels.
template <class Arch, std::size_t LDB = GemmShape<Arch>::nr>
inline void gemm_micro(const float* xp, std::size_t k, const float* sub, float* y, std::size_t ldy, std::size_t rows,
                       std::size_t cols, bool accumulate) noexcept {
  using S = Simd<Arch>;
  using G = GemmShape<Arch>;
  using vec = typename S::vec;
  constexpr std::size_t L = S::lanes;
  constexpr std::size_t NV = G::nr_vectors;
  constexpr std::size_t MR = G::mr;
  vec acc[MR][NV];
  for (std::size_t r = 0; r < MR; ++r)
    for (std::size_t v = 0; v < NV; ++v) acc[r][v] = S::zero();
  for (std::size_t kk = 0; kk < k; ++kk) {
    vec b[NV];
    for (std::size_t v = 0; v < NV; ++v) b[v] = S::load(sub + kk * LDB + v * L);
    for (std::size_t r = 0; r < MR; ++r) {
      const vec a = S::broadcast(xp[kk * MR + r]);
      for (std::size_t v = 0; v < NV; ++v) acc[r][v] = S::fma(a, b[v], acc[r][v]);
    }
  }
  if (rows == MR && cols == G::nr) {
    for (std::size_t r = 0; r < MR; ++r)
      for (std::size_t v = 0; v < NV; ++v)
        S::store(y + r * ldy + v * L, accumulate ? acc[r][v] + S::load(y + r * ldy + v * L) : acc[r][v]);
  } else {
    alignas(64) float tmp[G::nr];
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t v = 0; v < NV; ++v) S::store(tmp + v * L, acc[r][v]);
      for (std::size_t c = 0; c < cols; ++c) y[r * ldy + c] = accumulate ? y[r * ldy + c] + tmp[c] : tmp[c];
    }
  }
}

template <class Arch>
inline void gemm(const float* x, std::size_t ldx, std::size_t m, const MatmulOutput* outs, std::size_t count,
                 ThreadPool& pool) noexcept {
  using G = GemmShape<Arch>;
  const std::size_t k = outs[0].weight->cols;
  // Phase 1: the activations, packed once for all column panels of all outputs.
  const std::size_t row_blocks = (m + G::mr - 1) / G::mr;
  auto* xp = static_cast<float*>(pool.shared_scratch(row_blocks * G::mr * k * sizeof(float)));
  pool.parallel_for(row_blocks, [&](std::size_t b, std::size_t) {
    pack_rows<Arch>(x, ldx, m, k, b * G::mr, xp + b * G::mr * k);
  });
  // Phase 2: one task per panel of nc output columns: widen and pack the
  // panel's weights once, then run every row block over its sub-panels. (A
  // depth-blocked order that keeps a sub-panel slice in L1 measured slower
  // here: the packed rows then stream from L2 once per sub-panel.)
  const GroupTasks tasks(outs, count, G::nc);
  const std::size_t panel_floats = G::nc * k;
  pool.parallel_for(tasks.total(), [&](std::size_t task, std::size_t worker) {
    const auto [out, n0, n1] = tasks.range(task);
    float* panel = static_cast<float*>(pool.scratch(worker, (panel_floats + G::nc * G::pack_depth) * sizeof(float)));
    pack_panel<Arch>(*out->weight, n0, panel, panel + panel_floats);
    const std::size_t cols = n1 - n0;
    for (std::size_t b = 0; b < row_blocks; ++b)
      for (std::size_t j = 0; j < cols; j += G::nr)
        gemm_micro<Arch>(xp + b * G::mr * k, k, panel + (j / G::nr) * k * G::nr, out->y + b * G::mr * out->ldy + n0 + j,
                         out->ldy, std::min(G::mr, m - b * G::mr), std::min(G::nr, cols - j), false);
  });
}

// ------------------------------------------------------- BF16 on AMX ----

#if defined(__AVX512F__) && defined(__AVX512BW__)
/// matmul_group for BF16 weights on AMX (matmul_amx_kernels.hpp): every
/// output BF16, m >= 1 rows of k = w.cols values. AVX-512 builds only.
template <class Arch>
inline void amx_bf16_gemm(const float* x, std::size_t ldx, std::size_t m, const MatmulOutput* outs,
                          std::size_t count, ThreadPool& pool) noexcept {
  static_assert(Simd<Arch>::avx512, "the AMX path is built in the AVX-512 variant only");
  using namespace amx;
  const std::size_t k = outs[0].weight->cols;
  const std::size_t k_blocks = (k + tile_k - 1) / tile_k;
  if (m <= tile_rows) {
    // Batched decode: the rows as B tiles once, the weights read in place as
    // A tiles (no packing: the weights come from memory once, as in the GEMV).
    auto* xb = static_cast<std::uint16_t*>(pool.shared_scratch(k_blocks * tile_values * sizeof(std::uint16_t)));
    pack_rows_as_b(x, ldx, m, k, k_blocks, xb);
    std::size_t chunk = (total_rows(outs, count) + pool.size() * 8 - 1) / (pool.size() * 8);
    chunk = std::max<std::size_t>(4 * tile_rows, (chunk + 2 * tile_rows - 1) / (2 * tile_rows) * (2 * tile_rows));
    const GroupTasks tasks(outs, count, chunk);
    pool.parallel_for(tasks.total(), [&](std::size_t task, std::size_t worker) {
      const auto [out, n0, n1] = tasks.range(task);
      auto* edge = static_cast<std::uint16_t*>(pool.scratch(worker, 2 * tile_values * sizeof(std::uint16_t) +
                                                                        tile_rows * tile_rows * sizeof(float)));
      load_config();
      decode_columns(*out->weight, n0, n1, xb, k_blocks, m, out->y, out->ldy, edge);
      release();
    });
    return;
  }
  const std::size_t row_blocks = (m + tile_rows - 1) / tile_rows;
  const std::size_t block_values = k_blocks * tile_values;
  auto* xa = static_cast<std::uint16_t*>(pool.shared_scratch(row_blocks * block_values * sizeof(std::uint16_t)));
  pool.parallel_for(row_blocks, [&](std::size_t b, std::size_t) {
    pack_row_block(x, ldx, m, k, b * tile_rows, k_blocks, xa + b * block_values);
  });
  const GroupTasks tasks(outs, count, panel_columns);
  const std::size_t panel_values = k_blocks * panel_tiles * tile_values;
  pool.parallel_for(tasks.total(), [&](std::size_t task, std::size_t worker) {
    const auto [out, n0, n1] = tasks.range(task);
    auto* panel = static_cast<std::uint16_t*>(
        pool.scratch(worker, panel_values * sizeof(std::uint16_t) + tile_rows * tile_rows * sizeof(float)));
    float* spill = reinterpret_cast<float*>(panel + panel_values);
    pack_panel(*out->weight, n0, k_blocks, panel);
    load_config();
    const std::size_t cols = n1 - n0;
    for (std::size_t b = 0; b < row_blocks; b += 2)
      multiply_row_blocks_by_panel(xa + b * block_values, b + 1 < row_blocks, k_blocks, panel, cols,
                                   out->y + b * tile_rows * out->ldy + n0, out->ldy, m - b * tile_rows, spill);
    release();
  });
}

#else
template <class Arch>
void amx_bf16_gemm(const float* x, std::size_t ldx, std::size_t m, const MatmulOutput* outs, std::size_t count,
                   ThreadPool& pool) noexcept;  // never instantiated outside the AVX-512 variant
#endif

// ------------------------------------------ BF16 on AVX512_BF16 ----

/// Fewest activation rows for which matmul() takes the vdpbf16ps path
/// (matmul_bf16_dot_kernels.hpp). Kernel benchmark, BF16 3072 x 1024 from
/// memory, AMD EPYC (Zen 5), izwi alone (an attribution, not evidence),
/// vdpbf16ps against widening, microseconds per CPU-second at 1 thread, two
/// alternated runs: m = 4 241-242 against 193-223 (the weights' stream
/// bounds both), m = 8 327-334 against 369-400, m = 16 478-502 against
/// 744-764; prefill (m = 512) 2.41 against 4.81 ms. From one row it was
/// slower still (the one-row GEMV of the 151936 x 1024 lm_head: 10.7 against
/// 9.0-9.5 ms at 1 thread, two alternated runs, load 0.8).
inline constexpr std::size_t bf16_dot_min_rows = 8;

/// matmul_group for BF16 weights with vdpbf16ps: every output BF16, m >=
/// bf16_dot_min_rows rows of k = w.cols values. Defined in
/// matmul_bf16_dot_kernels.hpp for the AVX-512 variant, the only one whose
/// tables instantiate it.
template <class Arch>
inline void bf16_dot_matmul(const float* x, std::size_t ldx, std::size_t m, const MatmulOutput* outs,
                            std::size_t count, ThreadPool& pool) noexcept;

/// The Q8_0 integer path (matmul_q8_kernels.hpp) with Dot's columns kernel.
template <class Arch, Int8Dot Dot>
inline void q8_matmul_quantized(const float* x, std::size_t ldx, std::size_t m, const MatmulOutput* outs,
                                std::size_t count, ThreadPool& pool) noexcept {
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
  if constexpr (Dot == Int8Dot::amx) {
    q8_gemv_quantized<Arch>(x, ldx, m, outs, count, pool, &q8_columns_amx);
    return;
  }
#endif
  q8_gemv_quantized<Arch>(x, ldx, m, outs, count, pool, &q8_columns<Arch, Dot>);
}

/// Dot: how Q8_0 weights' integer dot products are computed (matmul_q8_kernels.hpp);
/// Bf16: how BF16 weights are multiplied (matmul_amx_kernels.hpp,
/// matmul_bf16_dot_kernels.hpp).
template <class Arch, Int8Dot Dot = default_int8_dot<Arch>, Bf16Gemm Bf16 = Bf16Gemm::widen>
inline void matmul_group(const float* x, std::size_t ldx, std::size_t m, const MatmulOutput* outs, std::size_t count,
                         ThreadPool& pool) noexcept {
  if (m == 0 || count == 0) return;
  if constexpr (Bf16 == Bf16Gemm::amx) {
    if (m >= amx_min_rows && all_bf16(outs, count)) {
      amx_bf16_gemm<Arch>(x, ldx, m, outs, count, pool);
      return;
    }
  }
  if constexpr (Bf16 == Bf16Gemm::dot) {
    if (m >= bf16_dot_min_rows && all_bf16(outs, count)) {
      bf16_dot_matmul<Arch>(x, ldx, m, outs, count, pool);
      return;
    }
  }
  if (m <= q8_quantized_max_rows<Arch, Dot> && all_q8_0(outs, count)) q8_matmul_quantized<Arch, Dot>(x, ldx, m, outs, count, pool);
  else if (m < batched_min_rows) gemv<Arch>(x, ldx, m, outs, count, pool);
  else if (m <= gemv_max_rows) gemv_batched<Arch>(x, ldx, m, outs, count, pool);
  else gemm<Arch>(x, ldx, m, outs, count, pool);
}

template <class Arch, Int8Dot Dot = default_int8_dot<Arch>, Bf16Gemm Bf16 = Bf16Gemm::widen>
inline void matmul(const float* x, std::size_t ldx, std::size_t m, const WeightMatrix& w, float* y, std::size_t ldy,
                   ThreadPool& pool) noexcept {
  const MatmulOutput out{&w, y, ldy};
  matmul_group<Arch, Dot, Bf16>(x, ldx, m, &out, 1, pool);
}

/// The GEMM for every m: its micro-kernel sums each output element over k in
/// one order, from one packed row, whatever the other rows.
template <class Arch>
inline void matmul_batch_invariant(const float* x, std::size_t ldx, std::size_t m, const WeightMatrix& w, float* y,
                                   std::size_t ldy, ThreadPool& pool) noexcept {
  if (m == 0) return;
  const MatmulOutput out{&w, y, ldy};
  gemm<Arch>(x, ldx, m, &out, 1, pool);
}

// ------------------------------------------- batch-invariant matmul_group ----
//
// The batched GEMV's register blocks for every m, 1 included: each output
// element is one vector of partial sums accumulated over k in the same
// order whatever R (the rows of its block), reduced by sum_each, whose adds
// for one vector do not depend on what the other vectors hold, then the
// tail past the last whole vector added the same way. So a row's outputs are
// the same bits whatever the other rows and m; the Q8_0 widened tiles, which
// add per depth block, are taken only when k is one depth block. Qwen3-TTS's talker and code predictor
// use it: batch-sized m (decode) runs as fast as matmul()'s batched GEMV;
// prefill-sized m gives up the GEMM.
//
// Q8_0 weights on the variants where q8_batch_invariant_quantized holds take
// the quantized-activation path (matmul_q8_kernels.hpp) at every m instead:
// it quantizes and sums each row alone, in block order, whatever the rows
// beside it, bit-identical to matmul()'s for m <= q8_0_quantized_max_rows.
template <class Arch, Int8Dot Dot = default_int8_dot<Arch>>
inline void matmul_group_batch_invariant(const float* x, std::size_t ldx, std::size_t m, const MatmulOutput* outs,
                                         std::size_t count, ThreadPool& pool) noexcept {
  if (m == 0 || count == 0) return;
  if constexpr (q8_batch_invariant_quantized<Arch, Dot>) {
    if (all_q8_0(outs, count)) {
      q8_matmul_quantized<Arch, Dot>(x, ldx, m, outs, count, pool);
      return;
    }
  }
  gemv_batched<Arch>(x, ldx, m, outs, count, pool, false);
}

}  // namespace izwi::kernels::cpu::detail::inline IZWI_KERNELS_VARIANT
