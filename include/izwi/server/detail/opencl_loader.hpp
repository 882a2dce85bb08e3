#pragma once
// The OpenCL half of izwi-server's stock loader (izwi/server/model_loader.hpp),
// for builds with IZWI_WITH_OPENCL only. Opening the device is
// detail/opencl_device.hpp's.
//
// Declared here without OpenCL's headers, so the CPU loader's translation
// unit never parses them; the bodies (impl/opencl_loader.ipp) instantiate the
// OpenCL engines (Engine<FcfsScheduler | PriorityScheduler, DeviceKVCache<> |
// UnifiedKVCache<>, OpenClExecutor<Qwen3>>). Under IZWI_SEPARATE_COMPILATION
// they are compiled once, in src/izwi_server_opencl.cpp (a source of
// izwi::server_compiled where OpenCL exists), and nowhere else.

#include <memory>
#include <string>

#include "izwi/config.hpp"
#include "izwi/server/any_engine.hpp"
#include "izwi/server/device.hpp"

namespace izwi {
class Qwen3;
struct SchedulerConfig;
struct EngineConfig;
}  // namespace izwi

namespace izwi::server {
struct CpuLoaderSettings;
}  // namespace izwi::server

namespace izwi::server::detail {

/// Qwen3 on OpenClExecutor<Qwen3> in `context`, with settings' scheduler and
/// KV cache (paged: a DeviceKVCache<> of kv_cache_bytes; unified: the
/// UnifiedKVCache<>, aliased for the device).
IZWI_DECL std::unique_ptr<AnyEngine> serve_qwen3_on_opencl(Qwen3 model, std::shared_ptr<opencl::Context> context,
                                                           ModelInfo info, const CpuLoaderSettings& settings,
                                                           const SchedulerConfig& scheduler_config,
                                                           const EngineConfig& engine_config);

}  // namespace izwi::server::detail

#if !defined(IZWI_SEPARATE_COMPILATION)
#include "izwi/server/impl/opencl_loader.ipp"
#endif
