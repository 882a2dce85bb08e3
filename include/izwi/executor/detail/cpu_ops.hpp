#pragma once
// CpuOps: the operations a model family's forward pass asks of the CPU
// backend (see the list above Qwen3::forward), on the thread pool, with
// scratch buffers that grow once and are reused every step.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "izwi/concepts/kv_cache.hpp"
#include "izwi/core/dtype.hpp"
#include "izwi/core/half.hpp"
#include "izwi/core/ids.hpp"
#include "izwi/core/step.hpp"
#include "izwi/executor/detail/thread_pool.hpp"
#include "izwi/kernels/cpu/matmul.hpp"

namespace izwi::detail {

class CpuOps {
 public:
  /// One sequence of the step for attention: its query rows are
  /// [first_row, first_row + num_tokens) and sit at positions
  /// [num_computed, num_computed + num_tokens); keys come from its block table.
  struct attention_sequence {
    std::size_t num_computed = 0;
    std::size_t num_tokens = 0;
    std::size_t first_row = 0;
    std::span<const BlockId> block_table;
  };
  static attention_sequence make_sequence(const ScheduledSequence& seq, std::size_t first_row) {
    return {seq.num_computed_tokens, seq.num_tokens, first_row, seq.block_table};
  }

  explicit CpuOps(ThreadPool& pool) : pool_(&pool) {}

  float* buffer(std::size_t slot, std::size_t floats) {
    if (buffers_.size() <= slot) buffers_.resize(slot + 1);
    if (buffers_[slot].size() < floats) buffers_[slot].resize(floats);
    return buffers_[slot].data();
  }

  void embed(const kernels::cpu::WeightMatrix& table, std::span<const TokenId> tokens, float* out) {
    for (std::size_t i = 0; i < tokens.size(); ++i)
      kernels::cpu::dequantize_row(table, static_cast<std::size_t>(tokens[i]), out + i * table.cols);
  }

  void matmul(const float* x, std::size_t m, const kernels::cpu::WeightMatrix& w, float* y) {
    kernels::cpu::matmul(x, m, w.cols, w, y, *pool_);
  }

  void rms_norm(const float* x, std::size_t rows, std::size_t dim, const float* weight, float eps, float* out) {
    for (std::size_t r = 0; r < rows; ++r) {
      const float* xr = x + r * dim;
      float* o = out + r * dim;
      double sum = 0;
      for (std::size_t i = 0; i < dim; ++i) sum += static_cast<double>(xr[i]) * xr[i];
      const float scale = 1.0f / std::sqrt(static_cast<float>(sum / static_cast<double>(dim)) + eps);
      for (std::size_t i = 0; i < dim; ++i) o[i] = xr[i] * scale * weight[i];
    }
  }

  void rms_norm_heads(float* x, std::size_t rows, std::size_t head_dim, const float* weight, float eps) {
    rms_norm(x, rows, head_dim, weight, eps, x);
  }

  /// NeoX layout: dimension i pairs with i + head_dim / 2.
  void rope(float* x, std::size_t rows, std::size_t heads, std::size_t head_dim,
            std::span<const std::int32_t> positions, double theta) {
    const std::size_t half = head_dim / 2;
    if (inv_freq_.size() != half || theta_ != theta) {
      inv_freq_.resize(half);
      for (std::size_t i = 0; i < half; ++i)
        inv_freq_[i] = std::pow(theta, -static_cast<double>(2 * i) / static_cast<double>(head_dim));
      theta_ = theta;
    }
    for (std::size_t r = 0; r < rows; ++r) {
      const double p = positions[r];
      for (std::size_t i = 0; i < half; ++i) {
        const double angle = p * inv_freq_[i];
        const float c = static_cast<float>(std::cos(angle)), s = static_cast<float>(std::sin(angle));
        for (std::size_t h = 0; h < heads; ++h) {
          float* v = x + (r * heads + h) * head_dim;
          const float a = v[i], b = v[i + half];
          v[i] = a * c - b * s;
          v[i + half] = b * c + a * s;
        }
      }
    }
  }

