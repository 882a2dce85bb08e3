#pragma once
// BlockManager: everything a KV cache does with blocks, apart from holding
// the K/V bytes — per-sequence block tables, prefix caching and the counters
// behind KVCacheStats. PagedKVCache and UnifiedKVCache each own one and differ
// only in where their storage lives and how they react to memory pressure.
//
// Prefix caching, in short (docs/concepts/kv_cache.md has the long form):
//   - only full blocks are cached, keyed by a chained hash (prefix_hash.hpp);
//   - a block's key is registered when the block is allocated and its tokens
//     are known (as vLLM does): executors write a layer's K/V before attention
//     reads it, so another sequence that hits the block in the same step reads
//     data written earlier in that same layer pass;
//   - a freed block keeps its key on the free list and can be revived by a hit;
//     it loses the key only when it is handed out fresh (lazy eviction);
//   - when two sequences compute the same content, the first block registered
//     keeps the key; the second is an ordinary private block.
//
// A RequestId names one token sequence until free(id): the manager keeps the
// keys it computed for a sequence and only hashes blocks it has not seen.
// Not thread-safe; the engine calls it from its step loop only.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "izwi/concepts/kv_cache.hpp"
#include "izwi/core/hash.hpp"
#include "izwi/core/ids.hpp"
#include "izwi/core/request.hpp"
#include "izwi/kv_cache/detail/block_pool.hpp"
#include "izwi/kv_cache/detail/prefix_hash.hpp"

namespace izwi::detail {

class BlockManager {
 public:
  BlockManager(std::size_t block_size, std::size_t num_usable_blocks, bool enable_prefix_caching);

  std::size_t block_size() const noexcept { return block_size_; }
  bool prefix_caching_enabled() const noexcept { return prefix_caching_; }

  /// KVCachePolicy::find_cached_prefix. Counts `seq.tokens.size()` tokens as
  /// queried and the returned `num_tokens` as hit, on every call that looks
  /// (caching enabled and the sequence cacheable), as vLLM's counters do.
  PrefixHit find_cached_prefix(const SequenceView& seq);
  /// KVCachePolicy::allocate_slots.
  bool allocate_slots(const SequenceView& seq, std::size_t num_computed, std::size_t num_new, PrefixHit hit);
  /// KVCachePolicy::free: releases the blocks last to first; unknown ids are ignored.
  void free(RequestId id) noexcept;
  /// As free(id), after dropping the prefix-cache keys of the blocks past
  /// the sequence's first `num_written_tokens` tokens: blocks allocated (and
  /// registered) for a step that did not run for it hold no K/V.
  void free_unwritten(RequestId id, std::size_t num_written_tokens) noexcept;
  std::span<const BlockId> block_table(RequestId id) const noexcept;

  /// Fills the block and counter fields of `stats` (not the byte fields).
  void fill_stats(KVCacheStats& stats) const noexcept;

  /// Drops the keys of every cached free block (counted as evictions) and
  /// appends those blocks to `evicted`. Returns how many.
  std::size_t evict_cached_free_blocks(std::vector<BlockId>& evicted);
  /// Grows by one each time a block returns to the free list; lets a caller
  /// skip a sweep of the free list when nothing was freed since the last one.
  std::uint64_t free_generation() const noexcept { return free_generation_; }

  // --- introspection ----------------------------------------------------------
  std::uint32_t ref_count(BlockId b) const noexcept;
  /// Sequences that have a block table (allocated and not yet freed).
  std::size_t num_sequences() const noexcept { return index_.size(); }
  const BlockPool& pool() const noexcept { return pool_; }
  BlockPool& pool() noexcept { return pool_; }
  /// First violation of the manager's invariants, or empty: the pool's own
  /// (see BlockPool), ref counts equal the number of tables holding each
  /// block, no table holds the null block, every cache-map entry points to a
  /// block that holds that key and every keyed block is in the map, and a
  /// registered block's key matches its sequence's chained key.
  std::string check_invariants() const;

 private:
  struct SequenceBlocks {
    std::vector<BlockId> blocks;
    /// Chained keys of the leading full blocks, computed once each.
    std::vector<Hash128> hashes;
    /// Leading blocks already offered to the cache map.
    std::size_t num_registered = 0;
    PrefixCacheKeys keys;
  };
  /// Keys computed by find_cached_prefix for a sequence that has no table
  /// yet; allocate_slots takes them over instead of hashing again.
  struct LookupMemo {
    RequestId id = 0;
    bool valid = false;
    PrefixCacheKeys keys;
    std::vector<Hash128> hashes;
  };

  bool caches(const PrefixCacheKeys& keys) const noexcept { return prefix_caching_ && keys.cacheable; }
  static const PrefixCacheKeys& keys_of(const SequenceView& seq) noexcept;
  SequenceBlocks* find(RequestId id) noexcept;
  const SequenceBlocks* find(RequestId id) const noexcept;
  SequenceBlocks& create(RequestId id, const PrefixCacheKeys& keys);
  /// Extends `hashes` to the first `num_blocks` full blocks of `tokens`.
  void extend_hashes(std::vector<Hash128>& hashes, std::size_t num_blocks, std::span<const TokenId> tokens,
                     const PrefixCacheKeys& keys) noexcept;
  void register_full_blocks(SequenceBlocks& s, std::span<const TokenId> tokens, std::size_t num_known_tokens);
  void forget_key(BlockId b, const Hash128& key) noexcept;

  std::size_t block_size_;
  bool prefix_caching_;
  BlockPool pool_;
  PrefixHasher hasher_;
  std::unordered_map<Hash128, BlockId, Hash128Hasher> cached_;
  std::unordered_map<RequestId, std::uint32_t> index_;
  std::vector<SequenceBlocks> sequences_;
  std::vector<std::uint32_t> spare_sequences_;
  LookupMemo memo_;
  std::vector<BlockId> hit_scratch_;
  std::uint64_t queries_ = 0;
  std::uint64_t hits_ = 0;
  std::uint64_t evictions_ = 0;
  std::uint64_t free_generation_ = 0;
};

}  // namespace izwi::detail

#include "izwi/kv_cache/detail/impl/block_manager.hpp"
