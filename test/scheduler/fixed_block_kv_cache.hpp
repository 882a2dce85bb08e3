#pragma once
// A test-only KV cache: bookkeeping for a fixed number of blocks, no tensors
// and no prefix caching. Small enough to force allocation failures on purpose,
// strict enough to catch a scheduler that breaks the KVCachePolicy contract.
// PressureFakeKVCache adds an AdmissionAdvice the test sets by hand.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "izwi/concepts/kv_cache.hpp"
#include "izwi/concepts/memory_space.hpp"
#include "izwi/concepts/tags.hpp"
#include "izwi/core/kv_cache_shape.hpp"

namespace izwi::test {

class FixedBlockKVCache {
 public:
  using policy_category = kv_cache_tag;
  using memory_space = host_space;

  explicit FixedBlockKVCache(std::size_t num_blocks, std::size_t block_size = 16)
      : block_size_(block_size), num_blocks_(num_blocks) {
    // Block 0 is the null block; hand out 1..num_blocks, lowest first.
    for (std::size_t b = num_blocks; b >= 1; --b) free_.push_back(static_cast<BlockId>(b));
  }

  std::size_t block_size() const { return block_size_; }
  const KVCacheShape& shape() const { return shape_; }
  PrefixHit find_cached_prefix(const SequenceView&) { return {}; }

  bool allocate_slots(const SequenceView& seq, std::size_t num_computed, std::size_t num_new, PrefixHit hit) {
    ++allocate_calls_;
    if (hit.num_tokens != 0) note("hit adopted from a cache without prefix caching");
    if (num_new == 0) note("allocate_slots with num_new == 0");
    if (num_computed + num_new > seq.tokens.size()) note("allocate_slots past the known tokens");
    auto& table = tables_[seq.id];
    if (table.size() * block_size_ < num_computed) note("num_computed beyond the sequence's blocks");
    const std::size_t needed = (num_computed + num_new + block_size_ - 1) / block_size_;
    if (needed <= table.size()) return true;
    if (needed - table.size() > free_.size()) {
      if (table.empty()) tables_.erase(seq.id);
      return false;
    }
    while (table.size() < needed) {
      table.push_back(free_.back());
      free_.pop_back();
    }
    return true;
  }

  void free(RequestId id) {
    const auto it = tables_.find(id);
    if (it == tables_.end()) return;
    for (auto b = it->second.rbegin(); b != it->second.rend(); ++b) free_.push_back(*b);  // tail first
    tables_.erase(it);
  }

  std::span<const BlockId> block_table(RequestId id) const {
    const auto it = tables_.find(id);
    return it == tables_.end() ? std::span<const BlockId>{} : std::span<const BlockId>(it->second);
  }

  KVCacheStats stats() const {
    KVCacheStats s;
    s.block_size = block_size_;
    s.num_blocks = num_blocks_;
    s.num_free_blocks = free_.size();
    s.num_used_blocks = num_blocks_ - free_.size();
    return s;
  }
  KVLayerView layer(std::uint32_t) { return {}; }

  // --- for tests ---
  std::size_t num_used_blocks() const { return num_blocks_ - free_.size(); }
  std::size_t num_sequences() const { return tables_.size(); }
  std::uint64_t allocate_calls() const { return allocate_calls_; }
  /// Empty while the scheduler kept the contract; else the first violation.
  const std::string& contract_violation() const { return violation_; }

 private:
  void note(const char* what) {
    if (violation_.empty()) violation_ = what;
  }
  std::size_t block_size_;
  std::size_t num_blocks_;
  KVCacheShape shape_{1, 1, 1, DType::f32};
  std::vector<BlockId> free_;
  std::unordered_map<RequestId, std::vector<BlockId>> tables_;
  std::uint64_t allocate_calls_ = 0;
  std::string violation_;
};

/// The same cache, memory-pressure-aware: it returns whatever advice the test set.
class PressureFakeKVCache : public FixedBlockKVCache {
 public:
  using FixedBlockKVCache::FixedBlockKVCache;
  AdmissionAdvice admission_advice() {
    ++advice_calls;
    return advice;
  }
  AdmissionAdvice advice;
  std::uint64_t advice_calls = 0;
};

}  // namespace izwi::test
