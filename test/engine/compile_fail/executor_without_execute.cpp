// Must not compile: an Engine given an executor that has no execute().
// The diagnostic must name that member, not dump every constraint.
// Run by CTest as engine.compile_fail.executor_without_execute (label compile-fail).
#include "izwi/engine/engine.hpp"
#include "izwi/kv_cache/paged.hpp"
#include "izwi/scheduler/fcfs.hpp"

namespace {
struct HalfAnExecutor {
  using policy_category = izwi::executor_tag;
  using execution_space = izwi::cpu_execution;
  izwi::KVCacheShape kv_cache_shape() const { return {1, 1, 4, izwi::DType::f32}; }
#ifdef IZWI_COMPILE_FAIL_CONTROL
  template <class K>
  void execute(const izwi::StepPlan&, K&, izwi::StepResult&) {}
#endif
};
}  // namespace

int main() {
  return sizeof(izwi::Engine<izwi::FcfsScheduler, izwi::PagedKVCache<>, HalfAnExecutor>) > 0 ? 0 : 1;
}
