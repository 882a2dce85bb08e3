#pragma once
// The codec decoder's layers over a time-major batch of streams: each stream
// owns a run of rows, and each layer that looks back in time reads the rows
// before a stream's first from that stream's carried context. The work is the
// batch-invariant matmul and the conv1d kernels (the convolutions' implicit
// im2col GEMM, SnakeBeta, the transposed convolutions' overlap-add), each
// spread over the pool in blocks of rows of all streams at once. Each output
// element is computed from its own stream's inputs in a fixed order, so a
// stream's samples do not depend on the other streams of the batch.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "izwi/kernels/cpu/conv1d.hpp"
#include "izwi/kernels/cpu/elementwise.hpp"
#include "izwi/kernels/cpu/matmul.hpp"
#include "izwi/kernels/cpu/thread_pool.hpp"
#include "izwi/models/qwen3_tts_codec_weights.hpp"

namespace izwi::detail {

/// The audio-rate buffers of one decode pass. They reach hundreds of MB for
/// eight streams of eight frames; kept from pass to pass (instead of fresh
/// vectors, which the allocator maps and the kernel zeroes page by page, a
/// fifth of a batched step's time when measured) and only ever grown.
struct Qwen3TtsCodecScratch {
  std::vector<float> x, y, a, b, products, carry;
  std::vector<const float*> taps;  ///< a convolution's input row per output row and tap
};

/// The decoder's idle scratch sets: a pass takes one (or makes one) and gives
/// it back, so concurrent passes on one decoder never share buffers.
class Qwen3TtsCodecScratchCache {
 public:
  std::unique_ptr<Qwen3TtsCodecScratch> take() {
    const std::lock_guard lock(mutex_);
    if (idle_.empty()) return std::make_unique<Qwen3TtsCodecScratch>();
    std::unique_ptr<Qwen3TtsCodecScratch> s = std::move(idle_.back());
    idle_.pop_back();
    return s;
  }
  void give_back(std::unique_ptr<Qwen3TtsCodecScratch> s) {
    const std::lock_guard lock(mutex_);
    idle_.push_back(std::move(s));
  }

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<Qwen3TtsCodecScratch>> idle_;
};

namespace qwen3_tts_codec {

/// Stream s holds rows [begin[s], begin[s + 1]) of a time-major activation.
struct RowRuns {
  std::vector<std::size_t> begin{0};
  std::size_t streams() const noexcept { return begin.size() - 1; }
  std::size_t rows() const noexcept { return begin.back(); }
  std::size_t rows(std::size_t s) const noexcept { return begin[s + 1] - begin[s]; }
  /// The stream whose run holds `row` (empty runs skipped).
  std::size_t stream_of(std::size_t row) const noexcept {
    return static_cast<std::size_t>(std::upper_bound(begin.begin(), begin.end(), row) - begin.begin()) - 1;
  }
  RowRuns scaled(std::size_t factor) const {
    RowRuns r;
    r.begin.resize(begin.size());
    for (std::size_t i = 0; i < begin.size(); ++i) r.begin[i] = begin[i] * factor;
    return r;
  }
};

/// v's data with at least n floats, contents unspecified (every caller
/// overwrites them); never shrinks, so the scratch stays grown. Growing frees
/// the old buffer first: no copy of stale values, no two buffers at once.
inline float* grow(std::vector<float>& v, std::size_t n) {
  if (v.size() < n) {
    std::vector<float>().swap(v);
    v.resize(n);
  }
  return v.data();
}

/// f(first, end) over [0, rows) in parallel blocks of about 64 KB of rows
/// `channels` floats wide.
template <class F>
void for_row_blocks(ThreadPool& pool, std::size_t rows, std::size_t channels, F&& f) {
  const std::size_t block = std::max<std::size_t>(1, 16384 / std::max<std::size_t>(channels, 1));
  pool.parallel_for((rows + block - 1) / block, [&](std::size_t task, std::size_t) {
    f(task * block, std::min(rows, (task + 1) * block));
  });
}

inline void add_bias(float* x, std::size_t rows, std::size_t dim, const std::vector<float>& bias, ThreadPool& pool) {
  for_row_blocks(pool, rows, dim, [&](std::size_t first, std::size_t end) {
    for (std::size_t r = first; r < end; ++r)
      for (std::size_t i = 0; i < dim; ++i) x[r * dim + i] += bias[i];
  });
}

/// x += a + bias, row by row (a residual branch whose last bias was deferred).
inline void add_with_bias(float* x, const float* a, std::size_t rows, std::size_t dim, const std::vector<float>& bias,
                          ThreadPool& pool) {
  for_row_blocks(pool, rows, dim, [&](std::size_t first, std::size_t end) {
    for (std::size_t r = first; r < end; ++r)
      for (std::size_t i = 0; i < dim; ++i) x[r * dim + i] += a[r * dim + i] + bias[i];
  });
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

/// Input row `t - back` of a stream whose run starts at xs: from its carried
/// context (`ctx` rows) when before the run.
inline const float* row_before(const float* xs, const std::vector<float>& context, std::size_t ctx, std::size_t t,
                               std::size_t back, std::size_t channels) noexcept {
  return t >= back ? xs + (t - back) * channels : context.data() + (ctx + t - back) * channels;
}

/// y[rows][w.rows] = x[rows][w.cols] · wᵀ on w's panels packed at load:
/// conv1d_gemm with one tap per row, bit for bit matmul_batch_invariant
/// (the same packing and micro-kernel) without packing w on every call.
inline void packed_matmul(const float* x, std::size_t rows, const kernels::cpu::WeightMatrix& w,
                          const kernels::cpu::GemmPanels& panels, float* y, std::vector<const float*>& taps,
                          ThreadPool& pool) {
  if (taps.size() < rows) taps.resize(rows);
  for (std::size_t r = 0; r < rows; ++r) taps[r] = x + r * w.cols;
  kernels::cpu::conv1d_gemm(taps.data(), rows, 1, w.cols, w, y, w.rows, pool, &panels);
}

/// out[rows][conv.out] = causal Conv1d(x[rows][conv.in]) (+ bias when
/// with_bias; else the caller adds it later, fused into its next pass);
/// contexts[s] holds stream s's previous context_rows() input rows and is
/// advanced. The im2col rows are never built: `taps` receives, per output row
/// and tap, a pointer to the input row it reads (in x or in the context).
inline void causal_conv(const Qwen3TtsConv& conv, const float* x, const RowRuns& runs,
                        std::span<std::vector<float>* const> contexts, std::vector<const float*>& taps, float* out,
                        ThreadPool& pool, bool with_bias = true) {
  const std::size_t in = conv.in, k = conv.kernel, d = conv.dilation, ctx = conv.context_rows();
  const std::size_t rows = runs.rows();
  if (taps.size() < rows * k) taps.resize(rows * k);
  for_row_blocks(pool, rows, k * 16, [&](std::size_t b, std::size_t e) {
    for (std::size_t row = b; row < e; ++row) {
      const std::size_t s = runs.stream_of(row), t = row - runs.begin[s];
      const float* xs = x + runs.begin[s] * in;
      // Tap j of output t reads input t - ctx + j·d (weights are tap-major).
      for (std::size_t j = 0; j < k; ++j) taps[row * k + j] = row_before(xs, *contexts[s], ctx, t, ctx - j * d, in);
    }
  });
  kernels::cpu::conv1d_gemm(taps.data(), rows, k, in, conv.weight, out, conv.out, pool, &conv.panels);
  if (with_bias) add_bias(out, rows, conv.out, conv.bias, pool);
  for (std::size_t s = 0; s < runs.streams(); ++s)
    slide_context(*contexts[s], x + runs.begin[s] * in, runs.rows(s), in);
}

/// Depthwise causal Conv1d (one filter per channel, weight [kernel][channels])
/// of the ConvNeXt block.
inline void depthwise_causal_conv(const std::vector<float>& weight, const std::vector<float>& bias,
                                  std::size_t channels, std::size_t kernel, const float* x, const RowRuns& runs,
                                  std::span<std::vector<float>* const> contexts, float* out, ThreadPool& pool) {
  const std::size_t ctx = kernel - 1;
  for_row_blocks(pool, runs.rows(), channels * kernel, [&](std::size_t b, std::size_t e) {
    for (std::size_t row = b; row < e; ++row) {
      const std::size_t s = runs.stream_of(row), t = row - runs.begin[s];
      const float* xs = x + runs.begin[s] * channels;
      float* o = out + row * channels;
      std::copy(bias.begin(), bias.end(), o);
      for (std::size_t j = 0; j < kernel; ++j) {
        const float* in = row_before(xs, *contexts[s], ctx, t, ctx - j, channels);
        const float* w = weight.data() + j * channels;
        for (std::size_t c = 0; c < channels; ++c) o[c] += w[c] * in[c];
      }
    }
  });
  for (std::size_t s = 0; s < runs.streams(); ++s)
    slide_context(*contexts[s], x + runs.begin[s] * channels, runs.rows(s), channels);
}

/// out[rows × stride][conv.out] = ConvTranspose1d(x) + bias with its right
/// overhang trimmed (the causal form): the overhang of a call's last rows is
/// summed into overlaps[s] and added to the next call's first rows.
inline void transposed_conv(const Qwen3TtsTransposedConv& conv, const float* x, const RowRuns& runs,
                            std::span<std::vector<float>* const> overlaps, Qwen3TtsCodecScratch& scratch, float* out,
                            ThreadPool& pool) {
  const std::size_t k = conv.kernel, stride = conv.stride, channels = conv.out, ov = conv.overlap_rows();
  float* products = grow(scratch.products, runs.rows() * channels * k);
  float* carry = grow(scratch.carry, runs.streams() * ov * channels);
  packed_matmul(x, runs.rows(), conv.weight, conv.panels, products, scratch.taps, pool);
  struct Task {
    std::size_t stream, first, end;
  };
  std::vector<Task> tasks;
  const std::size_t block = std::max<std::size_t>(1, 16384 / channels);
  for (std::size_t s = 0; s < runs.streams(); ++s)
    if (runs.rows(s) > 0)
      for (std::size_t u = 0, total = runs.rows(s) * stride + ov; u < total; u += block)
        tasks.push_back({s, u, std::min(total, u + block)});
  pool.parallel_for(tasks.size(), [&](std::size_t i, std::size_t) {
    const Task& t = tasks[i];
    kernels::cpu::transposed_conv_overlap_add(
        products + runs.begin[t.stream] * k * channels, runs.rows(t.stream), k, stride, channels,
        ov > 0 ? overlaps[t.stream]->data() : nullptr, conv.bias.data(), t.first, t.end,
        out + runs.begin[t.stream] * stride * channels, carry + t.stream * ov * channels);
  });
  for (std::size_t s = 0; s < runs.streams(); ++s)
    if (runs.rows(s) > 0 && ov > 0)
      std::copy(carry + s * ov * channels, carry + (s + 1) * ov * channels, overlaps[s]->begin());
}

/// y = SnakeBeta(x + bias) (bias may be null; y may be x), in parallel blocks of rows.
inline void snake(const Qwen3TtsSnake& s, const float* x, float* y, std::size_t rows, std::size_t channels,
                  const float* bias, ThreadPool& pool) {
  for_row_blocks(pool, rows, channels, [&](std::size_t first, std::size_t end) {
    kernels::cpu::snake_beta(x + first * channels, y + first * channels, end - first, channels, bias,
                             s.alpha_exp.data(), s.inv_beta.data());
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

}  // namespace qwen3_tts_codec
}  // namespace izwi::detail
