#pragma once
// BPE merging over token ids. A merge rule (left, right) -> merged has a rank
// (its line in the merges list); a word is merged by repeatedly applying the
// lowest-ranked rule that applies, leftmost first among equal ranks, until no
// rule applies. That is the order of Hugging Face tokenizers and transformers.js.
//
// Rules live in an open-addressing hash table keyed on the id pair (one probe
// sequence, no node allocations). Short words -- nearly all pre-tokens -- are
// merged by rescanning their pairs; long ones (whitespace runs, long words)
// with a heap over candidate pairs and lazy invalidation, so a 100k-byte run
// stays O(n log n).

#include <izwi/core/ids.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <vector>

namespace izwi::tokenizer::detail {

struct MergeRule {
  std::uint32_t rank;
  TokenId merged;
};

class MergeTable {
 public:
  static constexpr std::uint32_t no_rank = std::numeric_limits<std::uint32_t>::max();

  void reserve(std::size_t rules) {
    std::size_t cap = 16;
    while (cap < rules * 2) cap <<= 1;  // load factor <= 0.5
    slots_.assign(cap, Slot{});
    mask_ = cap - 1;
    size_ = 0;
  }

  /// Adds a rule; the first rule for a pair wins (a later duplicate never applies).
  void insert(TokenId left, TokenId right, MergeRule rule) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    const std::uint64_t k = key(left, right);
    for (std::size_t i = hash(k) & mask_;; i = (i + 1) & mask_) {
      if (slots_[i].key == empty_key) {
        slots_[i] = Slot{k, rule};
        ++size_;
        return;
      }
      if (slots_[i].key == k) return;
    }
  }

  /// The rule for (left, right), or rank == no_rank.
  MergeRule find(TokenId left, TokenId right) const noexcept {
    if (slots_.empty()) return {no_rank, -1};
    const std::uint64_t k = key(left, right);
    for (std::size_t i = hash(k) & mask_;; i = (i + 1) & mask_) {
      if (slots_[i].key == k) return slots_[i].rule;
      if (slots_[i].key == empty_key) return {no_rank, -1};
    }
  }

  std::size_t size() const noexcept { return size_; }

 private:
  static constexpr std::uint64_t empty_key = ~std::uint64_t{0};
  struct Slot {
    std::uint64_t key = empty_key;
    MergeRule rule{no_rank, -1};
  };
  static std::uint64_t key(TokenId l, TokenId r) noexcept {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(l)) << 32) | static_cast<std::uint32_t>(r);
  }
  static std::size_t hash(std::uint64_t k) noexcept {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return static_cast<std::size_t>(k);
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    reserve(std::max<std::size_t>(16, old.size()));
    for (const Slot& s : old)
      if (s.key != empty_key) insert(static_cast<TokenId>(s.key >> 32), static_cast<TokenId>(s.key & 0xffffffffu), s.rule);
  }

  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

/// Words up to this many symbols are merged by rescanning (no heap).
inline constexpr std::size_t bpe_rescan_limit = 24;

/// Merges `symbols` in place by rescanning all adjacent pairs per step.
inline void bpe_merge_rescan(const MergeTable& rules, std::vector<TokenId>& symbols) {
  // ranks[i] = rank of (symbols[i], symbols[i+1]); kept in step with merges.
  std::uint32_t ranks[bpe_rescan_limit];
  TokenId merged[bpe_rescan_limit];
  std::size_t n = symbols.size();
  if (n < 2) return;
  for (std::size_t i = 0; i + 1 < n; ++i) {
    const MergeRule r = rules.find(symbols[i], symbols[i + 1]);
    ranks[i] = r.rank;
    merged[i] = r.merged;
  }
  for (;;) {
    std::size_t best = 0;
    for (std::size_t i = 1; i + 1 < n; ++i)
      if (ranks[i] < ranks[best]) best = i;
    if (ranks[best] == MergeTable::no_rank) break;
    symbols[best] = merged[best];
    // Drop symbol best+1 and pair best+1 (shift left).
    for (std::size_t i = best + 1; i + 1 < n; ++i) symbols[i] = symbols[i + 1];
    for (std::size_t i = best + 1; i + 2 < n; ++i) {
      ranks[i] = ranks[i + 1];
      merged[i] = merged[i + 1];
    }
    --n;
    if (best + 1 < n) {
      const MergeRule r = rules.find(symbols[best], symbols[best + 1]);
      ranks[best] = r.rank;
      merged[best] = r.merged;
    } else {
      ranks[best] = MergeTable::no_rank;
    }
    if (best > 0) {
      const MergeRule r = rules.find(symbols[best - 1], symbols[best]);
      ranks[best - 1] = r.rank;
      merged[best - 1] = r.merged;
    }
    if (n < 2) break;
  }
  symbols.resize(n);
}

/// Merges `symbols` in place with a heap of candidate pairs (any length).
inline void bpe_merge_heap(const MergeTable& rules, std::vector<TokenId>& symbols) {
  const std::size_t n = symbols.size();
  if (n < 2) return;
  constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();
  std::vector<std::uint32_t> prev(n), next(n);
  for (std::size_t i = 0; i < n; ++i) {
    prev[i] = i == 0 ? none : static_cast<std::uint32_t>(i - 1);
    next[i] = i + 1 == n ? none : static_cast<std::uint32_t>(i + 1);
  }
  struct Candidate {
    std::uint32_t rank;
    std::uint32_t left;  ///< position of the left symbol: ties go to the leftmost
    TokenId left_id, right_id;
    bool operator>(const Candidate& o) const noexcept { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto push = [&](std::uint32_t left) {
    const std::uint32_t right = next[left];
    if (right == none) return;
    const MergeRule r = rules.find(symbols[left], symbols[right]);
    if (r.rank != MergeTable::no_rank) heap.push({r.rank, left, symbols[left], symbols[right]});
  };
  for (std::size_t i = 0; i + 1 < n; ++i) push(static_cast<std::uint32_t>(i));
  std::vector<bool> alive(n, true);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    const std::uint32_t right = next[c.left];
    // Stale if either side has merged since the candidate was pushed.
    if (!alive[c.left] || right == none || symbols[c.left] != c.left_id || symbols[right] != c.right_id) continue;
    symbols[c.left] = rules.find(c.left_id, c.right_id).merged;
    alive[right] = false;
    next[c.left] = next[right];
    if (next[right] != none) prev[next[right]] = c.left;
    if (prev[c.left] != none) push(prev[c.left]);
    push(c.left);
  }
  std::size_t out = 0;
  for (std::uint32_t i = 0; i != none; i = next[i]) symbols[out++] = symbols[i];
  symbols.resize(out);
}

inline void bpe_merge(const MergeTable& rules, std::vector<TokenId>& symbols) {
  if (symbols.size() <= bpe_rescan_limit) bpe_merge_rescan(rules, symbols);
  else bpe_merge_heap(rules, symbols);
}

}  // namespace izwi::tokenizer::detail
