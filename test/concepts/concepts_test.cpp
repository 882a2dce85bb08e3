// Compile-time contract tests for include/izwi/concepts/: every concept is
// checked positively (a small conforming type is accepted) and negatively (a
// type without the opt-in tag, or missing one member, is rejected). The checks
// are STATIC_REQUIREs: they are evaluated by the compiler, so a broken
// contract breaks the build of this file; the test cases exist so each group
// also shows up by name in CTest.
//
// The must-not-compile side (a constrained call that has to be rejected, with
// the right diagnostic) lives in compile_fail/*.cpp, run by
// izwi_add_compile_fail_test (see CMakeLists.txt beside this file).

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>

#include "concept_types.hpp"
#include "izwi/concepts.hpp"
#include "izwi/engine/stream_notifiers.hpp"

using namespace izwi;
using namespace izwi_test;

TEST_CASE("opts_into: a policy opts in by naming its tag", "[concepts]") {
  STATIC_REQUIRE(opts_into<GoodScheduler, scheduler_tag>);
  STATIC_REQUIRE(opts_into<HostCache, kv_cache_tag>);
  STATIC_REQUIRE(opts_into<CpuExecutor, executor_tag>);
  STATIC_REQUIRE(opts_into<GoodModel, model_family_tag>);

  // The wrong tag, no tag, a tag that is not a type alias of the tag.
  STATIC_REQUIRE_FALSE(opts_into<GoodScheduler, kv_cache_tag>);
  STATIC_REQUIRE_FALSE(opts_into<int, scheduler_tag>);
  STATIC_REQUIRE_FALSE(opts_into<UntaggedScheduler, scheduler_tag>);
  STATIC_REQUIRE_FALSE(opts_into<DerivedTagScheduler, scheduler_tag>);
}

TEST_CASE("accessible_from: the execution/memory space matrix", "[concepts]") {
  STATIC_REQUIRE(accessible_from<cpu_execution, host_space>);
  STATIC_REQUIRE(accessible_from<cpu_execution, unified_space>);
  STATIC_REQUIRE_FALSE(accessible_from<cpu_execution, device_space>);

  STATIC_REQUIRE(accessible_from<gpu_execution, device_space>);
  STATIC_REQUIRE(accessible_from<gpu_execution, unified_space>);
  STATIC_REQUIRE_FALSE(accessible_from<gpu_execution, host_space>);

  // Unknown spaces are inaccessible until someone says otherwise.
  STATIC_REQUIRE_FALSE(accessible_from<cpu_execution, OtherMemory>);
  STATIC_REQUIRE_FALSE(accessible_from<host_space, cpu_execution>);  // arguments swapped
  // ... and a new space is added by specialising memory_space_access (see concept_types.hpp).
  STATIC_REQUIRE(accessible_from<cpu_execution, PinnedMemory>);
  STATIC_REQUIRE_FALSE(accessible_from<gpu_execution, PinnedMemory>);
}

TEST_CASE("KVCachePolicy: accepts a conforming cache in every memory space", "[concepts][kv_cache]") {
  STATIC_REQUIRE(KVCachePolicy<HostCache>);
  STATIC_REQUIRE(KVCachePolicy<UnifiedCache>);
  STATIC_REQUIRE(KVCachePolicy<DeviceCache>);
  STATIC_REQUIRE_FALSE(PressureAwareKVCache<HostCache>);
  STATIC_REQUIRE(PressureAwareKVCache<PressureCache>);
  STATIC_REQUIRE(KVCachePolicy<PressureCache>);
}

TEST_CASE("KVCachePolicy: rejects a missing tag, member or wrong return type", "[concepts][kv_cache]") {
  STATIC_REQUIRE_FALSE(KVCachePolicy<UntaggedCache>);  // every member, no opt-in
  STATIC_REQUIRE_FALSE(KVCachePolicy<CacheNoMemorySpace>);
  STATIC_REQUIRE_FALSE(KVCachePolicy<CacheNoBlockSize>);
  STATIC_REQUIRE_FALSE(KVCachePolicy<CacheNoFind>);
  STATIC_REQUIRE_FALSE(KVCachePolicy<CacheNoAllocate>);
  STATIC_REQUIRE_FALSE(KVCachePolicy<CacheNoFree>);
  STATIC_REQUIRE_FALSE(KVCachePolicy<CacheNoBlockTable>);
  STATIC_REQUIRE_FALSE(KVCachePolicy<CacheNoStats>);
  STATIC_REQUIRE_FALSE(KVCachePolicy<CacheNoLayer>);
  STATIC_REQUIRE_FALSE(KVCachePolicy<CacheNoShape>);
  STATIC_REQUIRE_FALSE(KVCachePolicy<CacheAllocateReturnsVoid>);
  STATIC_REQUIRE_FALSE(KVCachePolicy<CacheMutableOnlyStats>);  // stats() must work on a const cache
  // The optional ability needs the base contract too.
  STATIC_REQUIRE_FALSE(PressureAwareKVCache<UntaggedPressureCache>);
  STATIC_REQUIRE_FALSE(PressureAwareKVCache<PressureCacheWrongAdvice>);
}

