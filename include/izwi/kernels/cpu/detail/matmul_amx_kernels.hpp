#pragma once
// BF16 weights on AMX (tdpbf16ps): matmul()'s path for BF16 weights from
// amx_min_rows (4) activation rows on (batched decode and prefill), in the
// "avx512" table of a CPU with AMX-BF16 whose operating system grants the
// tile state (dispatch.hpp, baseline.cpp). Instantiated through
// matmul_kernels.hpp by avx512.cpp only; amx_bf16_gemm, the driver, is
// there too (it shares the GEMV's task split).
//
// Why AMX and not AVX512_BF16's vdpbf16ps: on this project's machine (a
// Sapphire Rapids class Xeon) one vdpbf16ps zmm issues every 2 cycles with
// an 8-cycle latency (measured: 12 independent chains, 2.1 cycles each),
// 16 multiply-adds per cycle, half of what two 512-bit FMA ports give on
// widened weights (32). A dot-product tile of 4 x 6 rows (llamafile's
// tinyBLAS shape) measured 13.9 against 23.5 multiply-adds per cycle for
// the same tile in f32 FMAs. One tdpbf16ps (16 x 16 outputs, 32 products
// each) issues every 16-19 cycles: about 430 multiply-adds per cycle.
//
// Up to 16 rows (batched decode), per call: the activations are rounded to
// bf16 and packed as B tiles (per 32 values of k, 16 k-pairs x 16 rows);
// the weights are read in place as A tiles (16 weight rows x 32 values, one
// cache line of each row: no packing, so the weights stream from memory once
// as in the GEMV), 32 weight rows at a time (2 accumulators), prefetched
// 512 bytes ahead; the 16 x 16 accumulators (weight rows x activation rows)
// are transposed into y. Ragged edges (past k, past the last row) go
// through zero-padded copies.
//
// More rows (prefill), per call:
// 1. The activations are rounded to bf16 (to nearest even, as
//    core/half.hpp's f32_to_bf16) and packed as A tiles: per block of 16
//    rows and 32 values of k, 16 x 32 bf16 = 1 KB, contiguous (rows past m
//    and values past k are zero).
// 2. One task per panel of 64 output columns: its weights are packed once
//    into B tiles, per 32 values of k and 16 columns, 16 rows of k-pairs x 16
//    columns (the pair (w[n][2p], w[n][2p+1]) as one dword: a 16 x 16 dword
//    transpose of the weight rows), zero past k and past the matrix.
// 3. Every pair of 16-row blocks runs over the panel in 2 x 2 tiles
//    (4 accumulator tiles, 2 A, 2 B: AMX has 8), one tdpbf16ps per tile per
//    32 values of k; an odd last row block takes 1 x 2 tiles.
// The error against the f32 product is the activations' rounding, at most
// 2^-9 relative per value, so 2^-8 * sum |x w| is a safe bound (llama.cpp
// rounds its activations to bf16 the same way for BF16 weights); tdpbf16ps
// also flushes bf16 subnormals (below 2^-126) to zero.
//
// The tile instructions are inline assembly, so avx512.cpp needs no
// -mamx-* flag and its other tables never reach them. The tile
// configuration is loaded at the start of every task and released at its
// end (Linux saves the 8 KB of tile data on a context switch only while a
// thread holds tiles). A row's result does not depend on the other rows,
// and the two kernels give it the same bits (tested).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "izwi/kernels/cpu/matmul.hpp"
#include "izwi/kernels/cpu/detail/simd.hpp"

#if defined(__AVX512F__) && defined(__AVX512BW__)
#include <immintrin.h>
#endif