  void store_kv(const KVLayerView& view, DType dtype, const float* k, const float* v,
                std::span<const std::int64_t> slots, std::size_t row) {
    for (std::size_t t = 0; t < slots.size(); ++t) {
      const std::size_t offset = static_cast<std::size_t>(slots[t]) * row;
      store_row(view.keys, dtype, offset, k + t * row, row);
      store_row(view.values, dtype, offset, v + t * row, row);
    }
  }

  void attention(const float* q, std::span<const attention_sequence> sequences, const KVLayerView& view, DType dtype,
                 std::size_t block_size, std::size_t heads, std::size_t kv_heads, std::size_t head_dim, float* out) {
    const std::size_t group = heads / kv_heads;
    const std::size_t row = kv_heads * head_dim;
    const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    for (const attention_sequence& s : sequences)
      for (std::size_t i = 0; i < s.num_tokens; ++i) {
        const std::size_t qrow = s.first_row + i;
        const std::size_t last = s.num_computed + i;  // causal: positions [0, last]
        for (std::size_t h = 0; h < heads; ++h) {
          const float* qh = q + (qrow * heads + h) * head_dim;
          float* o = out + (qrow * heads + h) * head_dim;
          const std::size_t kvh = h / group;
          std::vector<float>& acc = scratch_;
          acc.assign(head_dim, 0.0f);
          std::vector<float>& kbuf = kbuf_;
          kbuf.resize(head_dim * 2);
          float max = -INFINITY, denom = 0.0f;
          for (std::size_t p = 0; p <= last; ++p) {
            const std::size_t slot = s.block_table[p / block_size] * block_size + p % block_size;
            const std::size_t offset = slot * row + kvh * head_dim;
            load_row(view.keys, dtype, offset, kbuf.data(), head_dim);
            load_row(view.values, dtype, offset, kbuf.data() + head_dim, head_dim);
            float score = 0;
            for (std::size_t d = 0; d < head_dim; ++d) score += qh[d] * kbuf[d];
            score *= scale;
            const float new_max = std::max(max, score);
            const float correction = std::exp(max - new_max), weight = std::exp(score - new_max);
            denom = denom * correction + weight;
            for (std::size_t d = 0; d < head_dim; ++d) acc[d] = acc[d] * correction + weight * kbuf[head_dim + d];
            max = new_max;
          }
          for (std::size_t d = 0; d < head_dim; ++d) o[d] = acc[d] / denom;
        }
      }
  }

  void silu_mul(float* gate, const float* up, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
  }

  void add(float* x, const float* y, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) x[i] += y[i];
  }

  void gather_rows(const float* x, std::size_t dim, std::span<const std::uint32_t> rows, float* out) {
    for (std::size_t i = 0; i < rows.size(); ++i)
      std::memmove(out + i * dim, x + std::size_t{rows[i]} * dim, dim * sizeof(float));
  }

 private:
  static void store_row(std::byte* base, DType dtype, std::size_t offset, const float* in, std::size_t n) {
    switch (dtype) {
      case DType::f16: f32_to_f16(in, reinterpret_cast<std::uint16_t*>(base) + offset, n); break;
      case DType::bf16: f32_to_bf16(in, reinterpret_cast<std::uint16_t*>(base) + offset, n); break;
      default: std::memcpy(reinterpret_cast<float*>(base) + offset, in, n * sizeof(float)); break;
    }
  }
  static void load_row(const std::byte* base, DType dtype, std::size_t offset, float* out, std::size_t n) {
    switch (dtype) {
      case DType::f16: f16_to_f32(reinterpret_cast<const std::uint16_t*>(base) + offset, out, n); break;
      case DType::bf16: bf16_to_f32(reinterpret_cast<const std::uint16_t*>(base) + offset, out, n); break;
      default: std::memcpy(out, reinterpret_cast<const float*>(base) + offset, n * sizeof(float)); break;
    }
  }

  ThreadPool* pool_;
  std::vector<std::vector<float>> buffers_;
  std::vector<double> inv_freq_;
  double theta_ = 0;
  std::vector<float> scratch_, kbuf_;
};

}  // namespace izwi::detail
