#pragma once
// Q8_0 weights on AMX-INT8 tiles (tdpbsud): the quantized-activation path of
// matmul_q8_kernels.hpp from 9 activation rows (batched decode of 9 to 16
// rows; Qwen3-TTS's talker and code predictor through
// matmul_group_batch_invariant at any such row count, 16 rows at a time),
// in the "avx512" table of a CPU with AMX whose operating system grants the
// tile state (Int8Dot::amx; baseline.cpp). Instantiated through
// matmul_kernels.hpp by avx512.cpp only.
//
// It is the transposed VNNI tile (q8_tile_vnni512_t16) with its block sums
// computed on a tile. That tile spends, per Q8_0 block and 16 weight rows,
// 24 shuffles transposing the weights and then, per activation row, 8
// vpdpbusd and 8 broadcasts on the block sums and about 10 instructions
// scaling them; its 32 registers hold 8 rows, so 9 to 16 rows take a
// second pass (and a second transpose). Here the transposed weights (w + 128, 4-byte groups of the
// 16 rows side by side: exactly an AMX B tile of 8 rows x 64 bytes) are
// stored once, and one tdpbsud takes the activations' block in place as
// the A tile (m rows of 32 bytes, the QuantizedRows layout) and leaves the
// m x 16 int32 sums of all rows at once. The scaling that follows is the
// VNNI tile's, term for term (the same -128 * sum(x) correction, the same
// float(d_w * d_x), the same exact double terms added in block order), so a
// row's result is bit-identical to the VNNI tiles' and the scalar
// reference's, whatever tile, batch or variant computed it (tested in
// matmul_test.cpp).
//
// A software pipeline keeps five blocks in flight: while block b's sums are
// scaled, block b + 2's tile product runs and block b + 4's weights are
// transposed, so neither the tile load of the stored weights nor the loads
// of the stored sums wait for their stores (tile loads and stores do not
// forward; a lag of 1 measured 5-10% slower, 3 no better).
//
// The scaling is most of the work at every m, on either tile: at 8 rows
// and fewer the two run level, so the tiles start at 9 rows
// (q8_amx_min_rows), where they save the second pass. The tile configuration (A and C
// tiles of m rows) is loaded per task and released at its end, as the BF16
// AMX kernels do (matmul_amx_kernels.hpp); the tile instructions are inline
// assembly (no -mamx-* flag for avx512.cpp).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "izwi/kernels/cpu/detail/matmul_amx_kernels.hpp"
#include "izwi/kernels/cpu/detail/matmul_q8_kernels.hpp"
#include "izwi/kernels/cpu/detail/simd.hpp"

namespace izwi::kernels::cpu::detail::inline IZWI_KERNELS_VARIANT {

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)