namespace izwi::kernels::cpu::detail::inline IZWI_KERNELS_VARIANT {

/// How a variant multiplies BF16 weights in matmul(): widened to f32 with
/// FMAs (every variant), on AMX tiles from amx_min_rows rows on, or with
/// AVX512_BF16's vdpbf16ps from bf16_dot_min_rows rows on
/// (matmul_bf16_dot_kernels.hpp).
enum class Bf16Gemm { widen, amx, dot };

/// Fewest activation rows for which matmul() takes the AMX path (below, the
/// GEMV paths, see matmul_kernels.hpp). Batched decode, BF16 3072 x 1024
/// weights from memory, 1 thread, per CPU-second (loaded machine, so
/// indications), widened register blocks against AMX: m = 2 0.82 / 0.88 ms,
/// 4 0.89 / 0.85, 8 1.09 / 0.83, 16 1.77 / 0.76 (1024 x 3072: 1.48 / 0.68);
/// the one-row GEMV, which only streams the weights, 0.71-0.77.
inline constexpr std::size_t amx_min_rows = 4;

inline bool all_bf16(const MatmulOutput* outs, std::size_t count) noexcept {
  for (std::size_t i = 0; i < count; ++i)
    if (outs[i].weight->dtype != DType::bf16) return false;
  return true;
}

#if defined(__AVX512F__) && defined(__AVX512BW__)

namespace amx {

inline constexpr std::size_t tile_rows = 16;        // rows of every tile
inline constexpr std::size_t tile_k = 32;           // bf16 values of k per tile row
inline constexpr std::size_t tile_values = 512;     // bf16 values (1 KB) per A or B tile
inline constexpr std::size_t panel_columns = 64;    // output columns per task: 4 B tiles
inline constexpr std::size_t panel_tiles = panel_columns / tile_rows;
inline constexpr std::size_t prefetch_values = 8 * tile_k;  // how far ahead pack_panel fetches weights

/// The 64-byte tile configuration of palette 1: tiles 0-3 accumulate
/// (16 rows x 16 floats), 4-5 hold A (16 rows x 32 bf16), 6-7 B (16 k-pairs
/// x 16 columns); every tile 16 rows of 64 bytes.
struct alignas(64) TileConfig {
  std::uint8_t palette = 1;
  std::uint8_t start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t bytes_per_row[16] = {64, 64, 64, 64, 64, 64, 64, 64};
  std::uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
};
static_assert(sizeof(TileConfig) == 64);

inline void load_config() noexcept {
  const TileConfig config;
  __asm__ volatile("ldtilecfg %0" : : "m"(config));
}
inline void release() noexcept { __asm__ volatile("tilerelease" ::: "memory"); }

inline void zero_accumulators() noexcept {
  __asm__ volatile("tilezero %%tmm0\n\ttilezero %%tmm1\n\ttilezero %%tmm2\n\ttilezero %%tmm3" ::: "memory");
}

/// tmm0 += a0 b0, tmm1 += a0 b1, tmm2 += a1 b0, tmm3 += a1 b1 (tiles of 1 KB, 64-byte rows).
inline void multiply_2x2(const std::uint16_t* a0, const std::uint16_t* a1, const std::uint16_t* b0,
                         const std::uint16_t* b1) noexcept {
  const std::size_t stride = 64;
  __asm__ volatile(
      "tileloadd (%0,%4,1), %%tmm4\n\t"
      "tileloadd (%1,%4,1), %%tmm5\n\t"
      "tileloadd (%2,%4,1), %%tmm6\n\t"
      "tileloadd (%3,%4,1), %%tmm7\n\t"
      "tdpbf16ps %%tmm6, %%tmm4, %%tmm0\n\t"
      "tdpbf16ps %%tmm7, %%tmm4, %%tmm1\n\t"
      "tdpbf16ps %%tmm6, %%tmm5, %%tmm2\n\t"
      "tdpbf16ps %%tmm7, %%tmm5, %%tmm3"
      :
      : "r"(a0), "r"(a1), "r"(b0), "r"(b1), "r"(stride)
      : "memory");
}

/// tmm0 += a0 b0, tmm1 += a0 b1.
inline void multiply_1x2(const std::uint16_t* a0, const std::uint16_t* b0, const std::uint16_t* b1) noexcept {
  const std::size_t stride = 64;
  __asm__ volatile(
      "tileloadd (%0,%3,1), %%tmm4\n\t"
      "tileloadd (%1,%3,1), %%tmm6\n\t"
      "tileloadd (%2,%3,1), %%tmm7\n\t"
      "tdpbf16ps %%tmm6, %%tmm4, %%tmm0\n\t"
      "tdpbf16ps %%tmm7, %%tmm4, %%tmm1"
      :
      : "r"(a0), "r"(b0), "r"(b1), "r"(stride)
      : "memory");
}

/// Accumulator tile t (0-3) to dst, rows `stride` bytes apart.
inline void store_accumulator(int t, float* dst, std::size_t stride) noexcept {
  switch (t) {
    case 0: __asm__ volatile("tilestored %%tmm0, (%0,%1,1)" : : "r"(dst), "r"(stride) : "memory"); return;
    case 1: __asm__ volatile("tilestored %%tmm1, (%0,%1,1)" : : "r"(dst), "r"(stride) : "memory"); return;
    case 2: __asm__ volatile("tilestored %%tmm2, (%0,%1,1)" : : "r"(dst), "r"(stride) : "memory"); return;
    default: __asm__ volatile("tilestored %%tmm3, (%0,%1,1)" : : "r"(dst), "r"(stride) : "memory"); return;
  }
}

/// Accumulator tile t into y (rows `rows` <= 16, columns `cols` <= 16 of it):
/// straight when whole, else through `spill` (256 floats).
inline void write_accumulator(int t, float* y, std::size_t ldy, std::size_t rows, std::size_t cols,
                              float* spill) noexcept {
  if (rows == tile_rows && cols == tile_rows) {
    store_accumulator(t, y, ldy * sizeof(float));
    return;
  }
  store_accumulator(t, spill, tile_rows * sizeof(float));
  for (std::size_t r = 0; r < rows; ++r) std::memcpy(y + r * ldy, spill + r * tile_rows, cols * sizeof(float));
}

/// One packed A row block, or two (a0 and a0 + k_blocks · tile_values when
/// `two_blocks`), times one packed B panel of `cols` <= panel_columns
/// columns, into y (the first block's first row at the panel's first
/// column): 2 x 2 (or 1 x 2) tiles per tile_k values of k, every output
/// summed over k in one order. `rows`: y's rows from there on (rows past
/// it are not written). Callers hold the tile configuration.
inline void multiply_row_blocks_by_panel(const std::uint16_t* a0, bool two_blocks, std::size_t k_blocks,
                                         const std::uint16_t* panel, std::size_t cols, float* y, std::size_t ldy,
                                         std::size_t rows, float* spill) noexcept {
  const std::uint16_t* a1 = a0 + k_blocks * tile_values;
  for (std::size_t j = 0; j * tile_rows < cols; j += 2) {
    const std::uint16_t* b0 = panel + j * tile_values;
    const std::uint16_t* b1 = b0 + tile_values;
    zero_accumulators();
    if (two_blocks)
      for (std::size_t kb = 0; kb < k_blocks; ++kb)
        multiply_2x2(a0 + kb * tile_values, a1 + kb * tile_values, b0 + kb * panel_tiles * tile_values,
                     b1 + kb * panel_tiles * tile_values);
    else
      for (std::size_t kb = 0; kb < k_blocks; ++kb)
        multiply_1x2(a0 + kb * tile_values, b0 + kb * panel_tiles * tile_values, b1 + kb * panel_tiles * tile_values);
    for (std::size_t t = 0; t < (two_blocks ? 4u : 2u); ++t) {
      const std::size_t r0 = t / 2 * tile_rows, c0 = (j + t % 2) * tile_rows;
      if (c0 >= cols) continue;
      write_accumulator(static_cast<int>(t), y + r0 * ldy + c0, ldy, std::min(tile_rows, rows - r0),
                        std::min(tile_rows, cols - c0), spill);
    }
  }
}

/// 16 floats -> bf16 bits, to nearest even, NaN kept quiet (core/half.hpp's f32_to_bf16).
inline __m256i round_to_bf16(__m512 v) noexcept {
  const __m512i bits = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(bits, _mm512_set1_epi32(0x7fff)), lsb), 16);
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  rounded = _mm512_mask_mov_epi32(rounded, nan, _mm512_or_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(0x40)));
  return _mm512_cvtepi32_epi16(rounded);
}

