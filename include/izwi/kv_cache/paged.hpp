#pragma once
// PagedKVCache: the standard paged KV cache (vLLM's PagedAttention layout) in
// ordinary host memory. Satisfies izwi::KVCachePolicy
// (include/izwi/concepts/kv_cache.hpp, docs/concepts/kv_cache.md).
//
// The cache owns the K and V tensors of every layer, cut into blocks of
// BlockSize token positions. A sequence's block table maps its positions to
// blocks; position p of a sequence lives at slot
// `block_table[p / BlockSize] * BlockSize + p % BlockSize`, and slot s of layer l
// starts `s * shape().row_elements()` elements into layer(l).keys (and .values).
//
//   izwi::PagedKVCache<> kv(shape, {.byte_budget = 4ull << 30});
//   izwi::PrefixHit hit = kv.find_cached_prefix(seq);
//   if (kv.allocate_slots(seq, hit.num_tokens, n - hit.num_tokens, hit)) { ... }
//   kv.free(seq.id);
//
// Blocks come from a pool with block 0 reserved as the null block, an LRU free
// list and reference counts; prefix caching shares full blocks between
// sequences with the same chained key (tokens, cache salt, voice, audio).
// Not thread-safe: the engine calls it from its step loop only.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "izwi/concepts/kv_cache.hpp"
#include "izwi/concepts/memory_space.hpp"
#include "izwi/concepts/tags.hpp"
#include "izwi/core/ids.hpp"
#include "izwi/core/kv_cache_shape.hpp"
#include "izwi/core/request.hpp"
#include "izwi/kv_cache/detail/block_manager.hpp"
#include "izwi/kv_cache/detail/kv_storage.hpp"

namespace izwi {

struct PagedKVCacheConfig {
  /// Bytes for K/V storage, the null block included (vLLM's CPU default,
  /// VLLM_CPU_KVCACHE_SPACE, is 4 GiB). Untouched pages cost no resident
  /// memory unless commit_memory is set.
  std::size_t byte_budget = std::size_t{4} << 30;
  /// Exact number of usable blocks; overrides byte_budget when set.
  std::optional<std::size_t> num_blocks;
  /// Upper bound on blocks derived from byte_budget. A real model's block
  /// holds 100 KB or more, so this only bites for toy shapes, whose per-block
  /// bookkeeping would otherwise dwarf their K/V.
  std::size_t max_num_blocks = std::size_t{1} << 20;
  /// Share full blocks between sequences with equal prefixes.
  bool enable_prefix_caching = true;
  /// Also remember the partly filled last block of a finished sequence and,
  /// for a later sequence that starts with the same tokens (a beam forked from
  /// it, a chat's next turn), copy the matching rows into a block of its own,
  /// so only what is new is computed. Needs enable_prefix_caching.
  bool reuse_partial_blocks = true;
  /// Write every page of the storage (zeros) at construction, so the whole
  /// pool is resident from the start, as a server's is: its footprint is
  /// known when the model loads, not discovered as blocks are first used
  /// (which looks like a leak), and no step takes first-touch page faults.
  /// llama.cpp clears its KV buffer when it creates it; vLLM allocates its
  /// pool up front. izwi-server sets it. Off: pages become resident as blocks
  /// are first written.
  bool commit_memory = false;
};

template <std::size_t BlockSize = 16>
class PagedKVCache {
  static_assert(BlockSize > 0, "PagedKVCache needs at least one token per block");

 public:
  using policy_category = kv_cache_tag;
  using memory_space = host_space;
  using config_type = PagedKVCacheConfig;
  static constexpr std::size_t block_size_v = BlockSize;

  /// Allocates the storage. Throws izwi::invalid_argument naming the field
  /// when the shape is unusable (zero layers, heads or head_dim; a quantized
  /// dtype), the budget cannot hold one block besides the null block, or a
  /// pool to commit (commit_memory) is larger than the physical memory.
  PagedKVCache(KVCacheShape shape, PagedKVCacheConfig config = {});

