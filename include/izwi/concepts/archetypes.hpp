#pragma once
// Archetypes: the least a policy may be. Concepts that take a second policy
// (a scheduler is checked against "some KV cache") are checked against these,
// so a policy that compiles against an archetype uses nothing beyond the contract.
// They are declarations only; nothing here is meant to run.

#include <cstddef>
#include <span>

#include "izwi/concepts/kv_cache.hpp"
#include "izwi/concepts/memory_space.hpp"
#include "izwi/concepts/tags.hpp"
#include "izwi/core/kv_cache_shape.hpp"
#include "izwi/core/step.hpp"

namespace izwi::archetypes {

template <class MemorySpace>
struct kv_cache {
  using policy_category = kv_cache_tag;
  using memory_space = MemorySpace;
  std::size_t block_size() const;
  const KVCacheShape& shape() const;
  PrefixHit find_cached_prefix(const SequenceView&);
  bool allocate_slots(const SequenceView&, std::size_t, std::size_t, PrefixHit);
  void free(RequestId);
  std::span<const BlockId> block_table(RequestId) const;
  KVCacheStats stats() const;
  KVLayerView layer(std::uint32_t);
};

using host_kv_cache = kv_cache<host_space>;

}  // namespace izwi::archetypes