TEST_CASE("SchedulerPolicy / SchedulerFor: accepts a conforming scheduler", "[concepts][scheduler]") {
  STATIC_REQUIRE(SchedulerPolicy<GoodScheduler>);
  STATIC_REQUIRE(SchedulerFor<GoodScheduler, HostCache>);
  STATIC_REQUIRE(SchedulerFor<GoodScheduler, DeviceCache>);  // schedulers only do bookkeeping
  STATIC_REQUIRE_FALSE(SchedulerFor<GoodScheduler, UntaggedCache>);  // the cache must be a policy too
}

TEST_CASE("SchedulerPolicy: rejects a missing tag or member", "[concepts][scheduler]") {
  STATIC_REQUIRE_FALSE(SchedulerPolicy<UntaggedScheduler>);  // every member, no opt-in
  STATIC_REQUIRE_FALSE(SchedulerPolicy<DerivedTagScheduler>);
  STATIC_REQUIRE_FALSE(SchedulerPolicy<SchedulerNoAdd>);
  STATIC_REQUIRE_FALSE(SchedulerPolicy<SchedulerNoSchedule>);
  STATIC_REQUIRE_FALSE(SchedulerPolicy<SchedulerNoUpdate>);
  STATIC_REQUIRE_FALSE(SchedulerPolicy<SchedulerNoFinish>);
  STATIC_REQUIRE_FALSE(SchedulerPolicy<SchedulerNoSetPaused>);
  STATIC_REQUIRE_FALSE(SchedulerPolicy<SchedulerNoNumWaiting>);
  STATIC_REQUIRE_FALSE(SchedulerPolicy<SchedulerNoNumRunning>);
  STATIC_REQUIRE_FALSE(SchedulerPolicy<SchedulerNoNumPreemptions>);
  STATIC_REQUIRE_FALSE(SchedulerPolicy<SchedulerPlanByValue>);  // schedule() returns const StepPlan&
  // A scheduler that only works with its own cache type is not a SchedulerPolicy,
  // though it is SchedulerFor that cache.
  STATIC_REQUIRE_FALSE(SchedulerPolicy<HostCacheOnlyScheduler>);
  STATIC_REQUIRE(SchedulerFor<HostCacheOnlyScheduler, HostCache>);
}

TEST_CASE("ExecutorPolicy / ExecutorFor: accepts conforming executors", "[concepts][executor]") {
  STATIC_REQUIRE(ExecutorPolicy<CpuExecutor>);
  STATIC_REQUIRE(ExecutorPolicy<GpuExecutor>);
  STATIC_REQUIRE(ExecutorFor<CpuExecutor, HostCache>);
  STATIC_REQUIRE(ExecutorFor<CpuExecutor, UnifiedCache>);
  STATIC_REQUIRE(ExecutorFor<GpuExecutor, DeviceCache>);
  STATIC_REQUIRE(ExecutorFor<GpuExecutor, UnifiedCache>);
  STATIC_REQUIRE(ExecutorFor<CpuExecutor, archetypes::host_kv_cache>);
}

TEST_CASE("ExecutorFor: rejects a pairing whose memory the executor cannot read", "[concepts][executor]") {
  STATIC_REQUIRE_FALSE(ExecutorFor<CpuExecutor, DeviceCache>);
  STATIC_REQUIRE_FALSE(ExecutorFor<CpuExecutor, archetypes::kv_cache<device_space>>);
  STATIC_REQUIRE_FALSE(ExecutorFor<GpuExecutor, HostCache>);
}

