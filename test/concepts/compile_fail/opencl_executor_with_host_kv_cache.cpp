// Must not compile: an engine of OpenClExecutor<Qwen3> over a PagedKVCache,
// whose tensors live in host memory an OpenCL kernel cannot address. The
// engine says so in one sentence (engine/detail/policy_checks.hpp).
// Run by CTest as concepts.compile_fail.opencl_executor_with_host_kv_cache.
#include "izwi/engine/engine.hpp"
#include "izwi/executor/opencl.hpp"
#include "izwi/kv_cache/device.hpp"
#include "izwi/kv_cache/paged.hpp"
#include "izwi/models/qwen3.hpp"
#include "izwi/scheduler/fcfs.hpp"

#ifndef IZWI_COMPILE_FAIL_CONTROL
using GpuEngine = izwi::Engine<izwi::FcfsScheduler, izwi::PagedKVCache<>, izwi::OpenClExecutor<izwi::Qwen3>>;
#else
using GpuEngine = izwi::Engine<izwi::FcfsScheduler, izwi::DeviceKVCache<>, izwi::OpenClExecutor<izwi::Qwen3>>;
#endif

std::size_t engine_bytes() { return sizeof(GpuEngine); }
