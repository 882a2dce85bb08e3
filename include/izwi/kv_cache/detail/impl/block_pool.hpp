#pragma once

#include <limits>
#include <string>

#include "izwi/core/error.hpp"

namespace izwi::detail {

inline BlockPool::BlockPool(std::size_t num_usable_blocks) : num_usable_(num_usable_blocks) {
  // Ids 1..n plus two sentinels must fit a BlockId.
  if (num_usable_blocks == 0 || num_usable_blocks > std::numeric_limits<BlockId>::max() - 3u) {
    throw invalid_argument("num_blocks", "a KV cache needs between 1 and 2^32-4 usable blocks, got " +
                                             std::to_string(num_usable_blocks));
  }
  const std::size_t n = num_usable_ + 3;  // null block, usable blocks, two sentinels
  prev_.assign(n, 0);
  next_.assign(n, 0);
  ref_.assign(n, 0);
  hash_.assign(n, Hash128{});
  has_hash_.assign(n, 0);
  dirty_.assign(n, 0);
  next_[sentinel_head()] = sentinel_tail();
  prev_[sentinel_tail()] = sentinel_head();
  for (std::uint32_t b = 1; b <= num_usable_; ++b) append(b);
}

inline void BlockPool::unlink(std::uint32_t b) noexcept {
  next_[prev_[b]] = next_[b];
  prev_[next_[b]] = prev_[b];
  prev_[b] = next_[b] = 0;
  --num_free_;
  if (has_hash_[b]) --num_cached_free_;
}

inline void BlockPool::append(std::uint32_t b) noexcept {
  const std::uint32_t last = prev_[sentinel_tail()];
  prev_[b] = last;
  next_[b] = sentinel_tail();
  next_[last] = b;
  prev_[sentinel_tail()] = b;
  ++num_free_;
  if (has_hash_[b]) ++num_cached_free_;
}

inline void BlockPool::acquire(BlockId b) noexcept {
  if (ref_[b]++ == 0) unlink(b);
}

inline bool BlockPool::release(BlockId b) noexcept {
  if (--ref_[b] != 0) return false;
  append(b);
  return true;
}

inline BlockId BlockPool::pop_free(bool& had_hash, Hash128& dropped) noexcept {
  const std::uint32_t b = next_[sentinel_head()];
  unlink(b);
  ref_[b] = 1;
  dirty_[b] = 1;
  had_hash = has_hash_[b] != 0;
  if (had_hash) {
    dropped = hash_[b];
    has_hash_[b] = 0;
    hash_[b] = Hash128{};
  }
  return static_cast<BlockId>(b);
}

inline void BlockPool::set_hash(BlockId b, const Hash128& h) noexcept {
  if (!has_hash_[b] && ref_[b] == 0) ++num_cached_free_;
  hash_[b] = h;
  has_hash_[b] = 1;
}

inline void BlockPool::drop_hash(BlockId b) noexcept {
  if (!has_hash_[b]) return;
  if (ref_[b] == 0) --num_cached_free_;
  has_hash_[b] = 0;
  hash_[b] = Hash128{};
}

inline std::string BlockPool::check_invariants() const {
  if (ref_[null_block] != 0 || prev_[null_block] != 0 || next_[null_block] != 0) {
    return "the null block is referenced or linked into the free list";
  }
  std::vector<std::uint8_t> seen(num_usable_ + 1, 0);
  std::size_t count = 0;
  std::size_t cached = 0;
  std::uint32_t before = sentinel_head();
  for (std::uint32_t b = next_[sentinel_head()]; b != sentinel_tail(); b = next_[b]) {
    if (b == null_block || b > num_usable_) return "free list reaches invalid block " + std::to_string(b);
    if (seen[b]) return "free list visits block " + std::to_string(b) + " twice";
    if (prev_[b] != before) return "free list back link of block " + std::to_string(b) + " is wrong";
    if (ref_[b] != 0) {
      return "block " + std::to_string(b) + " is on the free list with ref count " + std::to_string(ref_[b]);
    }
    seen[b] = 1;
    ++count;
    if (has_hash_[b]) ++cached;
    before = b;
  }
  if (prev_[sentinel_tail()] != before) return "free list tail sentinel points to the wrong block";
  if (count != num_free_) {
    return "free list holds " + std::to_string(count) + " blocks but num_free is " + std::to_string(num_free_);
  }
  if (cached != num_cached_free_) {
    return "free list holds " + std::to_string(cached) + " cached blocks but the counter says " +
           std::to_string(num_cached_free_);
  }
  for (std::uint32_t b = 1; b <= num_usable_; ++b) {
    if (ref_[b] == 0 && !seen[b]) return "block " + std::to_string(b) + " has ref count 0 but is not on the free list";
  }
  return {};
}

}  // namespace izwi::detail