TEST_CASE("ExecutorPolicy: rejects a missing tag or member", "[concepts][executor]") {
  STATIC_REQUIRE_FALSE(ExecutorPolicy<UntaggedExecutor>);  // every member, no opt-in
  STATIC_REQUIRE_FALSE(ExecutorFor<UntaggedExecutor, HostCache>);
  STATIC_REQUIRE_FALSE(ExecutorPolicy<ExecutorNoExecutionSpace>);
  STATIC_REQUIRE_FALSE(ExecutorPolicy<ExecutorNoShape>);
  // execute() is checked against the cache type, so it belongs to ExecutorFor.
  STATIC_REQUIRE(ExecutorPolicy<ExecutorNoExecute>);
  STATIC_REQUIRE_FALSE(ExecutorFor<ExecutorNoExecute, HostCache>);
  // An executor whose execute() takes only its own cache type is ExecutorFor that type alone.
  STATIC_REQUIRE(ExecutorFor<HostOnlyExecutor, HostCache>);
  STATIC_REQUIRE_FALSE(ExecutorFor<HostOnlyExecutor, UnifiedCache>);
}

TEST_CASE("Executor optional abilities are probed, not required", "[concepts][executor]") {
  STATIC_REQUIRE_FALSE(HasEosTokens<CpuExecutor>);
  STATIC_REQUIRE_FALSE(HasDetokenizer<CpuExecutor>);
  STATIC_REQUIRE_FALSE(HasMaxModelLen<CpuExecutor>);

  STATIC_REQUIRE(HasEosTokens<FullExecutor>);
  STATIC_REQUIRE(HasDetokenizer<FullExecutor>);
  STATIC_REQUIRE(HasMaxModelLen<FullExecutor>);
  STATIC_REQUIRE(ExecutorFor<FullExecutor, HostCache>);

  STATIC_REQUIRE_FALSE(HasDetokenizer<BadDetokenizerExecutor>);  // append() must yield text
  STATIC_REQUIRE_FALSE(HasEosTokens<BadEosExecutor>);            // a span of TokenId, not of int64
}

TEST_CASE("ModelFamily: accepts a conforming family, rejects the rest", "[concepts][model_family]") {
  STATIC_REQUIRE(ModelFamily<GoodModel>);
  STATIC_REQUIRE_FALSE(ModelFamily<UntaggedModel>);  // every member, no opt-in
  STATIC_REQUIRE_FALSE(ModelFamily<ModelNoConfigType>);
  STATIC_REQUIRE_FALSE(ModelFamily<ModelNoConfig>);
  STATIC_REQUIRE_FALSE(ModelFamily<ModelConfigByValue>);  // config() returns a const reference
  STATIC_REQUIRE_FALSE(ModelFamily<ModelNoShape>);
  STATIC_REQUIRE_FALSE(ModelFamily<ModelNoVocab>);
  STATIC_REQUIRE_FALSE(ModelFamily<ModelTextVocab>);  // vocab_size() must be a number
}

TEST_CASE("BackendOps: accepts a conforming backend, rejects the rest", "[concepts][backend_ops]") {
  STATIC_REQUIRE(BackendOps<GoodOps>);
  STATIC_REQUIRE_FALSE(BackendOps<UntaggedOps>);  // every operation, no opt-in
  STATIC_REQUIRE_FALSE(BackendOps<OpsNoAttention>);
  STATIC_REQUIRE_FALSE(BackendOps<OpsBufferByValue>);  // scratch is a float*
  STATIC_REQUIRE_FALSE(BackendOps<OpsNoWeightType>);
}

TEST_CASE("ModelFamilyFor: a family whose forward pass runs on the backend", "[concepts][backend_ops]") {
  STATIC_REQUIRE(ModelFamilyFor<ForwardModel, GoodOps>);
  STATIC_REQUIRE_FALSE(ModelFamilyFor<GoodModel, GoodOps>);        // no forward()
  STATIC_REQUIRE_FALSE(ModelFamilyFor<ForwardModel, UntaggedOps>);  // not a backend
  STATIC_REQUIRE_FALSE(ModelFamilyFor<ForwardModel, OpsNoAttention>);
}

