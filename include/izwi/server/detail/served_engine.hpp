#pragma once
// make_served_engine: the stock loader's last step for a chat model, shared
// by the CPU loader (impl/model_loader.ipp) and the OpenCL one
// (impl/opencl_loader.ipp): the scheduler chosen at run time becomes a
// template argument, the served context is sized against the KV cache, and
// the engine goes behind the AnyEngine boundary.

#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include "izwi/engine/engine.hpp"
#include "izwi/engine/engine_config.hpp"
#include "izwi/scheduler/fcfs.hpp"
#include "izwi/scheduler/priority.hpp"
#include "izwi/scheduler/scheduler_config.hpp"
#include "izwi/server/any_engine.hpp"

namespace izwi::server {

namespace detail {

/// The engine of one scheduler + cache + executor: the server's policies are
/// template arguments, so each pairing is its own instantiation, chosen once
/// per load (the CPU ones compiled once, in izwi::compiled, under
/// IZWI_SEPARATE_COMPILATION: see izwi/stock_engines.hpp).
template <class Scheduler, class Cache, class Executor>
std::unique_ptr<AnyEngine> make_served_engine(Executor executor, Cache cache, const SchedulerConfig& scheduler_config,
                                              EngineConfig engine_config, ModelInfo info,
                                              std::size_t max_model_len_override) {
  // The served context is what the model allows and what the KV cache can
  // hold for one request (vLLM sizes max_model_len against the cache the
  // same way); otherwise a prompt the length check accepts fails later, as
  // an "error" finish, when its blocks cannot be found. Said at start-up
  // through the description.
  const KVCacheStats kv = cache.stats();
  const std::size_t cache_tokens = kv.num_blocks * kv.block_size;
  const std::size_t wanted_len = max_model_len_override ? max_model_len_override : executor.max_model_len();
  std::size_t model_len = wanted_len;
  if (model_len == 0 || model_len > cache_tokens) {
    model_len = cache_tokens;
    info.description += ", context " + std::to_string(model_len) + " tokens (" +
                        (wanted_len ? "clamped from " + std::to_string(wanted_len) + ": " : "") +
                        "the KV cache holds " + std::to_string(cache_tokens) +
                        " tokens; a larger KV-cache budget serves more)";
  } else {
    info.description += ", context " + std::to_string(model_len) + " tokens";
  }
  engine_config.max_model_len = model_len;

  using ServedEngine = Engine<Scheduler, Cache, Executor>;
  auto engine = std::make_unique<ServedEngine>(Scheduler(scheduler_config), std::move(cache), std::move(executor),
                                               engine_config);
  info.max_model_len = engine->max_model_len();
  return std::make_unique<EngineModel<ServedEngine>>(std::move(engine), std::move(info));
}

/// PriorityScheduler when `priority_scheduling`, else FcfsScheduler.
template <class Cache, class Executor>
std::unique_ptr<AnyEngine> make_served_engine(bool priority_scheduling, Executor executor, Cache cache,
                                              const SchedulerConfig& scheduler_config,
                                              const EngineConfig& engine_config, ModelInfo info,
                                              std::size_t max_model_len_override) {
  if (priority_scheduling)
    return make_served_engine<PriorityScheduler>(std::move(executor), std::move(cache), scheduler_config,
                                                 engine_config, std::move(info), max_model_len_override);
  return make_served_engine<FcfsScheduler>(std::move(executor), std::move(cache), scheduler_config, engine_config,
                                           std::move(info), max_model_len_override);
}

}  // namespace detail
}  // namespace izwi::server
