#pragma once
// Paged attention over a KV cache, and the write of a step's K/V into it.
//
// The cache stores each layer's K and V as [block][position in block][kv
// head][head dim] in the cache dtype (F32, F16 or BF16), see KVLayerView:
// token slot s = block * block_size + offset starts at element
// s * (num_kv_heads * head_dim). A sequence's position p lives in block
// block_table[p / block_size] at offset p % block_size.
//
// One call serves a whole step, whatever mixes of decode tokens (one query
// each) and prefill chunks it holds: query token i of a sequence sits at
// position num_computed + i and attends causally to positions [0, that
// position] of its own sequence — its cached prefix and the chunk's earlier
// tokens. Store the step's K/V first (store_kv), then attend.
//
// A sequence may narrow what its queries see to a range of its positions:
// `first_visible` hides the positions before it (an encoder-decoder model's
// decoder tokens follow the audio's cross-attention K/V in the same blocks,
// and its self-attention starts after them), and `visible_end`, when set,
// replaces the causal limit with a fixed end for every query (cross-attention
// over positions [first_visible, visible_end), whatever the query's position).
//
// Grouped-query attention: query head h reads kv head h / (num_heads /
// num_kv_heads). Scores are scaled by `scale` (1/sqrt(head_dim) by default)
// and normalised with an online softmax over tiles of keys, so no score
// matrix is materialised for long contexts. Work is split over (sequence, kv
// head, block of query tokens) tasks; a task widens each K/V tile once and
// reuses it for every query head of its group and every query token of its
// block. No allocation per call beyond the pool's scratch.

#include <cstddef>
#include <cstdint>
#include <span>

#include "izwi/concepts/kv_cache.hpp"
#include "izwi/core/dtype.hpp"
#include "izwi/core/ids.hpp"
#include "izwi/kernels/cpu/thread_pool.hpp"

namespace izwi::kernels::cpu {

using ThreadPool = izwi::detail::ThreadPool;

/// One sequence of a step, as paged_attention sees it.
struct AttentionSequence {
  /// Tokens already in the cache before this step's tokens (its position offset).
  std::size_t num_computed = 0;
  /// Query tokens of this sequence in this step (their K/V already stored).
  std::size_t num_tokens = 0;
  /// The sequence's KV blocks in position order.
  std::span<const BlockId> block_table;
  /// Row of q and out holding this sequence's first query token.
  std::size_t first_row = 0;
  /// Positions before it are not attended to.
  std::size_t first_visible = 0;
  /// 0: causal (query i sees up to position num_computed + i). Otherwise
  /// every query sees positions [first_visible, visible_end).
  std::size_t visible_end = 0;

  /// One past the last position query token t (0-based in this step) sees.
  std::size_t visible_limit(std::size_t t) const noexcept { return visible_end ? visible_end : num_computed + t + 1; }
};

/// The geometry of one attention layer and its cache.
struct AttentionShape {
  std::size_t num_heads = 0;
  std::size_t num_kv_heads = 0;
  std::size_t head_dim = 0;
  /// Tokens per KV-cache block.
  std::size_t block_size = 0;
  DType cache_dtype = DType::f32;
  /// Score scale; 0 means 1 / sqrt(head_dim).
  float scale = 0.0f;
  /// Row strides in floats of q and out; 0 means dense (num_heads * head_dim).
  std::size_t q_ld = 0;
  std::size_t out_ld = 0;
  /// A sequence with one query row (decode) is split over its context in
  /// chunks on several threads and the chunks merged, which rounds otherwise
  /// than the multi-row path (one pass over the keys per row). false runs
  /// one-row sequences through the multi-row path too, so a row's output
  /// does not depend on how many rows of its sequence share the step (a
  /// prompt cut into chunks, a recomputation after preemption); decode is
  /// then split over kv heads only.
  bool split_decode = true;
};

/// out[row][h][:] = softmax(q[row][h] · Kᵀ * scale) · V over each query row's
/// visible positions, for every sequence in `seqs`. q and out are
/// [rows][num_heads][head_dim] (with the strides of `shape`); rows not
/// covered by a sequence are left untouched.
inline void paged_attention(const float* q, std::span<const AttentionSequence> seqs, const KVLayerView& kv,
                            const AttentionShape& shape, float* out, ThreadPool& pool) noexcept;

/// Writes row t of k and of v (num_kv_heads * head_dim floats each, rows ldk /
/// ldv floats apart) at cache slot slots[t], converted to the cache dtype.
/// Negative slots (padding) are skipped.
inline void store_kv(const float* k, std::size_t ldk, const float* v, std::size_t ldv,
                     std::span<const std::int64_t> slots, const KVLayerView& kv, std::size_t num_kv_heads,
                     std::size_t head_dim, DType cache_dtype) noexcept;

}  // namespace izwi::kernels::cpu

#include "izwi/kernels/cpu/impl/attention.hpp"