TEST_CASE("StreamNotifier: accepts stateless and stateful notifiers, rejects the rest", "[concepts][notifier]") {
  STATIC_REQUIRE(StreamNotifier<QuietNotifier>);
  STATIC_REQUIRE(StreamNotifier<WakingNotifier>);
  STATIC_REQUIRE(StreamNotifier<CallbackNotifier>);
  STATIC_REQUIRE(StreamNotifier<BlockingNotifier>);
  STATIC_REQUIRE(std::is_empty_v<BlockingNotifier>);  // called without being stored per stream
  STATIC_REQUIRE_FALSE(StreamNotifier<UntaggedNotifier>);
  STATIC_REQUIRE_FALSE(StreamNotifier<NotifierMutableNotify>);
  STATIC_REQUIRE_FALSE(StreamNotifier<NotifierNoDefault>);
  STATIC_REQUIRE_FALSE(StreamNotifier<GoodScheduler>);  // another policy's tag
  namespace r = izwi::requirements;
  STATIC_REQUIRE_FALSE(r::notifier_notify<NotifierMutableNotify>);
  STATIC_REQUIRE(r::notifier_value<NotifierMutableNotify>);
  STATIC_REQUIRE_FALSE(r::notifier_value<NotifierNoDefault>);
  STATIC_REQUIRE(r::notifier_notify<NotifierNoDefault>);
  // The default notifier takes any callable, so on_ready([...] {...}) reads as before.
  STATIC_REQUIRE(std::is_convertible_v<void (*)(), CallbackNotifier>);
}

TEST_CASE("Archetypes satisfy their concepts", "[concepts][archetypes]") {
  STATIC_REQUIRE(KVCachePolicy<archetypes::host_kv_cache>);
  STATIC_REQUIRE(KVCachePolicy<archetypes::kv_cache<unified_space>>);
  STATIC_REQUIRE(KVCachePolicy<archetypes::kv_cache<device_space>>);
  STATIC_REQUIRE(std::same_as<archetypes::host_kv_cache::memory_space, host_space>);
  // SchedulerPolicy is defined as SchedulerFor the host archetype, so a
  // scheduler accepted by it uses nothing beyond the KV-cache contract.
  STATIC_REQUIRE(SchedulerFor<GoodScheduler, archetypes::host_kv_cache>);
}

TEST_CASE("Stateless policies cost nothing as [[no_unique_address]] members", "[concepts]") {
  struct Holder {
    [[no_unique_address]] GoodScheduler scheduler;
    std::uint64_t word;
  };
  STATIC_REQUIRE(std::is_empty_v<GoodScheduler>);
  STATIC_REQUIRE(sizeof(Holder) == sizeof(std::uint64_t));
}

TEST_CASE("A type missing one member fails exactly that named requirement", "[concepts]") {
  // The engine's diagnostics name the first requirement a policy misses
  // (izwi::requirements); each one-member-short type fails only its own.
  namespace r = izwi::requirements;
  STATIC_REQUIRE_FALSE(r::kv_free<CacheNoFree>);
  STATIC_REQUIRE(r::kv_memory_space<CacheNoFree> && r::kv_block_size<CacheNoFree> && r::kv_shape<CacheNoFree> &&
                 r::kv_find_cached_prefix<CacheNoFree> && r::kv_allocate_slots<CacheNoFree> &&
                 r::kv_block_table<CacheNoFree> && r::kv_stats<CacheNoFree> && r::kv_layer<CacheNoFree>);
  STATIC_REQUIRE_FALSE(r::kv_memory_space<CacheNoMemorySpace>);
  STATIC_REQUIRE_FALSE(r::kv_allocate_slots<CacheAllocateReturnsVoid>);
  STATIC_REQUIRE_FALSE(r::kv_stats<CacheMutableOnlyStats>);

  STATIC_REQUIRE_FALSE(r::scheduler_set_paused<SchedulerNoSetPaused>);
  STATIC_REQUIRE(r::scheduler_add<SchedulerNoSetPaused> && r::scheduler_schedule<SchedulerNoSetPaused, HostCache> &&
                 r::scheduler_update<SchedulerNoSetPaused, HostCache> &&
                 r::scheduler_finish<SchedulerNoSetPaused, HostCache> && r::scheduler_counts<SchedulerNoSetPaused>);
  STATIC_REQUIRE_FALSE(r::scheduler_schedule<SchedulerPlanByValue, HostCache>);

  STATIC_REQUIRE_FALSE(r::executor_execute<ExecutorNoExecute, HostCache>);
  STATIC_REQUIRE(r::executor_execution_space<ExecutorNoExecute> && r::executor_kv_cache_shape<ExecutorNoExecute>);
  STATIC_REQUIRE_FALSE(r::executor_kv_cache_shape<ExecutorNoShape>);
  // The CPU/device pairing fails only on the space, not on execute().
  STATIC_REQUIRE(r::executor_execute<CpuExecutor, DeviceCache>);
  STATIC_REQUIRE_FALSE(ExecutorFor<CpuExecutor, DeviceCache>);
}
