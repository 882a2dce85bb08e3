#pragma once
// CPU math Whisper needs beyond Qwen3's ops: layer norm, exact (erf) GELU,
// bias rows, 1-D convolution as im2col + the dispatched GEMM, and
// non-causal multi-head attention over dense K/V (the encoder's
// self-attention and the decoder's cross-attention) as two GEMMs per head.
//
// Plain loops on purpose: the kernels under include/izwi/kernels are being
// split into per-ISA translation units; these belong there afterwards
// (layer_norm and gelu as xsimd kernels, the attention as a fused
// flash-style kernel). Everything heavy already goes through
// kernels::cpu::matmul.

#include <cmath>
#include <cstddef>
#include <cstring>

#include "izwi/kernels/cpu/thread_pool.hpp"
#include "izwi/kernels/cpu/matmul.hpp"

namespace izwi::detail::whisper_cpu {

/// out[r] = (x[r] - mean) / sqrt(var + eps) * weight + bias; out may equal x.
inline void layer_norm(const float* x, std::size_t rows, std::size_t dim, const float* weight, const float* bias,
                       float eps, float* out, ThreadPool& pool) {
  pool.parallel_for(rows, [&](std::size_t r, std::size_t) {
    const float* in = x + r * dim;
    float* o = out + r * dim;
    double sum = 0;
    for (std::size_t i = 0; i < dim; ++i) sum += in[i];
    const float mean = static_cast<float>(sum / static_cast<double>(dim));
    double sq = 0;
    for (std::size_t i = 0; i < dim; ++i) {
      const float d = in[i] - mean;
      sq += static_cast<double>(d) * d;
    }
    const float inv = 1.0f / std::sqrt(static_cast<float>(sq / static_cast<double>(dim)) + eps);
    for (std::size_t i = 0; i < dim; ++i) o[i] = (in[i] - mean) * inv * weight[i] + bias[i];
  });
}

/// x = x * Φ(x), the erf form (torch's nn.GELU(), openai-whisper and transformers' "gelu").
inline void gelu(float* x, std::size_t n, ThreadPool& pool) {
  constexpr std::size_t chunk = 4096;
  pool.parallel_for((n + chunk - 1) / chunk, [&](std::size_t c, std::size_t) {
    const std::size_t end = std::min(n, (c + 1) * chunk);
    for (std::size_t i = c * chunk; i < end; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678118654752f));
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
      float top = -INFINITY;
      for (std::size_t i = 0; i < n; ++i) top = std::max(top, s[i] * scale);
      float sum = 0;
      for (std::size_t i = 0; i < n; ++i) sum += s[i] = std::exp(s[i] * scale - top);
      const float inv = 1.0f / sum;
      for (std::size_t i = 0; i < n; ++i) s[i] *= inv;
    });
    const WeightMatrix values{DType::f32, head_dim, n, v_heads_t + h * head_dim * n};
    kernels::cpu::matmul(scores, n, rows, values, out + h * head_dim, width, pool);
  }
}

}  // namespace izwi::detail::whisper_cpu
