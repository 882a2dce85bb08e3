// Must not compile: CpuExecutor runs a model family's forward pass on the CPU
// backend's ops, so a family without forward() is refused where the executor
// is named, and the diagnostic names the requirement, ModelFamilyFor.
// Run by CTest as concepts.compile_fail.cpu_executor_without_forward.
#include "../concept_types.hpp"
#include "izwi/executor/cpu.hpp"
#include "izwi/models/qwen3.hpp"

#ifndef IZWI_COMPILE_FAIL_CONTROL
using Executor = izwi::CpuExecutor<izwi_test::GoodModel>;
#else
using Executor = izwi::CpuExecutor<izwi::Qwen3>;
#endif

std::size_t threads(const Executor& executor) { return executor.num_threads(); }
