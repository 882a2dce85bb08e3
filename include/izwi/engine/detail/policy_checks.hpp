#pragma once
// The engine's compile-time diagnostics: an `if constexpr` ladder that stops at
// the first requirement a policy misses and says so in one sentence, instead of
// a page of unsatisfied-constraint notes. Each rung tests one named
// requirement from the concept headers, so this list and the concepts agree.

#include <concepts>

#include "izwi/concepts/executor.hpp"
#include "izwi/concepts/kv_cache.hpp"
#include "izwi/concepts/memory_space.hpp"
#include "izwi/concepts/scheduler.hpp"
#include "izwi/concepts/stream_notifier.hpp"
#include "izwi/concepts/tags.hpp"

namespace izwi::detail {

template <class...>
inline constexpr bool always_false = false;

template <class K>
constexpr bool check_kv_cache_policy() {
  namespace r = requirements;
  if constexpr (!opts_into<K, kv_cache_tag>)
    static_assert(always_false<K>, "izwi::Engine: the KV cache policy does not opt into izwi::kv_cache_tag "
                                   "(declare `using policy_category = izwi::kv_cache_tag;`)");
  else if constexpr (!r::kv_memory_space<K>)
    static_assert(always_false<K>, "izwi::Engine: the KV cache policy has no `memory_space` type "
                                   "(izwi::host_space, unified_space or device_space)");
  else if constexpr (!r::kv_block_size<K>)
    static_assert(always_false<K>, "izwi::Engine: the KV cache policy lacks `std::size_t block_size() const`");
  else if constexpr (!r::kv_shape<K>)
    static_assert(always_false<K>, "izwi::Engine: the KV cache policy lacks `const KVCacheShape& shape() const`");
  else if constexpr (!r::kv_find_cached_prefix<K>)
    static_assert(always_false<K>,
                  "izwi::Engine: the KV cache policy lacks `PrefixHit find_cached_prefix(const SequenceView&)`");
  else if constexpr (!r::kv_allocate_slots<K>)
    static_assert(always_false<K>, "izwi::Engine: the KV cache policy lacks `bool allocate_slots(const "
                                   "SequenceView&, size_t num_computed, size_t num_new, PrefixHit)`");
  else if constexpr (!r::kv_free<K>)
    static_assert(always_false<K>, "izwi::Engine: the KV cache policy lacks `void free(RequestId)`");
  else if constexpr (!r::kv_block_table<K>)
    static_assert(always_false<K>,
                  "izwi::Engine: the KV cache policy lacks `std::span<const BlockId> block_table(RequestId) const`");
  else if constexpr (!r::kv_stats<K>)
    static_assert(always_false<K>, "izwi::Engine: the KV cache policy lacks `KVCacheStats stats() const`");
  else if constexpr (!r::kv_layer<K>)
    static_assert(always_false<K>, "izwi::Engine: the KV cache policy lacks `KVLayerView layer(std::uint32_t)`");
  else
    return true;
  return false;
}

template <class S, class K>
constexpr bool check_scheduler_policy() {
  namespace r = requirements;
  if constexpr (!opts_into<S, scheduler_tag>)
    static_assert(always_false<S>, "izwi::Engine: the scheduler policy does not opt into izwi::scheduler_tag "
                                   "(declare `using policy_category = izwi::scheduler_tag;`)");
  else if constexpr (!r::scheduler_add<S>)
    static_assert(always_false<S>, "izwi::Engine: the scheduler policy lacks `add(Request&&)`");
  else if constexpr (!r::scheduler_schedule<S, K>)
    static_assert(always_false<S>, "izwi::Engine: the scheduler policy lacks `const StepPlan& schedule(KVCache&)` "
                                   "for this KV cache");
  else if constexpr (!r::scheduler_update<S, K>)
    static_assert(always_false<S>, "izwi::Engine: the scheduler policy lacks `update(const StepResult&, KVCache&)`");
  else if constexpr (!r::scheduler_finish<S, K>)
    static_assert(always_false<S>,
                  "izwi::Engine: the scheduler policy lacks `bool finish(RequestId, FinishReason, KVCache&)`");
  else if constexpr (!r::scheduler_set_paused<S>)
    static_assert(always_false<S>, "izwi::Engine: the scheduler policy lacks `set_paused(RequestId, bool)`");
  else if constexpr (!r::scheduler_counts<S>)
    static_assert(always_false<S>, "izwi::Engine: the scheduler policy lacks `num_waiting()`, `num_running()` "
                                   "or `num_preemptions()` const");
  else
    return true;
  return false;
}

template <class E, class K>
constexpr bool check_executor_policy() {
  namespace r = requirements;
  if constexpr (!opts_into<E, executor_tag>)
    static_assert(always_false<E>, "izwi::Engine: the executor policy does not opt into izwi::executor_tag "
                                   "(declare `using policy_category = izwi::executor_tag;`)");
  else if constexpr (!r::executor_execution_space<E>)
    static_assert(always_false<E>, "izwi::Engine: the executor policy has no `execution_space` type "
                                   "(izwi::cpu_execution or gpu_execution)");
  else if constexpr (!accessible_from<typename E::execution_space, typename K::memory_space>)
    static_assert(always_false<E>, "izwi::Engine: the KV cache's memory space is not accessible from the "
                                   "executor's execution space (see izwi::memory_space_access)");
  else if constexpr (!r::executor_kv_cache_shape<E>)
    static_assert(always_false<E>, "izwi::Engine: the executor policy lacks `KVCacheShape kv_cache_shape() const`");
  else if constexpr (!r::executor_execute<E, K>)
    static_assert(always_false<E>, "izwi::Engine: the executor policy lacks "
                                   "`execute(const StepPlan&, KVCache&, StepResult&)` for this KV cache");
  else
    return true;
  return false;
}

/// True when the three policies fit together; otherwise exactly one
/// static_assert names the first problem (the KV cache is checked first,
/// since the other two are checked against it).
template <class N>
constexpr bool check_notifier_policy() {
  namespace r = requirements;
  if constexpr (!opts_into<N, stream_notifier_tag>)
    static_assert(always_false<N>, "izwi::Engine: the stream notifier does not opt into izwi::stream_notifier_tag "
                                   "(declare `using policy_category = izwi::stream_notifier_tag;`)");
  else if constexpr (!r::notifier_notify<N>)
    static_assert(always_false<N>, "izwi::Engine: the stream notifier lacks `void notify() const`");
  else if constexpr (!r::notifier_value<N>)
    static_assert(always_false<N>, "izwi::Engine: the stream notifier must be default-constructible and movable");
  else
    return true;
  return false;
}

template <class S, class K, class E, class N>
constexpr bool check_engine_policies() {
  if constexpr (!check_kv_cache_policy<K>())
    return false;
  else if constexpr (!check_executor_policy<E, K>())
    return false;
  else if constexpr (!check_scheduler_policy<S, K>())
    return false;
  else
    return check_notifier_policy<N>();
}

}  // namespace izwi::detail
