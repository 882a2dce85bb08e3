// Must not compile: a function constrained on izwi::ExecutorFor, called with a
// CPU executor and a KV cache whose tensors live in device memory. The
// diagnostic must name the failing requirement, accessible_from.
// Run by CTest as concepts.compile_fail.executor_for_device_cache (label compile-fail).
#include "../concept_types.hpp"

template <class E, class K>
  requires izwi::ExecutorFor<E, K>
void run_step(E& executor, K& cache) {
  izwi::StepPlan plan;
  izwi::StepResult result;
  executor.execute(plan, cache, result);
}

void instantiate(izwi_test::CpuExecutor& executor, izwi_test::DeviceCache& device, izwi_test::HostCache& host) {
#ifndef IZWI_COMPILE_FAIL_CONTROL
  run_step(executor, device);
#else
  run_step(executor, host);  // the control: the same call with host memory compiles
#endif
  (void)device;
  (void)host;
}