  PagedKVCache(const PagedKVCache&) = delete;
  PagedKVCache& operator=(const PagedKVCache&) = delete;
  PagedKVCache(PagedKVCache&&) noexcept = default;
  PagedKVCache& operator=(PagedKVCache&&) noexcept = default;

  std::size_t block_size() const noexcept { return BlockSize; }
  const KVCacheShape& shape() const noexcept { return shape_; }
  const PagedKVCacheConfig& config() const noexcept { return config_; }

  /// Longest run of cached full blocks at the start of `seq.tokens`, then the
  /// most rows of a remembered partial block that continue it (with
  /// reuse_partial_blocks), at most tokens.size() - 1 tokens in all (the last
  /// token is recomputed for its logits).
  /// Takes no references: pass the hit to allocate_slots before any other call.
  /// Counts tokens.size() queried and the result's num_tokens hit.
  PrefixHit find_cached_prefix(const SequenceView& seq) { return blocks_.find_cached_prefix(seq); }

  /// Makes seq's block table cover positions [0, num_computed + num_new),
  /// adopting `hit` first when the sequence holds no blocks yet (a partial
  /// part's rows are copied into the sequence's next block here). Returns
  /// false, changing nothing, when the free blocks do not suffice or the hit
  /// is stale.
  bool allocate_slots(const SequenceView& seq, std::size_t num_computed, std::size_t num_new, PrefixHit hit = {}) {
    detail::BlockRowCopy copy;
    if (!blocks_.allocate_slots(seq, num_computed, num_new, hit, &copy)) return false;
    if (copy.rows != 0) layout_.copy_block_rows(storage_.data(), copy.from, copy.to, copy.rows, row_bytes());
    return true;
  }

  /// Releases the sequence's blocks, last block first, remembering a partly
  /// filled last block (reuse_partial_blocks). Unknown ids are ignored.
  void free(RequestId id) noexcept { blocks_.free(id); }
  /// free(id) for a sequence preempted after its step was planned: blocks past
  /// its first num_written_tokens tokens lose their prefix-cache keys (unwritten).
  void free_unwritten(RequestId id, std::size_t num_written_tokens) noexcept {
    blocks_.free_unwritten(id, num_written_tokens);
  }

  /// The sequence's blocks in position order; empty for an unknown id.
  std::span<const BlockId> block_table(RequestId id) const noexcept { return blocks_.block_table(id); }

  /// Every field of KVCacheStats. total_bytes is the storage allocated for K
  /// and V, null block included; evictions counts cached blocks whose key was
  /// dropped to reuse them.
  KVCacheStats stats() const noexcept;

  /// K and V storage of `layer`; both null for a layer past shape().num_layers.
  KVLayerView layer(std::uint32_t layer) noexcept { return layout_.view(storage_.data(), layer); }

  // --- introspection, for tests and metrics -----------------------------------
  std::uint32_t ref_count(BlockId b) const noexcept { return blocks_.ref_count(b); }
  std::size_t num_sequences() const noexcept { return blocks_.num_sequences(); }
  /// Free blocks remembered as partly filled last blocks.
  std::size_t num_partial_blocks() const noexcept { return blocks_.num_partial_blocks(); }
  /// First violated invariant of the block bookkeeping, or empty (see
  /// detail::BlockManager::check_invariants).
  std::string check_invariants() const { return blocks_.check_invariants(); }

 private:
  static std::size_t usable_blocks(const KVCacheShape& shape, const PagedKVCacheConfig& config);
  /// `bytes`, or invalid_argument when commit_memory asks for more than the
  /// machine's physical memory (it would only end in the OOM killer).
  static std::size_t committable(std::size_t bytes, const PagedKVCacheConfig& config);
  std::size_t row_bytes() const noexcept { return shape_.row_elements() * dtype_size(shape_.dtype); }

  KVCacheShape shape_;
  PagedKVCacheConfig config_;
  std::size_t bytes_per_block_;
  detail::BlockManager blocks_;
  detail::KVStorageLayout layout_;
  detail::AlignedHostBuffer storage_;
};

}  // namespace izwi

#include "izwi/kv_cache/impl/paged.hpp"
