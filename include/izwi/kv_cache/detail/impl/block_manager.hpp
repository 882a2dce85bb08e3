#pragma once

#include <algorithm>
#include <string>

namespace izwi::detail {

namespace block_manager_detail {
inline bool same_keys(const PrefixCacheKeys& a, const PrefixCacheKeys& b) noexcept {
  return a.root == b.root && a.audio_hash == b.audio_hash && a.audio_offset == b.audio_offset &&
         a.audio_length == b.audio_length && a.cacheable == b.cacheable;
}
}  // namespace block_manager_detail

inline BlockManager::BlockManager(std::size_t block_size, std::size_t num_usable_blocks, bool enable_prefix_caching,
                                  bool reuse_partial_blocks)
    : block_size_(block_size),
      prefix_caching_(enable_prefix_caching),
      reuse_partial_(enable_prefix_caching && reuse_partial_blocks && block_size > 1),
      pool_(num_usable_blocks),
      hasher_(block_size) {
  // A hit never holds more than every block; lookups then never allocate for it.
  if (enable_prefix_caching) hit_scratch_.reserve(num_usable_blocks);
}

inline const PrefixCacheKeys& BlockManager::keys_of(const SequenceView& seq) noexcept {
  // No keys: no salt, no voice, no audio — shared by token ids alone, as in vLLM.
  static const PrefixCacheKeys no_extra_keys{};
  return seq.keys ? *seq.keys : no_extra_keys;
}

inline BlockManager::SequenceBlocks* BlockManager::find(RequestId id) noexcept {
  const auto it = index_.find(id);
  return it == index_.end() ? nullptr : &sequences_[it->second];
}

inline const BlockManager::SequenceBlocks* BlockManager::find(RequestId id) const noexcept {
  const auto it = index_.find(id);
  return it == index_.end() ? nullptr : &sequences_[it->second];
}

inline BlockManager::SequenceBlocks& BlockManager::create(RequestId id, const PrefixCacheKeys& keys) {
  const bool reuse = !spare_sequences_.empty();
  const std::uint32_t slot = reuse ? spare_sequences_.back() : static_cast<std::uint32_t>(sequences_.size());
  if (!reuse) {
    sequences_.emplace_back();
    // free() is noexcept: returning this slot must never have to grow the spare list.
    spare_sequences_.reserve(sequences_.size());
  }
  index_.emplace(id, slot);
  if (reuse) spare_sequences_.pop_back();
  SequenceBlocks& s = sequences_[slot];
  s.keys = keys;
  s.num_registered = 0;
  return s;
}

inline void BlockManager::extend_hashes(std::vector<Hash128>& hashes, std::size_t num_blocks,
                                        std::span<const TokenId> tokens, const PrefixCacheKeys& keys) noexcept {
  for (std::size_t i = hashes.size(); i < num_blocks; ++i) {
    const Hash128 parent = i == 0 ? Hash128{} : hashes[i - 1];
    hashes.push_back(hasher_(parent, i, tokens.subspan(i * block_size_, block_size_), keys));
  }
}

inline PrefixHit BlockManager::find_cached_prefix(const SequenceView& seq) {
  hit_scratch_.clear();
  SequenceBlocks* existing = find(seq.id);
  const PrefixCacheKeys& keys = existing ? existing->keys : keys_of(seq);
  if (!caches(keys)) return {};
  const std::size_t n = seq.tokens.size();
  queries_ += n;
  if (n == 0) return {};
  // The last token is always recomputed: its logits are needed to sample.
  const std::size_t max_blocks = (n - 1) / block_size_;

  std::vector<Hash128>* hashes;
  if (existing) {
    hashes = &existing->hashes;
  } else {
    if (!memo_.valid || memo_.id != seq.id || !block_manager_detail::same_keys(memo_.keys, keys)) {
      memo_.id = seq.id;
      memo_.keys = keys;
      memo_.hashes.clear();
      memo_.valid = true;
    }
    hashes = &memo_.hashes;
  }
  for (std::size_t i = 0; i < max_blocks; ++i) {
    extend_hashes(*hashes, i + 1, seq.tokens, keys);
    const auto it = cached_.find((*hashes)[i]);
    if (it == cached_.end()) break;
    hit_scratch_.push_back(it->second);
  }
  const std::size_t full = hit_scratch_.size();
  PartialBlockHit partial;
  if (reuse_partial_ && !tails_.empty()) {
    // Rows of a remembered block that continue the full ones, the last token still excluded.
    const std::size_t begin = full * block_size_;
    const std::size_t max_rows = std::min(block_size_ - 1, n - 1 - begin);
    if (max_rows > 0) {
      const Hash128 key = hasher_.tail_key(full == 0 ? Hash128{} : (*hashes)[full - 1], full, keys);
      partial = longest_tail(key, seq.tokens, begin, max_rows);
    }
  }
  const std::size_t hit_tokens = full * block_size_ + partial.rows;
  hits_ += hit_tokens;
  return {hit_tokens, std::span<const BlockId>(hit_scratch_), partial};
}

inline PartialBlockHit BlockManager::longest_tail(const Hash128& key, std::span<const TokenId> tokens,
                                                  std::size_t begin, std::size_t max_rows) const {
  PartialBlockHit best;
  const auto [first, last] = tails_.equal_range(key);
  for (auto it = first; it != last; ++it) {
    const std::vector<TokenId>& held = it->second.tokens;
    const std::size_t limit = std::min(max_rows, held.size());
    const auto mismatch = std::mismatch(held.begin(), held.begin() + static_cast<std::ptrdiff_t>(limit),
                                        tokens.begin() + static_cast<std::ptrdiff_t>(begin));
    const auto rows = static_cast<std::size_t>(mismatch.first - held.begin());
    if (rows > best.rows) best = {it->second.block, rows};
  }
  return best;
}

inline bool BlockManager::tail_hit_valid(const SequenceView& seq, const PrefixHit& hit, bool memo_matches) const {
  const std::size_t full = hit.blocks.size();
  const std::size_t begin = full * block_size_;
  const PartialBlockHit& p = hit.partial;
  // The memo holds the keys of the full blocks the lookup matched.
  if (!reuse_partial_ || !memo_matches || memo_.hashes.size() < full) return false;
  if (p.rows >= block_size_ || hit.num_tokens != begin + p.rows || begin + p.rows >= seq.tokens.size()) return false;
  const auto key_of = tail_key_of_.find(p.source);
  if (key_of == tail_key_of_.end()) return false;
  const Hash128 expected = hasher_.tail_key(full == 0 ? Hash128{} : memo_.hashes[full - 1], full, keys_of(seq));
  if (!(key_of->second == expected)) return false;
  const auto [first, last] = tails_.equal_range(expected);
  for (auto it = first; it != last; ++it) {
    const std::vector<TokenId>& held = it->second.tokens;
    if (it->second.block != p.source) continue;
    return held.size() >= p.rows && std::equal(held.begin(), held.begin() + static_cast<std::ptrdiff_t>(p.rows),
                                                seq.tokens.begin() + static_cast<std::ptrdiff_t>(begin));
  }
  return false;
}

inline bool BlockManager::allocate_slots(const SequenceView& seq, std::size_t num_computed, std::size_t num_new,
                                         PrefixHit hit, BlockRowCopy* copy) {
  const std::size_t total = num_computed + num_new;
  if (total < num_computed) return false;  // overflow: no cache can hold it
  SequenceBlocks* s = find(seq.id);
  const std::size_t have = s ? s->blocks.size() : 0;
  const std::size_t adopt = (s == nullptr && hit.num_tokens > 0) ? hit.blocks.size() : 0;

  // Check everything before touching anything, so a refusal has no side effects.
  // A hit is only valid until the next call on the cache; a stale one (a block
  // evicted, or re-keyed to other content, since the lookup) is refused.
  const bool memo_matches =
      memo_.valid && memo_.id == seq.id && block_manager_detail::same_keys(memo_.keys, keys_of(seq));
  std::size_t reviving = 0;
  for (std::size_t i = 0; i < adopt; ++i) {
    const BlockId b = hit.blocks[i];
    if (b == null_block || b > pool_.num_usable_blocks() || !pool_.has_hash(b)) return false;
    if (memo_matches && i < memo_.hashes.size() && !(memo_.hashes[i] == pool_.hash(b))) return false;
    if (pool_.ref_count(b) == 0) ++reviving;
  }
  const std::size_t needed = std::max(total / block_size_ + (total % block_size_ != 0), have + adopt);
  const std::size_t fresh = needed - have - adopt;
  if (fresh + reviving > pool_.num_free()) return false;
  const bool copies_tail = s == nullptr && hit.partial.rows > 0;
  if (copies_tail && (copy == nullptr || !tail_hit_valid(seq, hit, memo_matches))) return false;

  if (s == nullptr) {
    const PrefixCacheKeys& keys = keys_of(seq);
    s = &create(seq.id, keys);
    if (memo_matches) {
      // The lookup's keys move into the table; the memo is done with this sequence.
      s->hashes.swap(memo_.hashes);
      memo_.hashes.clear();
      memo_.valid = false;
    } else {
      s->hashes.clear();
    }
    s->blocks.reserve(needed);
    for (std::size_t i = 0; i < adopt; ++i) {
      pool_.acquire(hit.blocks[i]);
      s->blocks.push_back(hit.blocks[i]);
    }
    s->num_registered = adopt;
  }
  for (std::size_t i = 0; i < fresh; ++i) {
    bool had_hash = false;
    Hash128 dropped;
    const BlockId b = pool_.pop_free(had_hash, dropped);
    if (had_hash) {
      forget_key(b, dropped);
      ++evictions_;
    }
    forget_tail(b);
    s->blocks.push_back(b);
  }
  if (copy != nullptr) *copy = {};
  // When the source itself came back as that block, its rows are already in place.
  if (copies_tail && s->blocks[adopt] != hit.partial.source && copy != nullptr) {
    *copy = {hit.partial.source, s->blocks[adopt], hit.partial.rows};
  }
  const std::size_t known = std::min(total, seq.tokens.size());
  if (caches(s->keys)) register_full_blocks(*s, seq.tokens, known);
  if (reuses_tails(s->keys)) {
    s->num_known = known;
    const auto tail_begin = static_cast<std::ptrdiff_t>(known / block_size_ * block_size_);
    s->tail.assign(seq.tokens.begin() + tail_begin, seq.tokens.begin() + static_cast<std::ptrdiff_t>(known));
  }
  return true;
}

inline void BlockManager::register_full_blocks(SequenceBlocks& s, std::span<const TokenId> tokens,
                                               std::size_t num_known_tokens) {
  const std::size_t full = std::min(num_known_tokens / block_size_, s.blocks.size());
  if (full <= s.num_registered) return;
  extend_hashes(s.hashes, full, tokens, s.keys);
  for (std::size_t i = s.num_registered; i < full; ++i) {
    const BlockId b = s.blocks[i];
    if (pool_.has_hash(b)) continue;  // adopted from the cache: already keyed
    // try_emplace keeps an existing mapping: the same content computed twice
    // stays cached once, and the duplicate block stays private.
    if (cached_.try_emplace(s.hashes[i], b).second) pool_.set_hash(b, s.hashes[i]);
  }
  s.num_registered = full;
}

inline void BlockManager::forget_key(BlockId b, const Hash128& key) noexcept {
  const auto it = cached_.find(key);
  if (it != cached_.end() && it->second == b) cached_.erase(it);
}

inline void BlockManager::free(RequestId id) noexcept { release_blocks(id, true); }

inline void BlockManager::free_unwritten(RequestId id, std::size_t num_written_tokens) noexcept {
  bool all_written = true;
  if (const SequenceBlocks* s = find(id)) {
    all_written = num_written_tokens >= s->num_known;
    for (std::size_t i = num_written_tokens / block_size_; i < s->blocks.size(); ++i) {
      const BlockId b = s->blocks[i];
      if (!pool_.has_hash(b)) continue;
      forget_key(b, pool_.hash(b));
      pool_.drop_hash(b);
    }
  }
  release_blocks(id, all_written);
}

inline void BlockManager::release_blocks(RequestId id, bool keep_tail) noexcept {
  if (memo_.valid && memo_.id == id) memo_.valid = false;
  const auto it = index_.find(id);
  if (it == index_.end()) return;
  SequenceBlocks& s = sequences_[it->second];
  if (keep_tail) remember_tail(s);
  // Tail first: the deepest blocks reach the free list's LRU end first and
  // are reused first, so shared prefixes outlive the suffixes hung on them.
  for (auto b = s.blocks.rbegin(); b != s.blocks.rend(); ++b) {
    if (pool_.release(*b)) ++free_generation_;
  }
  s.blocks.clear();
  s.hashes.clear();
  s.num_registered = 0;
  s.num_known = 0;
  s.tail.clear();
  spare_sequences_.push_back(it->second);
  index_.erase(it);
}

inline void BlockManager::remember_tail(SequenceBlocks& s) noexcept {
  const std::size_t index = s.num_known / block_size_;
  if (!reuses_tails(s.keys) || s.tail.empty() || index >= s.blocks.size() || s.hashes.size() < index) return;
  const BlockId b = s.blocks[index];
  if (tail_key_of_.count(b) != 0) return;
  // A partly filled block is never adopted by another table; if it somehow
  // were, its rows past the tail could change under a later copy.
  if (pool_.ref_count(b) != 1 || pool_.has_hash(b)) return;
  const Hash128 key = hasher_.tail_key(index == 0 ? Hash128{} : s.hashes[index - 1], index, s.keys);
  try {
    tail_key_of_.emplace(b, key);
    tails_.emplace(key, PartialTail{b, std::move(s.tail)});
  } catch (...) {
    // Only a cache: without memory for the entry the block is simply not remembered.
    tail_key_of_.erase(b);
  }
}

inline void BlockManager::forget_tail(BlockId b) noexcept {
  if (tail_key_of_.empty()) return;
  const auto key_of = tail_key_of_.find(b);
  if (key_of == tail_key_of_.end()) return;
  const auto [first, last] = tails_.equal_range(key_of->second);
  for (auto it = first; it != last; ++it) {
    if (it->second.block == b) {
      tails_.erase(it);
      break;
    }
  }
  tail_key_of_.erase(key_of);
}

inline std::span<const BlockId> BlockManager::block_table(RequestId id) const noexcept {
  const SequenceBlocks* s = find(id);
  return s ? std::span<const BlockId>(s->blocks) : std::span<const BlockId>();
}

inline void BlockManager::fill_stats(KVCacheStats& stats) const noexcept {
  stats.block_size = block_size_;
  stats.num_blocks = pool_.num_usable_blocks();
  stats.num_free_blocks = pool_.num_free();
  stats.num_used_blocks = pool_.num_usable_blocks() - pool_.num_free();
  stats.num_cached_blocks = pool_.num_cached_free();
  stats.prefix_cache_queries = queries_;
  stats.prefix_cache_hits = hits_;
  stats.evictions = evictions_;
}

inline std::size_t BlockManager::evict_cached_free_blocks(std::vector<BlockId>& evicted) {
  if (pool_.num_cached_free() == 0 && tails_.empty()) return 0;
  for (const auto& [block, key] : tail_key_of_) evicted.push_back(block);
  tails_.clear();
  tail_key_of_.clear();
  std::size_t count = 0;
  pool_.for_each_free([&](BlockId b) {
    if (!pool_.has_hash(b)) return;
    forget_key(b, pool_.hash(b));
    pool_.drop_hash(b);
    evicted.push_back(b);
    ++count;
  });
  evictions_ += count;
  ++free_generation_;
  return count;
}

inline std::uint32_t BlockManager::ref_count(BlockId b) const noexcept {
  return b <= pool_.num_usable_blocks() ? pool_.ref_count(b) : 0;
}

inline std::string BlockManager::check_invariants() const {
  if (std::string pool_problem = pool_.check_invariants(); !pool_problem.empty()) return pool_problem;
  const std::size_t n = pool_.num_usable_blocks();
  std::vector<std::uint32_t> refs(n + 1, 0);
  for (const auto& [id, slot] : index_) {
    const SequenceBlocks& s = sequences_[slot];
    if (s.num_registered > s.blocks.size()) {
      return "request " + std::to_string(id) + " registered more blocks than it holds";
    }
    for (std::size_t i = 0; i < s.blocks.size(); ++i) {
      const BlockId b = s.blocks[i];
      if (b == null_block || b > n) {
        return "request " + std::to_string(id) + " holds invalid block " + std::to_string(b);
      }
      ++refs[b];
      if (i < s.num_registered && pool_.has_hash(b) && !(i < s.hashes.size() && s.hashes[i] == pool_.hash(b))) {
        return "block " + std::to_string(b) + " at index " + std::to_string(i) + " of request " + std::to_string(id) +
               " holds a key that is not the request's chained key";
      }
    }
  }
  std::size_t keyed = 0;
  for (BlockId b = 1; b <= n; ++b) {
    if (refs[b] != pool_.ref_count(b)) {
      return "block " + std::to_string(b) + " has ref count " + std::to_string(pool_.ref_count(b)) + " but " +
             std::to_string(refs[b]) + " tables hold it";
    }
    if (pool_.has_hash(b)) ++keyed;
  }
  for (const auto& [key, b] : cached_) {
    if (b == null_block || b > n || !pool_.has_hash(b) || !(pool_.hash(b) == key)) {
      return "cache map entry points to block " + std::to_string(b) + " which does not hold that key";
    }
  }
  if (keyed != cached_.size()) {
    return std::to_string(keyed) + " blocks hold keys but the cache map has " + std::to_string(cached_.size());
  }
  if (!prefix_caching_ && keyed != 0) return "prefix caching is off but blocks hold keys";
  if (tails_.size() != tail_key_of_.size()) {
    return std::to_string(tails_.size()) + " partial blocks are remembered but " +
           std::to_string(tail_key_of_.size()) + " blocks are marked as such";
  }
  for (const auto& [key, tail] : tails_) {
    const BlockId b = tail.block;
    const auto key_of = tail_key_of_.find(b);
    if (b == null_block || b > n || key_of == tail_key_of_.end() || !(key_of->second == key)) {
      return "a remembered partial block entry points to block " + std::to_string(b) + ", not marked with its key";
    }
    if (pool_.ref_count(b) != 0 || pool_.has_hash(b) || tail.tokens.empty() || tail.tokens.size() >= block_size_) {
      return "remembered partial block " + std::to_string(b) + " is in use, holds a full key or " +
             std::to_string(tail.tokens.size()) + " rows";
    }
  }
  return {};
}

}  // namespace izwi::detail
