#pragma once
// CpuOps: the operations a model family's forward pass asks of the CPU
// backend (the list above Qwen3::forward), mapped onto the xsimd kernels of
// include/izwi/kernels/cpu and the executor's thread pool, with scratch
// buffers that grow once and are reused every step.

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "izwi/concepts/kv_cache.hpp"
#include "izwi/concepts/tags.hpp"
#include "izwi/core/aligned_allocator.hpp"
#include "izwi/core/dtype.hpp"
#include "izwi/core/error.hpp"
#include "izwi/core/ids.hpp"
#include "izwi/core/step.hpp"
#include "izwi/kernels/cpu/thread_pool.hpp"
#include "izwi/kernels/cpu/kernels.hpp"
#include "izwi/models/detail/whisper_cpu_math.hpp"

namespace izwi::detail {

class CpuOps {
 public:
  using policy_category = backend_ops_tag;
  using weight_type = kernels::cpu::WeightMatrix;
  /// One sequence of the step for attention: query rows [first_row,
  /// first_row + num_tokens) at positions [num_computed, num_computed +
  /// num_tokens); keys and values come through its block table.
  using attention_sequence = kernels::cpu::AttentionSequence;
  static attention_sequence make_sequence(const ScheduledSequence& seq, std::size_t first_row) {
    return {seq.num_computed_tokens, seq.num_tokens, seq.block_table, first_row};
  }

  explicit CpuOps(ThreadPool& pool) : pool_(&pool) {}

  /// On: every matmul, matmuls and attention computes each row the same way
  /// whatever the other rows of the step and however many rows its sequence
  /// has in it (kernels::cpu::matmul_group_batch_invariant, attention with
  /// split_decode off), so a row's bits depend on its own inputs only. Off
  /// (the default): the fastest kernel for each row count, whose last bits
  /// depend on the batch.
  void set_batch_invariant(bool on) noexcept { batch_invariant_ = on; }
  bool batch_invariant() const noexcept { return batch_invariant_; }

  /// Scratch slot `slot` of at least `floats` floats, 64-byte aligned (the
  /// kernels' vector loads; kernels::cpu's GEMVs copy unaligned rows first).
  float* buffer(std::size_t slot, std::size_t floats) {
    if (buffers_.size() <= slot) buffers_.resize(slot + 1);
    if (buffers_[slot].size() < floats) buffers_[slot].resize(floats);
    return buffers_[slot].data();
  }

  /// Rows of `table` for `tokens`. An id outside the table throws
  /// izwi::invalid_argument (the engine's barrier fails that request) rather
  /// than reading past the table: the gather's own check is only an assert.
  void embed(const kernels::cpu::WeightMatrix& table, std::span<const TokenId> tokens, float* out) {
    for (TokenId t : tokens)
      if (t < 0 || static_cast<std::size_t>(t) >= table.rows)
        throw invalid_argument("token", "token id " + std::to_string(t) + " is outside the embedding table (" +
                                            std::to_string(table.rows) + " rows)");
    kernels::cpu::embedding_gather(table, tokens, out, table.cols);
  }

  void matmul(const float* x, std::size_t m, const kernels::cpu::WeightMatrix& w, float* y) {
    if (batch_invariant_) {
      const kernels::cpu::MatmulOutput out{&w, y, w.rows};
      kernels::cpu::matmul_group_batch_invariant(x, w.cols, m, std::span(&out, 1), *pool_);
      return;
    }
    kernels::cpu::matmul(x, m, w.cols, w, y, *pool_);
  }

  /// One weight and its dense output (y[m][weight->rows]) for matmuls().
  struct MatmulTarget {
    const kernels::cpu::WeightMatrix* weight;
    float* y;
  };
  /// matmul() for up to kernels::cpu::matmul_group_max weights over the same
  /// x (all with cols == x's width), in one parallel pass.
  void matmuls(const float* x, std::size_t m, std::initializer_list<MatmulTarget> targets) {
    assert(targets.size() >= 1 && targets.size() <= kernels::cpu::matmul_group_max);
    kernels::cpu::MatmulOutput outputs[kernels::cpu::matmul_group_max];
    std::size_t count = 0;
    for (const MatmulTarget& target : targets) outputs[count++] = {target.weight, target.y, target.weight->rows};
    if (batch_invariant_)
      kernels::cpu::matmul_group_batch_invariant(x, targets.begin()->weight->cols, m, std::span(outputs, count), *pool_);
    else
      kernels::cpu::matmul_group(x, targets.begin()->weight->cols, m, std::span(outputs, count), *pool_);
  }

  void rms_norm(const float* x, std::size_t rows, std::size_t dim, const float* weight, float eps, float* out) {
    kernels::cpu::rms_norm(x, dim, rows, dim, weight, eps, out, dim);
  }

  void rms_norm_heads(float* x, std::size_t rows, std::size_t heads, std::size_t head_dim, const float* weight,
                      float eps) {
    kernels::cpu::rms_norm_heads(x, heads * head_dim, rows, heads, head_dim, weight, eps);
  }

