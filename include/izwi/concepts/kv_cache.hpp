#pragma once
// KVCachePolicy: owns the K/V tensors of every layer in fixed-size blocks,
// hands out blocks to sequences, and finds cached prefixes.
// Documented in docs/concepts/kv_cache.md.
//
// Valid expressions, for k a K, ck a const K, seq a SequenceView:
//   typename K::memory_space                   where the tensors live (see memory_space.hpp)
//   ck.block_size()            -> size_t       tokens per block
//   ck.shape()                 -> const KVCacheShape&
//   k.find_cached_prefix(seq)  -> PrefixHit    longest cached run of full blocks (and, where
//                                              the cache keeps them, a partly filled block's
//                                              rows), at most tokens.size()-1 tokens; takes no
//                                              references
//   k.allocate_slots(seq, num_computed, num_new, hit) -> bool
//                                              make blocks cover [0, num_computed + num_new);
//                                              `hit` (from find_cached_prefix, same step) is
//                                              adopted first for a sequence with no blocks.
//                                              false: not enough free blocks, and nothing changed
//   k.free(id)                                 release the sequence's blocks, tail first
//   ck.block_table(id)         -> span<const BlockId>
//   ck.stats()                 -> KVCacheStats
//   k.layer(l)                 -> KVLayerView  K and V storage of layer l
//
// Optional ability, probed with `requires`:
//   k.admission_advice()       -> AdmissionAdvice   memory-pressure-aware caches

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>

#include "izwi/concepts/memory_space.hpp"
#include "izwi/concepts/tags.hpp"
#include "izwi/core/ids.hpp"
#include "izwi/core/kv_cache_shape.hpp"
#include "izwi/core/request.hpp"

namespace izwi {

/// The first `rows` positions of a partly filled block that a finished
/// sequence left behind, equal to the looked-up sequence's tokens right after
/// the hit's full blocks. A cache that reports one copies those rows into the
/// sequence's own next block when the hit is adopted (never shares the block:
/// the sequence writes the rest of it).
struct PartialBlockHit {
  BlockId source = null_block;
  std::size_t rows = 0;
};

/// A prefix-cache lookup result: `num_tokens` are already computed, in the
/// full `blocks` (blocks.size() x block size tokens) and then `partial.rows`
/// more. The span points into the cache's scratch storage and is valid until
/// the next call on that cache.
struct PrefixHit {
  std::size_t num_tokens = 0;
  std::span<const BlockId> blocks;
  PartialBlockHit partial;
};

/// Storage of one layer. Both arrays are laid out
/// [block][position in block][kv head][head dim] in the cache's dtype, so
/// token slot s (see StepPlan::slot_mapping) starts at element s * row_elements().
struct KVLayerView {
  std::byte* keys = nullptr;
  std::byte* values = nullptr;
};

struct KVCacheStats {
  std::size_t block_size = 0;
  /// Usable blocks (the null block excluded).
  std::size_t num_blocks = 0;
  /// Blocks with a reference count above zero.
  std::size_t num_used_blocks = 0;
  /// Blocks on the free list, including cached ones.
  std::size_t num_free_blocks = 0;
  /// Free blocks that still hold a prefix hash and can be revived by a hit.
  std::size_t num_cached_blocks = 0;
  std::size_t bytes_per_block = 0;
  std::size_t total_bytes = 0;
  /// Prefix-cache counters in tokens, as vLLM counts them.
  std::uint64_t prefix_cache_queries = 0;
  std::uint64_t prefix_cache_hits = 0;
  /// Cached blocks whose hash was dropped to reuse the block.
  std::uint64_t evictions = 0;

  double usage() const noexcept {
    return num_blocks ? static_cast<double>(num_used_blocks) / static_cast<double>(num_blocks) : 0.0;
  }
};

enum class MemoryPressure : std::uint8_t { normal, warning, critical };

/// What a memory-pressure-aware cache asks of the scheduler this step.
struct AdmissionAdvice {
  MemoryPressure pressure = MemoryPressure::normal;
  /// Upper bound on running sequences this step (shrinks under Warning).
  std::size_t max_num_seqs = static_cast<std::size_t>(-1);
  /// False under Critical: admit no new prefill.
  bool admit_new_requests = true;
};

/// Each requirement of KVCachePolicy on its own, so the engine can name the
/// first one a type misses (see engine/detail/policy_checks.hpp).
namespace requirements {
template <class K> concept kv_memory_space = requires { typename K::memory_space; };
template <class K> concept kv_block_size = requires(const K& ck) { { ck.block_size() } -> std::same_as<std::size_t>; };
template <class K> concept kv_shape = requires(const K& ck) { { ck.shape() } -> std::same_as<const KVCacheShape&>; };
template <class K> concept kv_find_cached_prefix = requires(K& k, const SequenceView& seq) {
  { k.find_cached_prefix(seq) } -> std::same_as<PrefixHit>;
};
template <class K> concept kv_allocate_slots = requires(K& k, const SequenceView& seq, std::size_t n, PrefixHit hit) {
  { k.allocate_slots(seq, n, n, hit) } -> std::same_as<bool>;
};
template <class K> concept kv_free = requires(K& k, RequestId id) { { k.free(id) } -> std::same_as<void>; };
template <class K> concept kv_block_table = requires(const K& ck, RequestId id) {
  { ck.block_table(id) } -> std::same_as<std::span<const BlockId>>;
};
template <class K> concept kv_stats = requires(const K& ck) { { ck.stats() } -> std::same_as<KVCacheStats>; };
template <class K> concept kv_layer = requires(K& k, std::uint32_t layer) { { k.layer(layer) } -> std::same_as<KVLayerView>; };
}  // namespace requirements

template <class K>
concept KVCachePolicy =
    opts_into<K, kv_cache_tag> && requirements::kv_memory_space<K> && requirements::kv_block_size<K> &&
    requirements::kv_shape<K> && requirements::kv_find_cached_prefix<K> && requirements::kv_allocate_slots<K> &&
    requirements::kv_free<K> && requirements::kv_block_table<K> && requirements::kv_stats<K> &&
    requirements::kv_layer<K>;

/// The optional memory-pressure ability.
template <class K>
concept PressureAwareKVCache = KVCachePolicy<K> && requires(K& k) {
  { k.admission_advice() } -> std::same_as<AdmissionAdvice>;
};

}  // namespace izwi