/// Activation rows [r0, r0 + 16) as A tiles, k_blocks of them (rows past m zero).
inline void pack_row_block(const float* x, std::size_t ldx, std::size_t m, std::size_t k, std::size_t r0,
                           std::size_t k_blocks, std::uint16_t* tiles) noexcept {
  for (std::size_t r = 0; r < tile_rows; ++r) {
    const bool present = r0 + r < m;
    const float* row = present ? x + (r0 + r) * ldx : x;
    for (std::size_t kb = 0; kb < k_blocks; ++kb) {
      std::uint16_t* dst = tiles + kb * tile_values + r * tile_k;
      for (std::size_t h = 0; h < tile_k; h += 16) {
        const std::size_t k0 = kb * tile_k + h;
        const std::size_t valid = present && k0 < k ? std::min<std::size_t>(16, k - k0) : 0;
        const __mmask16 mask = static_cast<__mmask16>((1u << valid) - 1u);
        const __m512 v = _mm512_maskz_loadu_ps(mask, valid != 0 ? row + k0 : x);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + h), round_to_bf16(v));
      }
    }
  }
}

/// Transposes 16 rows of 16 dwords in place (r[i] lane j -> r[j] lane i).
inline void transpose_16x16(__m512i (&r)[16]) noexcept {
  __m512i a[16], b[16];
  for (int i = 0; i < 8; ++i) {
    a[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    a[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  // b[4i + c], 128-bit lane l: column 4l + c of rows 4i .. 4i+3.
  for (int i = 0; i < 4; ++i) {
    b[4 * i + 0] = _mm512_unpacklo_epi64(a[4 * i], a[4 * i + 2]);
    b[4 * i + 1] = _mm512_unpackhi_epi64(a[4 * i], a[4 * i + 2]);
    b[4 * i + 2] = _mm512_unpacklo_epi64(a[4 * i + 1], a[4 * i + 3]);
    b[4 * i + 3] = _mm512_unpackhi_epi64(a[4 * i + 1], a[4 * i + 3]);
  }
  for (int c = 0; c < 4; ++c) {
    const __m512i even_lo = _mm512_shuffle_i32x4(b[c], b[4 + c], 0x88);   // cols c, 8+c of rows 0-7
    const __m512i odd_lo = _mm512_shuffle_i32x4(b[c], b[4 + c], 0xdd);    // cols 4+c, 12+c of rows 0-7
    const __m512i even_hi = _mm512_shuffle_i32x4(b[8 + c], b[12 + c], 0x88);
    const __m512i odd_hi = _mm512_shuffle_i32x4(b[8 + c], b[12 + c], 0xdd);
    r[c] = _mm512_shuffle_i32x4(even_lo, even_hi, 0x88);
    r[8 + c] = _mm512_shuffle_i32x4(even_lo, even_hi, 0xdd);
    r[4 + c] = _mm512_shuffle_i32x4(odd_lo, odd_hi, 0x88);
    r[12 + c] = _mm512_shuffle_i32x4(odd_lo, odd_hi, 0xdd);
  }
}

/// Weight rows [n0, n0 + 64) of a BF16 matrix as B tiles, tile (kb, j) at
/// panel + (kb * 4 + j) * 512 (columns past the matrix and k past its end zero).
inline void pack_panel(const WeightMatrix& w, std::size_t n0, std::size_t k_blocks, std::uint16_t* panel) noexcept {
  const std::size_t k = w.cols;
  for (std::size_t kb = 0; kb < k_blocks; ++kb) {
    const std::size_t k0 = kb * tile_k;
    const std::size_t valid = std::min(tile_k, k - k0);
    const __mmask32 mask = valid == 32 ? ~__mmask32{0} : static_cast<__mmask32>((1u << valid) - 1u);
    for (std::size_t j = 0; j < panel_tiles; ++j) {
      __m512i rows[16];
      for (std::size_t c = 0; c < tile_rows; ++c) {
        const std::size_t n = n0 + j * tile_rows + c;
        if (n >= w.rows) {
          rows[c] = _mm512_setzero_si512();
          continue;
        }
        const auto* row = reinterpret_cast<const std::uint16_t*>(w.row(n));
        // 64 short row streams at once are more than the hardware
        // prefetchers follow: fetch 8 tiles (512 bytes) ahead.
        if (k0 + prefetch_values < k) __builtin_prefetch(row + k0 + prefetch_values);
        rows[c] = _mm512_maskz_loadu_epi16(mask, row + k0);
      }
      transpose_16x16(rows);
      std::uint16_t* tile = panel + (kb * panel_tiles + j) * tile_values;
      for (std::size_t p = 0; p < tile_rows; ++p) _mm512_storeu_si512(tile + p * tile_k, rows[p]);
    }
  }
}


// ---- up to 16 rows (batched decode): the weights as A tiles, read in place.

/// Activation rows [0, m) (m <= 16) as B tiles, one per 32 values of k: 16
/// k-pairs x 16 rows (the pair (x[t][2p], x[t][2p+1]) as one dword; rows
/// past m and values past k zero).
inline void pack_rows_as_b(const float* x, std::size_t ldx, std::size_t m, std::size_t k, std::size_t k_blocks,
                           std::uint16_t* tiles) noexcept {
  for (std::size_t kb = 0; kb < k_blocks; ++kb) {
    __m512i rows[16];
    for (std::size_t t = 0; t < tile_rows; ++t) {
      __m256i half[2];
      for (std::size_t h = 0; h < 2; ++h) {
        const std::size_t k0 = kb * tile_k + h * 16;
        const std::size_t valid = t < m && k0 < k ? std::min<std::size_t>(16, k - k0) : 0;
        const __mmask16 mask = static_cast<__mmask16>((1u << valid) - 1u);
        half[h] = round_to_bf16(_mm512_maskz_loadu_ps(mask, valid != 0 ? x + t * ldx + k0 : x));
      }
      rows[t] = _mm512_inserti64x4(_mm512_castsi256_si512(half[0]), half[1], 1);
    }
    transpose_16x16(rows);
    for (std::size_t p = 0; p < tile_rows; ++p) _mm512_storeu_si512(tiles + kb * tile_values + p * tile_k, rows[p]);
  }
}

/// Weight rows [n, n + 16) (those below w.rows), values [k0, k0 + 32) (those
/// below k), as one A tile in `tile`, zero elsewhere: the ragged edges the
/// in-place loads cannot take.
inline void copy_weight_tile(const WeightMatrix& w, std::size_t n, std::size_t k0, std::uint16_t* tile) noexcept {
  const std::size_t valid = std::min(tile_k, w.cols - k0);
  const __mmask32 mask = valid == 32 ? ~__mmask32{0} : static_cast<__mmask32>((1u << valid) - 1u);
  for (std::size_t c = 0; c < tile_rows; ++c) {
    const __m512i v = n + c < w.rows
                          ? _mm512_maskz_loadu_epi16(mask, reinterpret_cast<const std::uint16_t*>(w.row(n + c)) + k0)
                          : _mm512_setzero_si512();
    _mm512_storeu_si512(tile + c * tile_k, v);
  }
}

/// tmm0 += a0 b, tmm1 += a1 b; a0 and a1 rows `stride0` / `stride1` bytes apart.
inline void multiply_2x1(const void* a0, std::size_t stride0, const void* a1, std::size_t stride1,
                         const std::uint16_t* b) noexcept {
  const std::size_t stride = 64;
  __asm__ volatile(
      "tileloadd (%0,%1,1), %%tmm4\n\t"
      "tileloadd (%2,%3,1), %%tmm5\n\t"
      "tileloadd (%4,%5,1), %%tmm6\n\t"
      "tdpbf16ps %%tmm6, %%tmm4, %%tmm0\n\t"
      "tdpbf16ps %%tmm6, %%tmm5, %%tmm1"
      :
      : "r"(a0), "r"(stride0), "r"(a1), "r"(stride1), "r"(b), "r"(stride)
      : "memory");
}

/// Accumulator tile t (weight rows x activation rows) transposed into
/// y[r][c] for r < rows, c < cols.
inline void write_transposed(int t, float* y, std::size_t ldy, std::size_t rows, std::size_t cols,
                             float* spill) noexcept {
  store_accumulator(t, spill, tile_rows * sizeof(float));
  __m512i v[16];
  for (std::size_t c = 0; c < tile_rows; ++c) v[c] = _mm512_loadu_si512(spill + c * tile_rows);
  transpose_16x16(v);
  const __mmask16 mask = static_cast<__mmask16>((1u << cols) - 1u);
  for (std::size_t r = 0; r < rows; ++r) _mm512_mask_storeu_ps(y + r * ldy, mask, _mm512_castsi512_ps(v[r]));
}

/// Weight rows [n0, n1) of w against the packed rows (B tiles), m <= 16
/// activation rows, 32 weight rows at a time: whole tiles straight from the
/// weight rows (prefetched 512 bytes ahead), ragged ones through copies.
inline void decode_columns(const WeightMatrix& w, std::size_t n0, std::size_t n1, const std::uint16_t* b_tiles,
                           std::size_t k_blocks, std::size_t m, float* y, std::size_t ldy,
                           std::uint16_t* edge) noexcept {
  const std::size_t k = w.cols, whole_blocks = k / tile_k, row_bytes = w.row_bytes();
  float* spill = reinterpret_cast<float*>(edge + 2 * tile_values);
  for (std::size_t n = n0; n < n1; n += 2 * tile_rows) {
    zero_accumulators();
    const bool whole_rows = n + 2 * tile_rows <= w.rows;
    for (std::size_t kb = 0; kb < k_blocks; ++kb) {
      const std::size_t k0 = kb * tile_k;
      if (whole_rows && kb < whole_blocks) {
        const auto* a0 = reinterpret_cast<const std::uint16_t*>(w.row(n)) + k0;
        // 512 bytes ahead along the rows; near their end, the start of the
        // next 32 rows (so a block does not begin with cold misses).
        const std::size_t ahead = k0 + prefetch_values;
        const std::size_t first = ahead < k ? n : n + 2 * tile_rows, offset = ahead < k ? ahead : ahead - k;
        for (std::size_t c = 0; c < 2 * tile_rows; ++c)
          if (first + c < w.rows) __builtin_prefetch(reinterpret_cast<const std::uint16_t*>(w.row(first + c)) + offset);
        multiply_2x1(a0, row_bytes, reinterpret_cast<const std::byte*>(a0) + tile_rows * row_bytes, row_bytes,
                     b_tiles + kb * tile_values);
      } else {
        copy_weight_tile(w, n, k0, edge);
        copy_weight_tile(w, n + tile_rows, k0, edge + tile_values);
        multiply_2x1(edge, 64, edge + tile_values, 64, b_tiles + kb * tile_values);
      }
    }
    for (std::size_t t = 0; t < 2; ++t) {
      const std::size_t c0 = n + t * tile_rows;
      if (c0 >= n1) break;
      write_transposed(static_cast<int>(t), y + c0, ldy, m, std::min(tile_rows, n1 - c0), spill);
    }
  }
}

}  // namespace amx

#endif  // AVX-512

}  // namespace izwi::kernels::cpu::detail::inline IZWI_KERNELS_VARIANT
