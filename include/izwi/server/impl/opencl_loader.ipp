#pragma once
// The bodies of izwi/server/detail/opencl_loader.hpp: inline in header-only
// builds with IZWI_WITH_OPENCL; compiled once, in
// src/izwi_server_opencl.cpp, under IZWI_SEPARATE_COMPILATION.

#include <utility>

#include "izwi/engine/engine_config.hpp"
#include "izwi/executor/opencl.hpp"
#include "izwi/kv_cache/device.hpp"
#include "izwi/kv_cache/unified.hpp"
#include "izwi/models/qwen3.hpp"
#include "izwi/scheduler/scheduler_config.hpp"
#include "izwi/server/detail/opencl_loader.hpp"
#include "izwi/server/detail/served_engine.hpp"
#include "izwi/server/model_loader.hpp"

namespace izwi::server::detail {

IZWI_DECL std::unique_ptr<AnyEngine> serve_qwen3_on_opencl(Qwen3 model, std::shared_ptr<opencl::Context> context,
                                                           ModelInfo info, const CpuLoaderSettings& settings,
                                                           const SchedulerConfig& scheduler_config,
                                                           const EngineConfig& engine_config) {
  OpenClExecutor<Qwen3> executor(std::move(model), context);
  const bool priority = settings.scheduling == SchedulingPolicy::priority;
  if (settings.kv_cache == KVCacheKind::unified) {
    // Memory the host and the device use in place: shared virtual memory
    // where the device has it, else host memory aliased (CL_MEM_USE_HOST_PTR),
    // with the cache's memory-pressure behaviour unchanged. A device that does
    // not share the host's memory (a discrete GPU) is refused here, at load,
    // with the reason (docs/opencl.md).
    UnifiedKVCacheConfig cache_config;
    cache_config.memory = opencl::unified_memory_for(context);
    cache_config.memory_fraction = settings.kv_cache_memory_fraction;
    cache_config.enable_prefix_caching = settings.enable_prefix_caching;
    UnifiedKVCache<> cache(executor.kv_cache_shape(), cache_config);
    return make_served_engine(priority, std::move(executor), std::move(cache), scheduler_config, engine_config,
                              std::move(info), settings.max_model_len);
  }
  DeviceKVCacheConfig cache_config;
  cache_config.byte_budget = settings.kv_cache_bytes;
  cache_config.enable_prefix_caching = settings.enable_prefix_caching;
  DeviceKVCache<> cache(std::move(context), executor.kv_cache_shape(), cache_config);
  return make_served_engine(priority, std::move(executor), std::move(cache), scheduler_config, engine_config,
                            std::move(info), settings.max_model_len);
}

}  // namespace izwi::server::detail
