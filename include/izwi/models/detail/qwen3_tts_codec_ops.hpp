#pragma once
// The codec decoder's layers over a time-major batch of streams: each stream
// owns a run of rows, and each layer that looks back in time reads the rows
// before a stream's first from that stream's carried context. Plain loops
// around the batch-invariant matmul (a stream's samples do not depend on the
// other streams of the batch); the matmuls carry almost all the work.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

#include "izwi/kernels/cpu/elementwise.hpp"
#include "izwi/kernels/cpu/matmul.hpp"
#include "izwi/kernels/cpu/thread_pool.hpp"
#include "izwi/models/qwen3_tts_codec_weights.hpp"

namespace izwi::detail::qwen3_tts_codec {

/// Stream s holds rows [begin[s], begin[s + 1]) of a time-major activation.
struct RowRuns {
  std::vector<std::size_t> begin{0};
  std::size_t streams() const noexcept { return begin.size() - 1; }
  std::size_t rows() const noexcept { return begin.back(); }
  std::size_t rows(std::size_t s) const noexcept { return begin[s + 1] - begin[s]; }
  RowRuns scaled(std::size_t factor) const {
    RowRuns r;
    r.begin.resize(begin.size());
    for (std::size_t i = 0; i < begin.size(); ++i) r.begin[i] = begin[i] * factor;
    return r;
  }
};

inline void add_bias(float* x, std::size_t rows, std::size_t dim, const std::vector<float>& bias) {
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t i = 0; i < dim; ++i) x[r * dim + i] += bias[i];
}

/// Keeps the last context.size() / channels rows of [context ; x rows].
inline void slide_context(std::vector<float>& context, const float* x, std::size_t rows, std::size_t channels) {
  const std::size_t keep = context.size();
  if (keep == 0 || rows == 0) return;
  const std::size_t new_values = rows * channels;
  if (new_values >= keep) {
    std::copy(x + new_values - keep, x + new_values, context.begin());
  } else {
    std::copy(context.begin() + static_cast<std::ptrdiff_t>(new_values), context.end(), context.begin());
    std::copy(x, x + new_values, context.end() - static_cast<std::ptrdiff_t>(new_values));
  }
}

/// out[rows][conv.out] = causal Conv1d(x[rows][conv.in]); contexts[s] holds
/// stream s's previous context_rows() input rows and is advanced.
inline void causal_conv(const Qwen3TtsConv& conv, const float* x, const RowRuns& runs,
                        std::span<std::vector<float>* const> contexts, std::vector<float>& columns, float* out,
                        ThreadPool& pool) {
  const std::size_t in = conv.in, k = conv.kernel, d = conv.dilation, ctx = conv.context_rows();
  const std::size_t rows = runs.rows(), width = in * k;
  const float* source = x;
  if (k > 1) {
    columns.resize(rows * width);
    for (std::size_t s = 0; s < runs.streams(); ++s) {
      const std::vector<float>& context = *contexts[s];
      const float* xs = x + runs.begin[s] * in;
      pool.parallel_for(runs.rows(s), [&](std::size_t t, std::size_t) {
        float* col = columns.data() + (runs.begin[s] + t) * width;
        for (std::size_t j = 0; j < k; ++j) {
          // Output t reads input t - ctx + j·d, before the run's start from the context.
          const std::ptrdiff_t src = static_cast<std::ptrdiff_t>(t + j * d) - static_cast<std::ptrdiff_t>(ctx);
          const float* row = src < 0 ? context.data() + (static_cast<std::ptrdiff_t>(ctx) + src) * in
                                     : xs + static_cast<std::size_t>(src) * in;
          for (std::size_t c = 0; c < in; ++c) col[c * k + j] = row[c];
        }
      });
    }
    source = columns.data();
  }
  kernels::cpu::matmul_batch_invariant(source, rows, width, conv.weight, out, pool);
  add_bias(out, rows, conv.out, conv.bias);
  for (std::size_t s = 0; s < runs.streams(); ++s)
    slide_context(*contexts[s], x + runs.begin[s] * in, runs.rows(s), in);
}

