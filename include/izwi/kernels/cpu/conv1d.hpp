#pragma once
// Elementwise and overlap-add kernels of 1-D convolutional audio decoders
// (the Qwen3-TTS codec decoder's SnakeBeta activations and transposed
// convolutions), and the convolutions as GEMMs over implicit im2col rows.
//
// Activations are time-major F32 rows ([time][channels], rows `channels`
// floats apart). Like elementwise.hpp's kernels these run on the calling
// thread; a caller spreads large arrays over threads by splitting the rows
// with ThreadPool::parallel_for. Every output element depends on its own
// inputs only, never on how the rows were split or what else is batched.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "izwi/kernels/cpu/matmul.hpp"
#include "izwi/kernels/cpu/thread_pool.hpp"

namespace izwi::kernels::cpu {

/// A weight matrix packed once (at load) into the panels conv1d_gemm's
/// micro-kernel reads, instead of on every call: for layers that see few
/// rows per call (the Qwen3-TTS decoder's entry and first transposed
/// convolution run 4 rows per frame over 11 M and 19 M weights) packing was a
/// large share of the call. Layout, the same for every kernel variant (each
/// reads its nr columns at a time, nr dividing 32): panel p holds output
/// columns [64p, 64p + 64) (zero past `rows`) at floats[p · 64 · cols], as
/// two sub-panels of 32 columns, each [cols][32]. A matrix's f32 values,
/// transposed: as much memory as the f32 matrix (rows rounded up to 64).
inline constexpr std::size_t gemm_panel_columns = 64;
inline constexpr std::size_t gemm_panel_sub_columns = 32;
struct GemmPanels {
  std::size_t rows = 0, cols = 0;
  std::vector<float> floats;
  /// Set instead of floats by pack_gemm_panels_bf16: conv1d_gemm then runs in bf16 (AMX or vdpbf16ps).
  std::vector<std::uint16_t> bf16;
};

/// w packed into GemmPanels (any dtype, widened exactly; w is not referenced afterwards).
inline GemmPanels pack_gemm_panels(const WeightMatrix& w);

/// conv1d_gemm of at most this many output channels (a decoder's final
/// 1-channel convolution) takes one dot product per output element instead
/// of the micro-kernel, which would compute nr columns for one useful one.
inline constexpr std::size_t conv1d_dot_max_outputs = 2;

/// A 1-D convolution as a GEMM over im2col rows that are never built:
///   y[r][o] = Σ_j Σ_c taps[r·kernel + j][c] · w[o][j·in + c]
/// for r < m, o < w.rows (w tap-major, w.cols == kernel·in, any dtype);
/// taps[r·kernel + j] points at the `in` input floats tap j of output r reads
/// (a row of the input or of a carried context). Packs straight from those
/// rows, then splits the work over output-column panels and row slices, so
/// layers with few output channels still use every thread. Each output
/// element is summed over k in one order from its own row: bit for bit
/// matmul_batch_invariant of the im2col rows, whatever m or the split, and
/// the same with or without `panels` (pack_gemm_panels(w); with them w's
/// shape is used, never its data, which may be null). Layers of at most
/// conv1d_dot_max_outputs channels take a dot product per element instead
/// (each in one fixed order: per tap, lane-wise partial sums reduced and the
/// tail added, then the taps in order; from w's data, `panels` unused), not
/// the micro-kernel's nr columns.
inline void conv1d_gemm(const float* const* taps, std::size_t m, std::size_t kernel, std::size_t in,
                        const WeightMatrix& w, float* y, std::size_t ldy, ThreadPool& pool,
                        const GemmPanels* panels = nullptr) noexcept;

/// Whether the running kernel variant has the bf16 codec GEMM (the
/// "avx512" table on a CPU with AMX-BF16 whose OS grants the tile state, or
/// with AVX512_BF16 and no AMX).
inline bool conv1d_bf16_available() noexcept;

/// w packed once as bf16 AMX tiles (GemmPanels::bf16; floats left empty):
/// each value widened exactly, then rounded to nearest even; half the memory
/// of the f32 panels. Requires conv1d_bf16_available(). conv1d_gemm on these
/// panels runs in reduced precision: the im2col values rounded to bf16 the
/// same way (per value), the products of the rounded operands summed in f32
/// by tdpbf16ps on AMX or vdpbf16ps (which reads the same tiles), in one
/// fixed order per variant.
/// Against the f32 GEMM the error is the two roundings, at most 2^-8
/// relative per product: |y - y_f32| <= 2^-8 · Σ|x·w| (plus f32 summation).
/// Each output still depends on its own row only: the same bits in any m,
/// split or thread count.
inline GemmPanels pack_gemm_panels_bf16(const WeightMatrix& w);

/// SnakeBeta with its parameters folded (alpha_exp = e^α, inv_beta =
/// 1 / (e^β + ε)), per channel c of each of `rows` rows:
///   v = x[c] + bias[c]            (bias may be null: v = x[c])
///   y[c] = v + inv_beta[c] · sin²(v · alpha_exp[c])
/// x and y may be the same array.
inline void snake_beta(const float* x, float* y, std::size_t rows, std::size_t channels, const float* bias,
                       const float* alpha_exp, const float* inv_beta) noexcept;

/// The overlap-add of a causal ConvTranspose1d (kernel K, stride S) over
/// `n` input rows whose per-tap products are `products` [n][K][channels]
/// (row t, tap j: W_jᵀ·x[t], tap-major). Output row u (0 <= u < n·S + K - S)
/// is
///   acc = u < K - S ? carry_in[u] : 0
///   acc += products[t][j] for every tap with t·S + j == u, 0 <= t < n, in
///          increasing t (the order a full causal decode sums them in)
/// and rows [row_begin, row_end) of it are written: a row u < n·S to
/// out[u] + bias (bias may be null), a row u >= n·S (the overhang into the
/// next call) to carry_out[u - n·S] without bias. carry_in (K - S rows; null
/// when K <= S) must not overlap carry_out. Any kernel >= stride >= 1.
inline void transposed_conv_overlap_add(const float* products, std::size_t n, std::size_t kernel, std::size_t stride,
                                        std::size_t channels, const float* carry_in, const float* bias,
                                        std::size_t row_begin, std::size_t row_end, float* out,
                                        float* carry_out) noexcept;

}  // namespace izwi::kernels::cpu

#include "izwi/kernels/cpu/impl/conv1d.hpp"
