#pragma once
// Elementwise and overlap-add kernels of 1-D convolutional audio decoders
// (the Qwen3-TTS codec decoder's SnakeBeta activations and transposed
// convolutions); the convolutions themselves are matmuls (matmul.hpp).
//
// Activations are time-major F32 rows ([time][channels], rows `channels`
// floats apart). Like elementwise.hpp's kernels these run on the calling
// thread; a caller spreads large arrays over threads by splitting the rows
// with ThreadPool::parallel_for. Every output element depends on its own
// inputs only, never on how the rows were split or what else is batched.

#include <cstddef>

namespace izwi::kernels::cpu {

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