/// Depthwise causal Conv1d (kernel 7, one filter per channel) of the ConvNeXt block.
inline void depthwise_causal_conv(const std::vector<float>& weight, const std::vector<float>& bias,
                                  std::size_t channels, std::size_t kernel, const float* x, const RowRuns& runs,
                                  std::span<std::vector<float>* const> contexts, float* out, ThreadPool& pool) {
  const std::size_t ctx = kernel - 1;
  for (std::size_t s = 0; s < runs.streams(); ++s) {
    const std::vector<float>& context = *contexts[s];
    const float* xs = x + runs.begin[s] * channels;
    float* os = out + runs.begin[s] * channels;
    pool.parallel_for(runs.rows(s), [&](std::size_t t, std::size_t) {
      float* o = os + t * channels;
      for (std::size_t c = 0; c < channels; ++c) o[c] = bias[c];
      for (std::size_t j = 0; j < kernel; ++j) {
        const std::ptrdiff_t src = static_cast<std::ptrdiff_t>(t + j) - static_cast<std::ptrdiff_t>(ctx);
        const float* row = src < 0 ? context.data() + (static_cast<std::ptrdiff_t>(ctx) + src) * channels
                                   : xs + static_cast<std::size_t>(src) * channels;
        for (std::size_t c = 0; c < channels; ++c) o[c] += weight[c * kernel + j] * row[c];
      }
    });
  }
  for (std::size_t s = 0; s < runs.streams(); ++s)
    slide_context(*contexts[s], x + runs.begin[s] * channels, runs.rows(s), channels);
}

/// out[rows × stride][conv.out] = ConvTranspose1d(x) with its right overhang
/// trimmed (the causal form): the overhang of a call's last rows is summed into
/// overlaps[s] and added to the next call's first rows.
inline void transposed_conv(const Qwen3TtsTransposedConv& conv, const float* x, const RowRuns& runs,
                            std::span<std::vector<float>* const> overlaps, std::vector<float>& products,
                            std::vector<float>& sums, float* out, ThreadPool& pool) {
  const std::size_t k = conv.kernel, stride = conv.stride, channels = conv.out, ov = conv.overlap_rows();
  products.resize(runs.rows() * channels * k);
  kernels::cpu::matmul_batch_invariant(x, runs.rows(), conv.in, conv.weight, products.data(), pool);
  for (std::size_t s = 0; s < runs.streams(); ++s) {
    const std::size_t n = runs.rows(s);
    if (n == 0) continue;
    const std::size_t emitted = n * stride;
    sums.assign((emitted + ov) * channels, 0.0f);
    std::vector<float>& overlap = *overlaps[s];
    std::copy(overlap.begin(), overlap.end(), sums.begin());
    for (std::size_t t = 0; t < n; ++t) {
      const float* p = products.data() + (runs.begin[s] + t) * channels * k;
      for (std::size_t j = 0; j < k; ++j) {
        float* row = sums.data() + (t * stride + j) * channels;
        for (std::size_t o = 0; o < channels; ++o) row[o] += p[o * k + j];
      }
    }
    float* os = out + runs.begin[s] * stride * channels;
    std::copy(sums.begin(), sums.begin() + static_cast<std::ptrdiff_t>(emitted * channels), os);
    add_bias(os, emitted, channels, conv.bias);
    std::copy(sums.begin() + static_cast<std::ptrdiff_t>(emitted * channels), sums.end(), overlap.begin());
  }
}

/// x += sin²(x·e^α) / (e^β + 1e-9), per channel.
inline void snake(const Qwen3TtsSnake& s, float* x, std::size_t rows, std::size_t channels, ThreadPool& pool) {
  pool.parallel_for(rows, [&](std::size_t r, std::size_t) {
    float* row = x + r * channels;
    for (std::size_t c = 0; c < channels; ++c) {
      const float v = std::sin(row[c] * s.alpha_exp[c]);
      row[c] = row[c] + s.inv_beta[c] * (v * v);
    }
  });
}

/// NeoX rotary at each row's position, angles as transformers computes them in f32.
inline void rotate(float* x, std::size_t rows, std::size_t heads, std::size_t head_dim,
                   std::span<const std::int64_t> positions, double theta) {
  const std::size_t half = head_dim / 2;
  std::vector<float> inv_freq(half);
  for (std::size_t i = 0; i < half; ++i)
    inv_freq[i] = 1.0f / std::pow(static_cast<float>(theta), static_cast<float>(2 * i) / static_cast<float>(head_dim));
  std::vector<float> cos(half), sin(half);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t i = 0; i < half; ++i) {
      const float angle = static_cast<float>(positions[r]) * inv_freq[i];
      cos[i] = std::cos(angle);
      sin[i] = std::sin(angle);
    }
    for (std::size_t h = 0; h < heads; ++h) {
      float* v = x + (r * heads + h) * head_dim;
      for (std::size_t i = 0; i < half; ++i) {
        const float a = v[i], b = v[i + half];
        v[i] = a * cos[i] - b * sin[i];
        v[i + half] = b * cos[i] + a * sin[i];
      }
    }
  }
}

}  // namespace izwi::detail::qwen3_tts_codec
