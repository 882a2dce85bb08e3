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

inline BlockManager::BlockManager(std::size_t block_size, std::size_t num_usable_blocks, bool enable_prefix_caching)
    : block_size_(block_size),
      prefix_caching_(enable_prefix_caching),
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
  const std::size_t hit_tokens = hit_scratch_.size() * block_size_;
  hits_ += hit_tokens;
  return {hit_tokens, std::span<const BlockId>(hit_scratch_)};
}

inline bool BlockManager::allocate_slots(const SequenceView& seq, std::size_t num_computed, std::size_t num_new,
                                         PrefixHit hit) {
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
    s->blocks.push_back(b);
  }
  if (caches(s->keys)) register_full_blocks(*s, seq.tokens, std::min(total, seq.tokens.size()));
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

inline void BlockManager::free(RequestId id) noexcept {
  if (memo_.valid && memo_.id == id) memo_.valid = false;
  const auto it = index_.find(id);
  if (it == index_.end()) return;
  SequenceBlocks& s = sequences_[it->second];
  // Tail first: the deepest blocks reach the free list's LRU end first and
  // are reused first, so shared prefixes outlive the suffixes hung on them.
  for (auto b = s.blocks.rbegin(); b != s.blocks.rend(); ++b) {
    if (pool_.release(*b)) ++free_generation_;
  }
  s.blocks.clear();
  s.hashes.clear();
  s.num_registered = 0;
  spare_sequences_.push_back(it->second);
  index_.erase(it);
}

inline void BlockManager::free_unwritten(RequestId id, std::size_t num_written_tokens) noexcept {
  if (const SequenceBlocks* s = find(id)) {
    for (std::size_t i = num_written_tokens / block_size_; i < s->blocks.size(); ++i) {
      const BlockId b = s->blocks[i];
      if (!pool_.has_hash(b)) continue;
      forget_key(b, pool_.hash(b));
      pool_.drop_hash(b);
    }
  }
  free(id);
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
  if (pool_.num_cached_free() == 0) return 0;
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
  return {};
}

}  // namespace izwi::detail
