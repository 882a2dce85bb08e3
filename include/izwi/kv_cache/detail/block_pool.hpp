#pragma once
// BlockPool: the per-block bookkeeping both KV caches share — reference
// counts, the LRU free list, and the prefix hash a block may hold.
//
// Every per-block field lives in an array indexed by BlockId, so the pool
// allocates once, at construction, and never per block afterwards. Block 0 is
// the null block: it is never on the free list and never handed out, so a
// zero-initialised block table entry can never alias real data.
//
// The free list is an intrusive doubly linked list threaded through the
// `prev_`/`next_` arrays, with two sentinel nodes (indices size() and
// size() + 1) so that pop, remove-from-middle and append never test for an
// empty list or an end. Its head is the least recently freed block: allocation
// takes the head, freeing appends at the tail, so a cached block survives as
// long as possible before it is reused.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "izwi/core/hash.hpp"
#include "izwi/core/ids.hpp"

namespace izwi::detail {

class BlockPool {
 public:
  /// A pool of `num_usable_blocks` blocks numbered 1..num_usable_blocks (block
  /// 0 is the null block), all free, in ascending order from the head.
  explicit BlockPool(std::size_t num_usable_blocks);

  /// Usable blocks (the null block excluded).
  std::size_t num_usable_blocks() const noexcept { return num_usable_; }
  std::size_t num_free() const noexcept { return num_free_; }
  /// Free blocks that still hold a hash.
  std::size_t num_cached_free() const noexcept { return num_cached_free_; }

  // --- reference counts -------------------------------------------------------
  std::uint32_t ref_count(BlockId b) const noexcept { return ref_[b]; }
  /// Takes one more reference; a free block (ref 0) leaves the free list.
  void acquire(BlockId b) noexcept;
  /// Drops one reference; at zero the block goes to the free list's tail
  /// (keeping its hash, so a later hit can revive it). Returns true then.
  bool release(BlockId b) noexcept;

  // --- the free list ----------------------------------------------------------
  /// Takes the least recently freed block (the caller checked num_free() > 0)
  /// with one reference. If it held a hash, the hash is returned through
  /// `dropped` and cleared: lazy eviction happens only here.
  BlockId pop_free(bool& had_hash, Hash128& dropped) noexcept;
  /// Free blocks from head (next to be reused) to tail.
  template <class F>
  void for_each_free(F&& f) const {
    for (std::uint32_t b = next_[sentinel_head()]; b != sentinel_tail(); b = next_[b]) f(static_cast<BlockId>(b));
  }

  // --- prefix hashes ----------------------------------------------------------
  bool has_hash(BlockId b) const noexcept { return has_hash_[b] != 0; }
  const Hash128& hash(BlockId b) const noexcept { return hash_[b]; }
  void set_hash(BlockId b, const Hash128& h) noexcept;
  void drop_hash(BlockId b) noexcept;

  // --- pages written since last released (used by the unified cache) ----------
  /// True once a block was handed out fresh and its pages may be resident.
  bool dirty(BlockId b) const noexcept { return dirty_[b] != 0; }
  void clear_dirty(BlockId b) noexcept { dirty_[b] = 0; }

  /// First violation of the pool's own invariants, or empty: the free list is
  /// linked both ways, holds exactly the blocks with ref 0 (never block 0),
  /// and num_free()/num_cached_free() match it.
  std::string check_invariants() const;

 private:
  std::uint32_t sentinel_head() const noexcept { return static_cast<std::uint32_t>(num_usable_ + 1); }
  std::uint32_t sentinel_tail() const noexcept { return static_cast<std::uint32_t>(num_usable_ + 2); }
  void unlink(std::uint32_t b) noexcept;
  void append(std::uint32_t b) noexcept;

  std::size_t num_usable_;
  std::size_t num_free_ = 0;
  std::size_t num_cached_free_ = 0;
  // Indexed by block id; two extra entries at the end for the sentinels.
  std::vector<std::uint32_t> prev_;
  std::vector<std::uint32_t> next_;
  std::vector<std::uint32_t> ref_;
  std::vector<Hash128> hash_;
  std::vector<std::uint8_t> has_hash_;
  std::vector<std::uint8_t> dirty_;
};

}  // namespace izwi::detail

#include "izwi/kv_cache/detail/impl/block_pool.hpp"