namespace amx {

/// Fewest activation rows the tiles take. Below, the VNNI tile is as fast
/// (one pass of 8 rows over the weights, and the per-row scaling both share
/// is most of the work); from 9 rows it needs a second pass. Kernel bench,
/// Q8_0 3072 x 1024, 1 thread, weights in cache / streamed, VNNI against
/// AMX (Sapphire Rapids Xeon, 2026-12-07, izwi alone at a load of about
/// 0.5: indications): m = 2 158 / 164 us, 8 296-304 / 282-299 in cache,
/// 396-398 / 408 streamed; 12 476-493 / 392-403, 585-600 / 478-481; 16
/// 551-589 / 439-459, 679-695 / 516-534 (2 threads: 379-389 / 296-301).
inline constexpr std::size_t q8_amx_min_rows = 9;

/// Palette 1 for m activation rows: tmm0 accumulates (m rows x 16 int32),
/// tmm4 holds A (m rows x 32 int8: one block of each row), tmm6 B (8 rows x
/// 64 bytes: 4-byte groups of 16 weight rows).
struct alignas(64) Q8TileConfig {
  std::uint8_t palette = 1;
  std::uint8_t start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t bytes_per_row[16] = {};
  std::uint8_t rows[16] = {};
};
static_assert(sizeof(Q8TileConfig) == 64);

inline void load_q8_config(std::size_t m) noexcept {
  Q8TileConfig config;
  config.bytes_per_row[0] = 64;
  config.rows[0] = static_cast<std::uint8_t>(m);
  config.bytes_per_row[4] = 32;
  config.rows[4] = static_cast<std::uint8_t>(m);
  config.bytes_per_row[6] = 64;
  config.rows[6] = 8;
  __asm__ volatile("ldtilecfg %0" : : "m"(config));
}

/// sums (m rows of 16 int32) = activations (m rows of 32 int8, 32 bytes
/// apart) . weights (the 8 transposed vectors of q8_t16_transpose, 64 bytes
/// apart), as w + 128 unsigned times x signed.
inline void q8_tile_sums(const std::int8_t* activations, const __m512i* weights, std::int32_t* sums) noexcept {
  const std::size_t a_stride = q8_0_block_values, stride = 64;
  __asm__ volatile(
      "tilezero %%tmm0\n\t"
      "tileloadd (%0,%1,1), %%tmm4\n\t"
      "tileloadd (%2,%3,1), %%tmm6\n\t"
      "tdpbsud %%tmm6, %%tmm4, %%tmm0\n\t"
      "tilestored %%tmm0, (%4,%3,1)"
      :
      : "r"(activations), "r"(a_stride), "r"(weights), "r"(stride), "r"(sums)
      : "memory");
}

/// Activation rows r0 .. r0+R-1 (R: 9 to 16, the rows of the loaded tile
/// configuration; a constant, so that the accumulators stay in registers)
/// x weight rows n .. n+15. Prefetches `ahead` bytes past its rows.
template <std::size_t R>
inline void q8_tile_amx_t16(const QuantizedRows& xq, std::size_t r0, const WeightMatrix& w, std::size_t n,
                            std::size_t ahead, float* y, std::size_t ldy) noexcept {
  constexpr std::size_t lag = 2;  // blocks between the pipeline's stages
  const std::size_t blocks = xq.k / q8_0_block_values, stride = w.row_bytes();
  const std::byte* first = w.row(n);
  const __m512i scale_offsets = q8_t16_scale_offsets(stride);
  alignas(64) __m512i transposed[lag + 1][8];  // B tiles: written lag blocks before they are read
  alignas(64) std::int32_t sums[lag + 1][16][16];  // C tiles: stored lag blocks before they are scaled
  __m512d acc[R][2];
  for (std::size_t r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_pd();
  auto transpose = [&](std::size_t b) {
    const std::byte* block = first + b * q8_0_block_bytes;
    for (std::size_t j = 0; j < 16; ++j) __builtin_prefetch(block + j * stride + ahead);
    __m512i t[8];
    q8_t16_transpose(block, stride, t);
    for (std::size_t e = 0; e < 8; ++e) _mm512_store_si512(&transposed[b % (lag + 1)][e], t[e]);
  };
  auto multiply = [&](std::size_t b) {
    q8_tile_sums(xq.block(r0, b), transposed[b % (lag + 1)], &sums[b % (lag + 1)][0][0]);
  };
  auto scale = [&](std::size_t b) {  // as q8_tile_vnni512_t16 does, from the stored sums
    const __m512 dw = q8_t16_weight_scales(scale_offsets, first + b * q8_0_block_bytes);
    for (std::size_t r = 0; r < R; ++r) {
      const std::size_t at = xq.at(r0 + r, b);
      q8_t16_accumulate(acc[r], _mm512_load_si512(sums[b % (lag + 1)][r]), dw, xq.d[at], xq.sums[at]);
    }
  };
  // Stage b: transpose b, multiply b - lag, scale b - 2 lag.
  for (std::size_t b = 0; b < blocks + 2 * lag; ++b) {
    if (b < blocks) transpose(b);
    if (b >= lag && b - lag < blocks) multiply(b - lag);
    if (b >= 2 * lag) scale(b - 2 * lag);
  }
  for (std::size_t r = 0; r < R; ++r) q8_t16_store(acc[r], y + (r0 + r) * ldy + n);
}

/// q8_tile_amx_t16 with R = rows (q8_amx_min_rows to 16).
template <std::size_t... I>
inline void q8_tile_amx_rows(const QuantizedRows& xq, std::size_t r0, std::size_t rows, const WeightMatrix& w,
                             std::size_t n, std::size_t ahead, float* y, std::size_t ldy,
                             std::index_sequence<I...>) noexcept {
  (void)((rows == I + q8_amx_min_rows ? (q8_tile_amx_t16<I + q8_amx_min_rows>(xq, r0, w, n, ahead, y, ldy), true)
                                      : false) ||
         ...);
}

}  // namespace amx

/// q8_columns for the AMX table: from q8_amx_min_rows activation rows, in
/// groups of 16 rows (the last one its rest: on tiles from 9 rows, else on
/// the VNNI tile), each over the task's 16-row weight tiles (from L2 after
/// the first group); the weight rows past the last whole tile, and fewer
/// activation rows, as the VNNI table computes them.
inline void q8_columns_amx(const QuantizedRows& xq, std::size_t m, const WeightMatrix& w, std::size_t n0,
                           std::size_t n1, float* y, std::size_t ldy) noexcept {
  const std::size_t tiled_end = n0 + (n1 - n0) / 16 * 16;
  if (m < amx::q8_amx_min_rows || !q8_t16_applies(m, w) || tiled_end == n0) {
    q8_columns_vnni512(xq, m, w, n0, n1, y, ldy);
    return;
  }
  for (std::size_t r0 = 0; r0 < m; r0 += 16) {
    const std::size_t rows = std::min<std::size_t>(16, m - r0);
    if (rows < amx::q8_amx_min_rows) {
      for (std::size_t n = n0; n < tiled_end; n += 16) q8_columns_vnni512_t16(xq, r0 + rows, w, n, y, ldy, r0);
      continue;
    }
    amx::load_q8_config(rows);
    for (std::size_t n = n0; n < tiled_end; n += 16) {
      const std::size_t ahead = r0 == 0 && n + 32 <= w.rows ? 16 * w.row_bytes() : 0;
      amx::q8_tile_amx_rows(xq, r0, rows, w, n, ahead, y, ldy, std::make_index_sequence<17 - amx::q8_amx_min_rows>{});
    }
    amx::release();
  }
  if (tiled_end < n1) q8_columns_vnni512(xq, m, w, tiled_end, n1, y, ldy);
}

#endif  // AVX-512

}  // namespace izwi::kernels::cpu::detail::inline IZWI_KERNELS_VARIANT
