#pragma once
// Small policy types for the concept tests. Declarations only: the concepts
// look at signatures, nothing here is ever called.
//
// Each family is one template whose `Omit` bit mask removes exactly one member
// (through a requires-clause on that member), so "missing one member" means
// exactly that, and the conforming type is the same template with nothing
// omitted. Tag and memory space come from bases, so they too can be left out.

#include <cstddef>
#include <memory>
#include <cstdint>
#include <span>
#include <string_view>

#include "izwi/concepts.hpp"

namespace izwi_test {

using namespace izwi;

// --- tags and spaces ---------------------------------------------------------
template <class Tag> struct TagBase { using policy_category = Tag; };
template <> struct TagBase<void> {};  // no opt-in

struct DerivedSchedulerTag : scheduler_tag {};  // looks like the tag, is not the tag

template <class Mem> struct MemoryBase { using memory_space = Mem; };
template <> struct MemoryBase<void> {};

template <class Exec> struct ExecutionBase { using execution_space = Exec; };
template <> struct ExecutionBase<void> {};

struct OtherMemory {};   // a space nobody declared access to
struct PinnedMemory {};  // a space added the documented way:
}  // namespace izwi_test

template <>
struct izwi::memory_space_access<izwi::cpu_execution, izwi_test::PinnedMemory> {
  static constexpr bool accessible = true;
};

