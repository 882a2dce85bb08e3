#pragma once
// Matrix products of F32 activations with a Linear layer's weights, the
// kernels that decide a CPU executor's speed.
//
//   Y[m][n] = sum_k X[m][k] * W[n][k]        (Y = X · Wᵀ, as torch.nn.Linear)
//
// Weights are row-major [out features][in features], as safetensors and
// Hugging Face store Linear weights (GGUF's ne[0] = in features is the same
// memory order), in F32, F16, BF16 or Q8_0. Q8_0 rows are runs of 34-byte
// blocks: an f16 scale d then 32 int8 q, standing for q[i] * d; its row
// length must be a multiple of 32.
//
// matmul() picks the algorithm from m, once per call:
// - m <= gemv_max_rows (decode, batched decode): GEMV. Each thread streams a
//   range of weight rows from memory exactly once, widening them in
//   registers; bound by memory bandwidth. One row (decode) runs over four
//   weight rows at a time; 2 to 16 rows (batched decode) go in register
//   blocks of 4 activation rows x 4 weight rows (AVX-512; 3 x 4 on AVX2), so
//   each widened weight vector feeds one FMA per row of the block and each
//   activation vector 4, and the weight rows of a block are read again from
//   L1 by the next rows. Q8_0 weights
//   with up to KernelTable::q8_0_quantized_max_rows rows (AVX-512 with VNNI:
//   16, AVX2 and SSE2: 11, AVX-512 without VNNI: 1) instead meet activations
//   quantized once per call to Q8_0-style blocks
//   (d = max|x| / 127, int8 values) in integer dot products (AVX-512 VNNI,
//   AVX2), one float scale per 32 values, as llama.cpp's CPU backend: an
//   error of at most half a quantization step per activation, and results
//   bit-identical across kernel variants (detail/matmul_q8_kernels.hpp).
// - more rows (prefill, batched decode): cache-blocked GEMM. A thread takes a
//   panel of output columns, widens those weight rows once into an f32 panel
//   laid out for the micro-kernel (k-major, one vector width of columns per
//   row), then sweeps all m activation rows over it with a register-blocked
//   micro-kernel of broadcast-FMAs: the conversion cost is paid once per
//   weight, not once per activation row, so prefill is FMA bound.
// - BF16 weights with KernelTable::bf16_rounded_min_rows rows or more (4 on
//   AMX, 8 with vdpbf16ps; 0 for every table but "avx512" on a CPU with
//   AMX-BF16 or AVX512_BF16):
//   the activations are rounded to bf16 once per call and multiplied as
//   bf16 pairs, up to 16 rows against the weights read in place (at the
//   one-row GEMV's cost), more rows against panels of 64 weight rows packed
//   once per call; an error of at most 2^-8 * sum |x w| (the activations'
//   rounding, as llama.cpp's BF16 path). On AMX tiles (tdpbf16ps; about 2x
//   the widening path at 16 rows and 5-6x at 512;
//   detail/matmul_amx_kernels.hpp), or where the CPU has AVX512_BF16 and no
//   AMX with vdpbf16ps (32 multiply-adds per instruction to an FMA's 16;
//   detail/matmul_bf16_dot_kernels.hpp).
// Both split the work over output columns n across the pool's threads; no
// heap allocation per call (panels live in the pool's per-worker scratch).
// matmul_group() runs several weights over the same activations as one such
// split (the output columns of all of them), in one parallel pass.

#include <cstddef>
#include <cstdint>
#include <span>

#include "izwi/core/dtype.hpp"
#include "izwi/kernels/cpu/thread_pool.hpp"

namespace izwi::kernels::cpu {

using ThreadPool = izwi::detail::ThreadPool;

inline constexpr std::size_t q8_0_block_values = 32;
inline constexpr std::size_t q8_0_block_bytes = 34;

/// A view of a Linear layer's weight: `rows` output features of `cols` input
/// features each, row-major, in `dtype`. Does not own `data`.
struct WeightMatrix {
  DType dtype = DType::f32;
  std::size_t rows = 0;
  std::size_t cols = 0;
  const void* data = nullptr;