  /// NeoX rotary over all heads of each row; the cos/sin table is built once
  /// per (head_dim, theta) and regrown when a longer position arrives.
  void rope(float* x, std::size_t rows, std::size_t heads, std::size_t head_dim,
            std::span<const std::int64_t> positions, double theta) {
    std::int64_t furthest = 0;
    for (std::int64_t p : positions) furthest = std::max(furthest, p);
    const auto needed = static_cast<std::size_t>(furthest) + 1;
    if (!rotary_ || rotary_head_dim_ != head_dim || rotary_theta_ != theta || rotary_positions_ < needed) {
      rotary_positions_ = std::max<std::size_t>(needed * 2, 4096);
      rotary_ = std::make_unique<kernels::cpu::RotaryTable>(head_dim, theta, rotary_positions_);
      rotary_head_dim_ = head_dim;
      rotary_theta_ = theta;
    }
    (void)rows;
    kernels::cpu::apply_rotary(x, heads * head_dim, heads, head_dim, positions, *rotary_);
  }

  void store_kv(const KVLayerView& view, DType dtype, const float* k, const float* v,
                std::span<const std::int64_t> slots, std::size_t kv_heads, std::size_t head_dim) {
    const std::size_t row = kv_heads * head_dim;
    kernels::cpu::store_kv(k, row, v, row, slots, view, kv_heads, head_dim, dtype);
  }

  void attention(const float* q, std::span<const attention_sequence> sequences, const KVLayerView& view, DType dtype,
                 std::size_t block_size, std::size_t heads, std::size_t kv_heads, std::size_t head_dim, float* out) {
    kernels::cpu::AttentionShape shape;
    shape.num_heads = heads;
    shape.num_kv_heads = kv_heads;
    shape.head_dim = head_dim;
    shape.block_size = block_size;
    shape.cache_dtype = dtype;
    shape.split_decode = !batch_invariant_;
    kernels::cpu::paged_attention(q, sequences, view, shape, out, *pool_);
  }

  void silu_mul(float* gate, const float* up, std::size_t n) { kernels::cpu::silu_mul(gate, up, gate, n); }

  void add(float* x, const float* y, std::size_t n) { kernels::cpu::add_inplace(x, y, n); }

  void gather_rows(const float* x, std::size_t dim, std::span<const std::uint32_t> rows, float* out) {
    for (std::size_t i = 0; i < rows.size(); ++i)
      std::memmove(out + i * dim, x + std::size_t{rows[i]} * dim, dim * sizeof(float));
  }

  // --- Encoder-decoder (Whisper) operations; the math lives in
  // models/detail/whisper_cpu_math.hpp until it moves into kernels/cpu. ---

  void layer_norm(const float* x, std::size_t rows, std::size_t dim, const float* weight, const float* bias, float eps,
                  float* out) {
    whisper_cpu::layer_norm(x, rows, dim, weight, bias, eps, out, *pool_);
  }
  void gelu(float* x, std::size_t n) { whisper_cpu::gelu(x, n, *pool_); }
  void add_bias(float* x, std::size_t rows, std::size_t dim, const float* bias) {
    whisper_cpu::add_bias(x, rows, dim, bias);
  }
  /// out[out_len][w.rows] = Conv1d(x) without bias, as im2col into `columns`
  /// (out_len × w.cols floats) and one GEMM; w is [out][in × kernel].
  void conv1d(const float* x, std::size_t channels, std::size_t length, bool time_major,
              const kernels::cpu::WeightMatrix& w, std::size_t kernel, std::size_t stride, std::size_t pad,
              float* columns, float* out) {
    whisper_cpu::im2col_1d(x, channels, length, time_major, kernel, stride, pad, columns, *pool_);
    matmul(columns, whisper_cpu::conv1d_length(length, kernel, stride, pad), w, out);
  }
  void split_heads(const float* k, const float* v, std::size_t n, std::size_t heads, std::size_t head_dim,
                   float* k_heads, float* v_heads_t) {
    whisper_cpu::split_heads(k, v, n, heads, head_dim, k_heads, v_heads_t);
  }
  void dense_attention(const float* q, std::size_t rows, const float* k_heads, const float* v_heads_t, std::size_t n,
                       std::size_t heads, std::size_t head_dim, float* scores, float* out) {
    whisper_cpu::dense_attention(q, rows, k_heads, v_heads_t, n, heads, head_dim, scores, out, *pool_);
  }

 private:
  ThreadPool* pool_;
  bool batch_invariant_ = false;
  std::vector<std::vector<float, AlignedAllocator<float>>> buffers_;
  std::unique_ptr<kernels::cpu::RotaryTable> rotary_;
  std::size_t rotary_head_dim_ = 0;
  std::size_t rotary_positions_ = 0;
  double rotary_theta_ = 0;
};

}  // namespace izwi::detail