namespace izwi_test {

// --- KV caches ------------------------------------------------------------------
enum CacheOmit : unsigned {
  kBlockSize = 1u << 0,
  kShape = 1u << 1,
  kFind = 1u << 2,
  kAllocate = 1u << 3,
  kFree = 1u << 4,
  kBlockTable = 1u << 5,
  kStats = 1u << 6,
  kLayer = 1u << 7,
  kAllocateVoid = 1u << 8,   // allocate_slots returns void instead of bool
  kStatsNonConst = 1u << 9,  // stats() only on a non-const cache
  kAdvice = 1u << 10,        // adds admission_advice() (the optional ability)
  kAdviceBool = 1u << 11,    // admission_advice() returns the wrong type
};

template <class Mem, unsigned Omit = 0, class Tag = kv_cache_tag>
struct Cache : TagBase<Tag>, MemoryBase<Mem> {
  std::size_t block_size() const requires((Omit & kBlockSize) == 0);
  const KVCacheShape& shape() const requires((Omit & kShape) == 0);
  PrefixHit find_cached_prefix(const SequenceView&) requires((Omit & kFind) == 0);
  bool allocate_slots(const SequenceView&, std::size_t, std::size_t, PrefixHit)
    requires((Omit & (kAllocate | kAllocateVoid)) == 0);
  void allocate_slots(const SequenceView&, std::size_t, std::size_t, PrefixHit)
    requires((Omit & kAllocateVoid) != 0);
  void free(RequestId) requires((Omit & kFree) == 0);
  std::span<const BlockId> block_table(RequestId) const requires((Omit & kBlockTable) == 0);
  KVCacheStats stats() const requires((Omit & (kStats | kStatsNonConst)) == 0);
  KVCacheStats stats() requires((Omit & kStatsNonConst) != 0);
  KVLayerView layer(std::uint32_t) requires((Omit & kLayer) == 0);
  AdmissionAdvice admission_advice() requires((Omit & kAdvice) != 0);
  bool admission_advice() requires((Omit & kAdviceBool) != 0);
};

using HostCache = Cache<host_space>;
using UnifiedCache = Cache<unified_space>;
using DeviceCache = Cache<device_space>;
using PressureCache = Cache<unified_space, kAdvice>;
using UntaggedCache = Cache<host_space, 0, void>;
using UntaggedPressureCache = Cache<unified_space, kAdvice, void>;
using PressureCacheWrongAdvice = Cache<unified_space, kAdviceBool>;
using CacheNoMemorySpace = Cache<void>;
using CacheNoBlockSize = Cache<host_space, kBlockSize>;
using CacheNoShape = Cache<host_space, kShape>;
using CacheNoFind = Cache<host_space, kFind>;
using CacheNoAllocate = Cache<host_space, kAllocate>;
using CacheNoFree = Cache<host_space, kFree>;
using CacheNoBlockTable = Cache<host_space, kBlockTable>;
using CacheNoStats = Cache<host_space, kStats>;
using CacheNoLayer = Cache<host_space, kLayer>;
using CacheAllocateReturnsVoid = Cache<host_space, kAllocateVoid>;
using CacheMutableOnlyStats = Cache<host_space, kStatsNonConst>;

// --- schedulers -------------------------------------------------------------------
enum SchedulerOmit : unsigned {
  kAdd = 1u << 0,
  kSchedule = 1u << 1,
  kUpdate = 1u << 2,
  kFinish = 1u << 3,
  kSetPaused = 1u << 4,
  kNumWaiting = 1u << 5,
  kNumRunning = 1u << 6,
  kNumPreemptions = 1u << 7,
  kScheduleByValue = 1u << 8,  // schedule() returns StepPlan by value
};

template <unsigned Omit = 0, class Tag = scheduler_tag>
struct Scheduler : TagBase<Tag> {
  void add(Request&&) requires((Omit & kAdd) == 0);
  template <class K>
  const StepPlan& schedule(K&) requires((Omit & (kSchedule | kScheduleByValue)) == 0);
  template <class K>
  StepPlan schedule(K&) requires((Omit & kScheduleByValue) != 0);
  template <class K>
  void update(const StepResult&, K&) requires((Omit & kUpdate) == 0);
  template <class K>
  bool finish(RequestId, FinishReason, K&) requires((Omit & kFinish) == 0);
  void set_paused(RequestId, bool) requires((Omit & kSetPaused) == 0);
  std::size_t num_waiting() const requires((Omit & kNumWaiting) == 0);
  std::size_t num_running() const requires((Omit & kNumRunning) == 0);
  std::uint64_t num_preemptions() const requires((Omit & kNumPreemptions) == 0);
};

using GoodScheduler = Scheduler<>;
using UntaggedScheduler = Scheduler<0, void>;
using DerivedTagScheduler = Scheduler<0, DerivedSchedulerTag>;
using SchedulerNoAdd = Scheduler<kAdd>;
using SchedulerNoSchedule = Scheduler<kSchedule>;
using SchedulerNoUpdate = Scheduler<kUpdate>;
using SchedulerNoFinish = Scheduler<kFinish>;
using SchedulerNoSetPaused = Scheduler<kSetPaused>;
using SchedulerNoNumWaiting = Scheduler<kNumWaiting>;
using SchedulerNoNumRunning = Scheduler<kNumRunning>;
using SchedulerNoNumPreemptions = Scheduler<kNumPreemptions>;
using SchedulerPlanByValue = Scheduler<kScheduleByValue>;

/// Works with HostCache only: SchedulerFor<., HostCache>, not SchedulerPolicy.
struct HostCacheOnlyScheduler {
  using policy_category = scheduler_tag;
  void add(Request&&);
  const StepPlan& schedule(HostCache&);
  void update(const StepResult&, HostCache&);
  bool finish(RequestId, FinishReason, HostCache&);
  void set_paused(RequestId, bool);
  std::size_t num_waiting() const;
  std::size_t num_running() const;
  std::uint64_t num_preemptions() const;
};

// --- executors --------------------------------------------------------------------
enum ExecutorOmit : unsigned {
  kExecShape = 1u << 0,
  kExecute = 1u << 1,
  kAbilities = 1u << 2,       // adds eos_token_ids, make_detokenizer, max_model_len
  kBadDetokenizer = 1u << 3,  // make_detokenizer().append() yields no text
  kBadEos = 1u << 4,          // eos_token_ids() of the wrong element type
};

struct Detokenizer {
  std::string_view append(TokenId);
};
struct BadDetokenizer {
  int append(TokenId);
};

template <class Exec, unsigned Omit = 0, class Tag = executor_tag>
struct Executor : TagBase<Tag>, ExecutionBase<Exec> {
  KVCacheShape kv_cache_shape() const requires((Omit & kExecShape) == 0);
  template <class K>
  void execute(const StepPlan&, K&, StepResult&) requires((Omit & kExecute) == 0);

