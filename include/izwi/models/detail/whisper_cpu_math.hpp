#pragma once
// CPU math Whisper needs beyond Qwen3's ops: layer norm, exact (erf) GELU,
// bias rows, 1-D convolution as im2col + the dispatched GEMM, and
// non-causal multi-head attention over dense K/V (the encoder's
// self-attention and the decoder's cross-attention) as two GEMMs per head.
//
// Layer norm, GELU and the attention's softmax run the dispatched SIMD
// kernels (kernels/cpu/elementwise.hpp: the variant chosen at start-up),
// split over the pool here; the attention's two products per head go
// through kernels::cpu::matmul. Still plain loops: bias rows, im2col and the
// head split (copies). Not yet: a fused flash-style attention kernel.

#include <cmath>
#include <cstddef>
#include <cstring>

#include "izwi/kernels/cpu/elementwise.hpp"
#include "izwi/kernels/cpu/thread_pool.hpp"
#include "izwi/kernels/cpu/matmul.hpp"

namespace izwi::detail::whisper_cpu {

/// out[r] = (x[r] - mean) / sqrt(var + eps) * weight + bias; out may equal x.
inline void layer_norm(const float* x, std::size_t rows, std::size_t dim, const float* weight, const float* bias,
                       float eps, float* out, ThreadPool& pool) {
  pool.parallel_for(rows, [&](std::size_t r, std::size_t) {
    kernels::cpu::layer_norm(x + r * dim, dim, 1, dim, weight, bias, eps, out + r * dim, dim);
  });
}

/// x = x * Φ(x), the erf form (torch's nn.GELU(), openai-whisper and transformers' "gelu").
inline void gelu(float* x, std::size_t n, ThreadPool& pool) {
  constexpr std::size_t chunk = 4096;
  pool.parallel_for((n + chunk - 1) / chunk, [&](std::size_t c, std::size_t) {
    const std::size_t end = std::min(n, (c + 1) * chunk);
    kernels::cpu::gelu(x + c * chunk, end - c * chunk);
  });
}

/// x[r][:] += bias for every row.
inline void add_bias(float* x, std::size_t rows, std::size_t dim, const float* bias) {
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t i = 0; i < dim; ++i) x[r * dim + i] += bias[i];
}

/// Output length of a 1-D convolution.
inline std::size_t conv1d_length(std::size_t length, std::size_t kernel, std::size_t stride, std::size_t pad) {
  return (length + 2 * pad - kernel) / stride + 1;
}

/// columns[t][c * kernel + j] = input at channel c, time t * stride + j - pad
/// (0 outside), the layout of a torch Conv1d weight [out][in][kernel] read as
/// a matrix [out][in * kernel]. `time_major`: x is [length][channels], else
/// [channels][length].
inline void im2col_1d(const float* x, std::size_t channels, std::size_t length, bool time_major,
                      std::size_t kernel, std::size_t stride, std::size_t pad, float* columns, ThreadPool& pool) {
  const std::size_t out_len = conv1d_length(length, kernel, stride, pad);
  const std::size_t width = channels * kernel;
  pool.parallel_for(out_len, [&](std::size_t t, std::size_t) {
    float* col = columns + t * width;
    for (std::size_t j = 0; j < kernel; ++j) {
      const auto pos = static_cast<std::ptrdiff_t>(t * stride + j) - static_cast<std::ptrdiff_t>(pad);
      const bool inside = pos >= 0 && pos < static_cast<std::ptrdiff_t>(length);
      const auto p = static_cast<std::size_t>(pos);
      for (std::size_t c = 0; c < channels; ++c)
        col[c * kernel + j] = inside ? (time_major ? x[p * channels + c] : x[c * length + p]) : 0.0f;
    }
  });
}

/// k [n][heads * head_dim] → k_heads [heads][n][head_dim];
/// v [n][heads * head_dim] → v_heads_t [heads][head_dim][n] (transposed, so
/// that P · V is a GEMM with V's rows as the weight's rows).
inline void split_heads(const float* k, const float* v, std::size_t n, std::size_t heads, std::size_t head_dim,
                        float* k_heads, float* v_heads_t) {
  const std::size_t width = heads * head_dim;
  for (std::size_t h = 0; h < heads; ++h)
    for (std::size_t t = 0; t < n; ++t) {
      std::memcpy(k_heads + (h * n + t) * head_dim, k + t * width + h * head_dim, head_dim * sizeof(float));
      const float* vr = v + t * width + h * head_dim;
      float* vt = v_heads_t + h * head_dim * n + t;
      for (std::size_t d = 0; d < head_dim; ++d) vt[d * n] = vr[d];
    }
}

/// out[r][h] = softmax(q[r][h] · K_hᵀ / sqrt(head_dim)) · V_h over all n keys
/// (no mask). q and out are [rows][heads * head_dim]; `scores` holds rows × n floats.
inline void dense_attention(const float* q, std::size_t rows, const float* k_heads, const float* v_heads_t,
                            std::size_t n, std::size_t heads, std::size_t head_dim, float* scores, float* out,
                            ThreadPool& pool) {
  using kernels::cpu::WeightMatrix;
  const std::size_t width = heads * head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  for (std::size_t h = 0; h < heads; ++h) {
    const WeightMatrix keys{DType::f32, n, head_dim, k_heads + h * n * head_dim};
    kernels::cpu::matmul(q + h * head_dim, width, rows, keys, scores, n, pool);
    pool.parallel_for(rows, [&](std::size_t r, std::size_t) {
      float* s = scores + r * n;
      for (std::size_t i = 0; i < n; ++i) s[i] *= scale;
      kernels::cpu::softmax(s, n);
    });
    const WeightMatrix values{DType::f32, head_dim, n, v_heads_t + h * head_dim * n};
    kernels::cpu::matmul(scores, n, rows, values, out + h * head_dim, width, pool);
  }
}

}  // namespace izwi::detail::whisper_cpu
