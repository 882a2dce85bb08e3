#pragma once
// Common engine configurations for the engine tests.

#include <vector>

#include "engine/toy_model.hpp"
#include "izwi/engine/engine.hpp"
#include "izwi/kv_cache/paged.hpp"
#include "izwi/kv_cache/unified.hpp"
#include "izwi/scheduler/fcfs.hpp"
#include "izwi/scheduler/priority.hpp"

namespace izwi::testing {

/// Block size 4 keeps block boundaries frequent in short test prompts.
using ToyKV = PagedKVCache<4>;
using ToyEngine = Engine<FcfsScheduler, ToyKV, ToyExecutor>;

inline ToyEngine make_toy_engine(std::size_t num_blocks = 256, SchedulerConfig scheduler = {},
                                 ToyModelConfig model = {}, EngineConfig engine = {}) {
  ToyExecutor executor(std::move(model));
  ToyKV kv(executor.kv_cache_shape(), {.num_blocks = num_blocks});
  return ToyEngine(FcfsScheduler(scheduler), std::move(kv), std::move(executor), std::move(engine));
}

inline Request make_request(std::vector<TokenId> prompt, std::uint32_t max_tokens = 8,
                            std::optional<std::uint64_t> seed = std::nullopt, float temperature = 0.0f) {
  Request r;
  r.prompt_tokens = std::move(prompt);
  r.sampling.max_tokens = max_tokens;
  r.sampling.temperature = temperature;
  r.sampling.seed = seed;
  return r;
}

/// A prompt of `length` tokens derived from `salt`.
inline std::vector<TokenId> make_prompt(std::size_t length, std::uint32_t salt) {
  std::vector<TokenId> prompt(length);
  for (std::size_t i = 0; i < length; ++i) prompt[i] = static_cast<TokenId>((salt * 7919u + i * 31u) % 997u);
  return prompt;
}

}  // namespace izwi::testing