  /// Bytes of one row (for q8_0: cols / 32 blocks of 34 bytes).
  constexpr std::size_t row_bytes() const noexcept {
    return dtype == DType::q8_0 ? cols / q8_0_block_values * q8_0_block_bytes : cols * dtype_size(dtype);
  }
  const std::byte* row(std::size_t r) const noexcept { return static_cast<const std::byte*>(data) + r * row_bytes(); }
};

/// Up to this many activation rows take the GEMV path (batched decode
/// included: packing a GEMM panel costs more than it saves below this).
inline constexpr std::size_t gemv_max_rows = 16;
/// From this many rows on the GEMV takes register blocks of several rows x
/// several weight rows (batched decode); a single row streams the weights.
inline constexpr std::size_t batched_min_rows = 2;

/// y[m][w.rows] = x[m][k] · wᵀ, with k == w.cols; x and y dense row-major and
/// not overlapping.
inline void matmul(const float* x, std::size_t m, std::size_t k, const WeightMatrix& w, float* y,
                   ThreadPool& pool) noexcept;

/// The same with row strides (in floats): row i of x starts at x + i * ldx
/// (ldx >= w.cols), row i of y at y + i * ldy (ldy >= w.rows), e.g. to write
/// into a column range of a wider buffer.
inline void matmul(const float* x, std::size_t ldx, std::size_t m, const WeightMatrix& w, float* y, std::size_t ldy,
                   ThreadPool& pool) noexcept;

/// matmul() whose every row of y is bit-identical whatever the other rows of
/// x and whatever m: each element is one sum over k in a fixed order (the
/// GEMM path for every m). matmul() instead picks GEMV, batched GEMV or GEMM
/// by m, and they add in different orders, so the last bits of a row depend
/// on the batch it is in. For computations whose output must not depend on
/// what shares the batch (Qwen3-TTS's codec decoder); slower than matmul()
/// for m <= gemv_max_rows.
inline void matmul_batch_invariant(const float* x, std::size_t m, std::size_t k, const WeightMatrix& w, float* y,
                                   ThreadPool& pool) noexcept;

/// One product of a matmul_group: y = x · weightᵀ, rows of y ldy floats apart
/// (ldy >= weight->rows).
struct MatmulOutput {
  const WeightMatrix* weight = nullptr;
  float* y = nullptr;
  std::size_t ldy = 0;
};

/// Most products one matmul_group call takes.
inline constexpr std::size_t matmul_group_max = 4;

/// Several products of the same activations (q/k/v, gate/up), every weight
/// with w.cols == k: the same results as one matmul() per output, in one
/// parallel pass over all their weight rows, so the pool synchronises once
/// instead of once per weight, and the GEMM path packs the activations once.
/// outputs.size() <= matmul_group_max.
inline void matmul_group(const float* x, std::size_t ldx, std::size_t m, std::span<const MatmulOutput> outputs,
                         ThreadPool& pool) noexcept;

/// matmul_group() whose every row of every output is bit-identical whatever
/// the other rows of x and whatever m, like matmul_batch_invariant() but in
/// another order: each element's k-sum in vector-wide partial sums as the
/// batched GEMV keeps them (the register-blocked GEMV for every m, 1
/// included), so decode-sized m costs what matmul() costs; more than
/// gemv_max_rows rows give up matmul()'s GEMM (prefill is slower). For
/// decoders whose sampled output must not depend on the batch (Qwen3-TTS's
/// talker and code predictor). Its results differ in the last bits from
/// matmul_batch_invariant()'s and, for m > 1, from matmul()'s. Q8_0 weights
/// on the variants with KernelTable::q8_0_batch_invariant_quantized (AVX2,
/// AVX-512 with VNNI) instead take matmul()'s quantized-activation path at
/// every m: the same bits as matmul() for m <= q8_0_quantized_max_rows.
inline void matmul_group_batch_invariant(const float* x, std::size_t ldx, std::size_t m,
                                         std::span<const MatmulOutput> outputs, ThreadPool& pool) noexcept;

/// Row `row` of w widened to w.cols floats (embedding lookup, tests).
inline void dequantize_row(const WeightMatrix& w, std::size_t row, float* out) noexcept;

}  // namespace izwi::kernels::cpu

#include "izwi/kernels/cpu/impl/matmul.hpp"
