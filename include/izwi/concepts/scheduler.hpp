#pragma once
// SchedulerPolicy: decides, each step, which requests compute how many tokens
// within one token budget, and keeps their state between steps.
// Documented in docs/concepts/scheduler.md.
//
// Valid expressions, for s an S, cs a const S, kv a KV cache:
//   s.add(std::move(request))           enqueue a validated request (id assigned)
//   s.schedule(kv)  -> const StepPlan&  one step's plan (see core/step.hpp); may
//                                       preempt running requests to make room
//   s.update(result, kv)                advance every scheduled sequence by its
//                                       scheduled tokens; append sampled tokens
//   s.finish(id, reason, kv) -> bool    end a request in any state, free its blocks;
//                                       false if unknown (abort = finish(id, abort, kv))
//   s.set_paused(id, paused)            a paused request is not scheduled (stream back-pressure)
//   cs.num_waiting(), cs.num_running() -> size_t
//   cs.num_preemptions()       -> uint64_t   preemptions so far

#include <concepts>
#include <cstddef>
#include <cstdint>

#include "izwi/concepts/archetypes.hpp"
#include "izwi/concepts/kv_cache.hpp"
#include "izwi/concepts/tags.hpp"
#include "izwi/core/request.hpp"
#include "izwi/core/step.hpp"

namespace izwi {

/// Each requirement of SchedulerFor on its own, so the engine can name the
/// first one a type misses.
namespace requirements {
template <class S> concept scheduler_add = requires(S& s, Request&& request) { s.add(std::move(request)); };
template <class S, class K> concept scheduler_schedule = requires(S& s, K& kv) {
  { s.schedule(kv) } -> std::same_as<const StepPlan&>;
};
template <class S, class K> concept scheduler_update = requires(S& s, const StepResult& result, K& kv) {
  s.update(result, kv);
};
template <class S, class K> concept scheduler_finish = requires(S& s, RequestId id, FinishReason reason, K& kv) {
  { s.finish(id, reason, kv) } -> std::same_as<bool>;
};
template <class S> concept scheduler_set_paused = requires(S& s, RequestId id, bool paused) { s.set_paused(id, paused); };
template <class S> concept scheduler_counts = requires(const S& cs) {
  { cs.num_waiting() } -> std::same_as<std::size_t>;
  { cs.num_running() } -> std::same_as<std::size_t>;
  { cs.num_preemptions() } -> std::same_as<std::uint64_t>;
};
}  // namespace requirements

/// S schedules requests whose blocks live in a K.
template <class S, class K>
concept SchedulerFor = opts_into<S, scheduler_tag> && KVCachePolicy<K> && requirements::scheduler_add<S> &&
                       requirements::scheduler_schedule<S, K> && requirements::scheduler_update<S, K> &&
                       requirements::scheduler_finish<S, K> && requirements::scheduler_set_paused<S> &&
                       requirements::scheduler_counts<S>;

/// S schedules against any KV cache that meets the contract.
template <class S>
concept SchedulerPolicy = SchedulerFor<S, archetypes::host_kv_cache>;

}  // namespace izwi
