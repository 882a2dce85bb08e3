#pragma once
// Row-wise kernels of a transformer layer: RMSNorm (whole rows and per head),
// SiLU-gated MLP activation, softmax, residual add, embedding gather.
//
// All work on F32 rows and run on the calling thread: they are a few percent
// of a forward pass (a matmul dominates every layer), and a caller that wants
// them spread over threads splits the rows with ThreadPool::parallel_for.
// `rows` x `n` arrays have a row stride in floats (`ld`) so they can address
// a column range of a wider buffer (e.g. the q part of a fused qkv output);
// input and output may be the same array (in-place) where noted.

#include <cstddef>
#include <span>

#include "izwi/core/ids.hpp"
#include "izwi/kernels/cpu/matmul.hpp"

namespace izwi::kernels::cpu {

/// RMSNorm as Llama/Qwen3 compute it in float32:
///   y[i] = x[i] / sqrt(mean(x²) + eps) * weight[i]
/// over each of `rows` rows of `n` values. x and y may be the same array.
inline void rms_norm(const float* x, std::size_t ldx, std::size_t rows, std::size_t n, const float* weight, float eps,
                     float* y, std::size_t ldy) noexcept;

/// Qwen3's q_norm / k_norm: RMSNorm of every head_dim-long head of each row,
/// all heads sharing one `weight` of head_dim values; in place. A row holds
/// `heads` heads back to back starting at x + row * ld.
inline void rms_norm_heads(float* x, std::size_t ld, std::size_t rows, std::size_t heads, std::size_t head_dim,
                           const float* weight, float eps) noexcept;

/// out[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g)). out may be gate or up.
inline void silu_mul(const float* gate, const float* up, float* out, std::size_t n) noexcept;

/// In-place softmax of n values (max-subtracted, so large logits do not overflow).
inline void softmax(float* x, std::size_t n) noexcept;

/// y[i] += x[i] (residual connection).
inline void add_inplace(float* y, const float* x, std::size_t n) noexcept;

/// LayerNorm of each row (Whisper): y = (x - mean) / sqrt(var + eps) * weight + bias; y may equal x.
inline void layer_norm(const float* x, std::size_t ldx, std::size_t rows, std::size_t n, const float* weight,
                       const float* bias, float eps, float* y, std::size_t ldy) noexcept;

/// x = x * Φ(x), the exact (erf) GELU of torch's nn.GELU(), in place.
inline void gelu(float* x, std::size_t n) noexcept;

/// out row t = table row ids[t], widened to F32 (table.cols floats per row,
/// rows of out `ld` floats apart). Ids must be in [0, table.rows).
inline void embedding_gather(const WeightMatrix& table, std::span<const TokenId> ids, float* out,
                             std::size_t ld) noexcept;

}  // namespace izwi::kernels::cpu

#include "izwi/kernels/cpu/impl/elementwise.hpp"