  std::span<const TokenId> eos_token_ids() const requires((Omit & kAbilities) != 0);
  Detokenizer make_detokenizer() const requires((Omit & kAbilities) != 0);
  std::size_t max_model_len() const requires((Omit & kAbilities) != 0);
  BadDetokenizer make_detokenizer() const requires((Omit & kBadDetokenizer) != 0);
  std::span<const std::int64_t> eos_token_ids() const requires((Omit & kBadEos) != 0);
};

using CpuExecutor = Executor<cpu_execution>;
using GpuExecutor = Executor<gpu_execution>;
using FullExecutor = Executor<cpu_execution, kAbilities>;
using BadDetokenizerExecutor = Executor<cpu_execution, kBadDetokenizer>;
using BadEosExecutor = Executor<cpu_execution, kBadEos>;
using UntaggedExecutor = Executor<cpu_execution, 0, void>;
using ExecutorNoExecutionSpace = Executor<void>;
using ExecutorNoShape = Executor<cpu_execution, kExecShape>;
using ExecutorNoExecute = Executor<cpu_execution, kExecute>;

/// execute() takes HostCache only.
struct HostOnlyExecutor {
  using policy_category = executor_tag;
  using execution_space = cpu_execution;
  KVCacheShape kv_cache_shape() const;
  void execute(const StepPlan&, HostCache&, StepResult&);
};

// --- model families ---------------------------------------------------------------
enum ModelOmit : unsigned {
  kConfigType = 1u << 0,
  kConfig = 1u << 1,
  kConfigByValue = 1u << 2,
  kModelShape = 1u << 3,
  kVocab = 1u << 4,
  kTextVocab = 1u << 5,
};

struct TinyConfig {
  std::uint32_t hidden_size = 64;
};
template <bool HasConfigType> struct ConfigTypeBase { using config_type = TinyConfig; };
template <> struct ConfigTypeBase<false> {};

template <unsigned Omit = 0, class Tag = model_family_tag>
struct Model : TagBase<Tag>, ConfigTypeBase<(Omit & kConfigType) == 0> {
  const TinyConfig& config() const requires((Omit & (kConfig | kConfigByValue)) == 0);
  TinyConfig config() const requires((Omit & kConfigByValue) != 0);
  KVCacheShape kv_cache_shape() const requires((Omit & kModelShape) == 0);
  std::size_t vocab_size() const requires((Omit & (kVocab | kTextVocab)) == 0);
  std::string_view vocab_size() const requires((Omit & kTextVocab) != 0);
};

using GoodModel = Model<>;
using UntaggedModel = Model<0, void>;
using ModelNoConfigType = Model<kConfigType>;
using ModelNoConfig = Model<kConfig>;
using ModelConfigByValue = Model<kConfigByValue>;
using ModelNoShape = Model<kModelShape>;
using ModelNoVocab = Model<kVocab>;
using ModelTextVocab = Model<kTextVocab>;

// --- backend ops -------------------------------------------------------------------
enum OpsOmit : unsigned {
  kAttention = 1u << 0,      // no ops.attention
  kBufferByValue = 1u << 1,  // buffer() returns a std::size_t, not float*
  kWeightType = 1u << 2,     // no weight_type
};
struct TinyWeight {};
struct TinySequence {};
template <bool Has> struct WeightTypeBase { using weight_type = TinyWeight; };
template <> struct WeightTypeBase<false> {};

template <unsigned Omit = 0, class Tag = backend_ops_tag>
struct Ops : TagBase<Tag>, WeightTypeBase<(Omit & kWeightType) == 0> {
  using attention_sequence = TinySequence;
  float* buffer(std::size_t, std::size_t) requires((Omit & kBufferByValue) == 0);
  std::size_t buffer(std::size_t, std::size_t) requires((Omit & kBufferByValue) != 0);
  void embed(const TinyWeight&, std::span<const TokenId>, float*);
  void matmul(const float*, std::size_t, const TinyWeight&, float*);
  void rms_norm(const float*, std::size_t, std::size_t, const float*, float, float*);
  void rms_norm_heads(float*, std::size_t, std::size_t, std::size_t, const float*, float);
  void rope(float*, std::size_t, std::size_t, std::size_t, std::span<const std::int64_t>, double);
  void store_kv(const KVLayerView&, DType, const float*, const float*, std::span<const std::int64_t>, std::size_t,
                std::size_t);
  void attention(const float*, std::span<const TinySequence>, const KVLayerView&, DType, std::size_t, std::size_t,
                 std::size_t, std::size_t, float*) requires((Omit & kAttention) == 0);
  void silu_mul(float*, const float*, std::size_t);
  void add(float*, const float*, std::size_t);
  void gather_rows(const float*, std::size_t, std::span<const std::uint32_t>, float*);
};
using GoodOps = Ops<>;
using UntaggedOps = Ops<0, void>;
using OpsNoAttention = Ops<kAttention>;
using OpsBufferByValue = Ops<kBufferByValue>;
using OpsNoWeightType = Ops<kWeightType>;

/// A model family with a forward pass over any backend ops (GoodModel has none).
struct ForwardModel : Model<> {
  template <BackendOps O, KVCachePolicy K>
  void forward(O&, const ForwardBatch&, std::span<const typename O::attention_sequence>, K&, float*) const;
};

/// Stream notifiers: stateless and stateful ones that fit, and one short of
/// each requirement.
struct QuietNotifier {
  using policy_category = izwi::stream_notifier_tag;
  void notify() const noexcept {}
};
struct WakingNotifier {
  using policy_category = izwi::stream_notifier_tag;
  std::shared_ptr<int> target;  // state: what to wake
  void notify() const {}
};
struct UntaggedNotifier {
  void notify() const {}
};
struct NotifierMutableNotify {  // notify() must be callable on a const notifier
  using policy_category = izwi::stream_notifier_tag;
  void notify() {}
};
struct NotifierNoDefault {
  using policy_category = izwi::stream_notifier_tag;
  explicit NotifierNoDefault(int) {}
  void notify() const {}
};

}  // namespace izwi_test
