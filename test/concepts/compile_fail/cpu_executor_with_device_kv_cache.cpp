// Must not compile: an engine of CpuExecutor<Qwen3> over a DeviceKVCache,
// whose tensors live in OpenCL device memory the CPU cannot read. The engine
// says so in one sentence (engine/detail/policy_checks.hpp).
// Run by CTest as concepts.compile_fail.cpu_executor_with_device_kv_cache.
#include "izwi/engine/engine.hpp"
#include "izwi/executor/cpu.hpp"
#include "izwi/kv_cache/device.hpp"
#include "izwi/kv_cache/paged.hpp"
#include "izwi/models/qwen3.hpp"
#include "izwi/scheduler/fcfs.hpp"

#ifndef IZWI_COMPILE_FAIL_CONTROL
using CpuEngine = izwi::Engine<izwi::FcfsScheduler, izwi::DeviceKVCache<>, izwi::CpuExecutor<izwi::Qwen3>>;
#else
using CpuEngine = izwi::Engine<izwi::FcfsScheduler, izwi::PagedKVCache<>, izwi::CpuExecutor<izwi::Qwen3>>;
#endif

std::size_t engine_bytes() { return sizeof(CpuEngine); }
