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
//     keeps the key; the second is an ordinary private block;
//   - optionally (reuse_partial_blocks), the partly filled last block of a
//     freed sequence is remembered too, under the key of the blocks before it,
//     with its tokens. A later sequence that starts with those blocks and some
//     of those tokens gets the matching rows copied into a block of its own
//     (never shared: it writes the rest). This is what makes beams forked from
//     one parent, and a chat's next turn, recompute only what is new.
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

/// Rows the cache must copy when an allocation adopts a partial-block hit:
/// the first `rows` positions of block `from` into block `to`, in every layer's
/// K and V, before the step runs. rows == 0: nothing to copy.
struct BlockRowCopy {
  BlockId from = null_block;
  BlockId to = null_block;
  std::size_t rows = 0;
};

class BlockManager {
 public:
  /// reuse_partial_blocks only matters with prefix caching on, and only for a
  /// cache that performs the BlockRowCopy allocate_slots asks for.
  BlockManager(std::size_t block_size, std::size_t num_usable_blocks, bool enable_prefix_caching,
               bool reuse_partial_blocks = false);

  std::size_t block_size() const noexcept { return block_size_; }
  bool prefix_caching_enabled() const noexcept { return prefix_caching_; }

  /// KVCachePolicy::find_cached_prefix. Counts `seq.tokens.size()` tokens as
  /// queried and the returned `num_tokens` as hit, on every call that looks
  /// (caching enabled and the sequence cacheable), as vLLM's counters do.
  PrefixHit find_cached_prefix(const SequenceView& seq);
  /// KVCachePolicy::allocate_slots. A hit with a partial part sets `copy`
  /// (the caller copies those rows before anything writes the cache); such a
  /// hit is refused, as stale, unless it comes from the lookup just before,
  /// for this sequence, and its source block still holds those tokens.
  bool allocate_slots(const SequenceView& seq, std::size_t num_computed, std::size_t num_new, PrefixHit hit,
                      BlockRowCopy* copy = nullptr);
  /// KVCachePolicy::free: releases the blocks last to first; unknown ids are
  /// ignored. With reuse_partial_blocks, a partly filled last block is remembered.
  void free(RequestId id) noexcept;
  /// As free(id), after dropping the prefix-cache keys of the blocks past
  /// the sequence's first `num_written_tokens` tokens: blocks allocated (and
  /// registered) for a step that did not run for it hold no K/V. Its last
  /// block is remembered only if every token allocated for was written.
  void free_unwritten(RequestId id, std::size_t num_written_tokens) noexcept;
  std::span<const BlockId> block_table(RequestId id) const noexcept;

  /// Fills the block and counter fields of `stats` (not the byte fields).
  void fill_stats(KVCacheStats& stats) const noexcept;

  /// Drops the keys of every cached free block (counted as evictions) and the
  /// remembered partial blocks (not counted), and appends those blocks to
  /// `evicted`. Returns how many full blocks.
  std::size_t evict_cached_free_blocks(std::vector<BlockId>& evicted);
  /// Grows by one each time a block returns to the free list; lets a caller
  /// skip a sweep of the free list when nothing was freed since the last one.
  std::uint64_t free_generation() const noexcept { return free_generation_; }

  // --- introspection ----------------------------------------------------------
  std::uint32_t ref_count(BlockId b) const noexcept;
  /// Free blocks remembered as a freed sequence's partly filled last block.
  std::size_t num_partial_blocks() const noexcept { return tails_.size(); }
  /// Sequences that have a block table (allocated and not yet freed).
  std::size_t num_sequences() const noexcept { return index_.size(); }
  const BlockPool& pool() const noexcept { return pool_; }
  BlockPool& pool() noexcept { return pool_; }
  /// First violation of the manager's invariants, or empty: the pool's own
  /// (see BlockPool), ref counts equal the number of tables holding each
  /// block, no table holds the null block, every cache-map entry points to a
  /// block that holds that key and every keyed block is in the map, and a
  /// registered block's key matches its sequence's chained key, and every
  /// remembered partial block is free, holds no full key and is listed once.
  std::string check_invariants() const;

 private:
  struct SequenceBlocks {
    std::vector<BlockId> blocks;
    /// Chained keys of the leading full blocks, computed once each.
    std::vector<Hash128> hashes;
    /// Leading blocks already offered to the cache map.
    std::size_t num_registered = 0;
    PrefixCacheKeys keys;
    /// Tokens the last allocation covered, and those past the last full
    /// block among them (kept only with reuse_partial_blocks).
    std::size_t num_known = 0;
    std::vector<TokenId> tail;
  };
  /// A freed sequence's partly filled last block and the tokens its rows hold.
  struct PartialTail {
    BlockId block = null_block;
    std::vector<TokenId> tokens;
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
  bool reuses_tails(const PrefixCacheKeys& keys) const noexcept { return reuse_partial_ && caches(keys); }
  /// The remembered block under `key` whose tokens best continue `tokens` at
  /// `begin`, sharing at most `max_rows` of them.
  PartialBlockHit longest_tail(const Hash128& key, std::span<const TokenId> tokens, std::size_t begin,
                               std::size_t max_rows) const;
  /// True when `hit.partial` can still be copied for `seq` (see allocate_slots).
  bool tail_hit_valid(const SequenceView& seq, const PrefixHit& hit, bool memo_matches) const;
  void remember_tail(SequenceBlocks& s) noexcept;
  void forget_tail(BlockId b) noexcept;
  void release_blocks(RequestId id, bool keep_tail) noexcept;

  std::size_t block_size_;
  bool prefix_caching_;
  bool reuse_partial_;
  BlockPool pool_;
  PrefixHasher hasher_;
  std::unordered_map<Hash128, BlockId, Hash128Hasher> cached_;
  /// Remembered partial blocks by the tail key of their position (several
  /// sequences may leave different tokens after the same full blocks), and
  /// each remembered block's tail key.
  std::unordered_multimap<Hash128, PartialTail, Hash128Hasher> tails_;
  std::unordered_map<BlockId, Hash128> tail_key_of_;
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
