// Randomized stress: thousands of random add / abort / step operations on a
// small cache that forces preemption, checked against the engine's
// invariants after every step and against the toy model's reference output
// at the end. The seed is printed on failure.
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <vector>

#include "engine/engine_fixture.hpp"

using namespace izwi;
using namespace izwi::testing;

namespace {

struct Tracked {
  Request request;
  std::vector<TokenId> tokens;
  std::optional<FinishReason> reason;
  bool abort_requested = false;
};

template <class EngineT>
void run_stress(std::uint64_t seed, EngineT& engine, std::size_t budget, std::size_t max_seqs, int operations) {
  INFO("stress seed " << seed);
  std::mt19937_64 rng(seed);
  std::map<RequestId, Tracked> requests;
  std::vector<RequestId> live;
  const std::vector<TokenId> shared_prefix = make_prompt(24, 999);

  auto consume = [&](std::span<const StreamChunk> chunks) {
    for (const StreamChunk& chunk : chunks) {
      Tracked& t = requests.at(chunk.id);
      REQUIRE_FALSE(t.reason.has_value());  // nothing after the final chunk
      t.tokens.insert(t.tokens.end(), chunk.token_ids.begin(), chunk.token_ids.end());
      if (chunk.finished()) {
        t.reason = chunk.finish_reason;
        live.erase(std::find(live.begin(), live.end(), chunk.id));
      }
    }
  };
  auto check_invariants = [&] {
    const std::string problem = engine.kv_cache().check_invariants();
    INFO(problem);
    REQUIRE(problem.empty());
    REQUIRE(engine.executor().corrupt_reads() == 0);
    const StepPlan& plan = engine.scheduler().last_plan();
    REQUIRE(plan.num_scheduled_tokens <= budget);
    REQUIRE(plan.sequences.size() <= max_seqs);
  };

  for (int op = 0; op < operations; ++op) {
    const int dice = static_cast<int>(rng() % 10);
    if (dice < 3) {
      Request r;
      const std::size_t length = 1 + rng() % 40;
      if (rng() % 3 == 0) {  // share a prefix to exercise prefix caching
        r.prompt_tokens = shared_prefix;
        r.prompt_tokens.resize(std::min<std::size_t>(length + 10, shared_prefix.size()));
        r.prompt_tokens.push_back(static_cast<TokenId>(rng() % 997));
      } else {
        r.prompt_tokens = make_prompt(length, static_cast<std::uint32_t>(rng()));
      }
      r.sampling.max_tokens = static_cast<std::uint32_t>(1 + rng() % 20);
      r.sampling.temperature = rng() % 2 ? 0.0f : 1.0f;
      r.sampling.seed = rng();
      r.priority = static_cast<std::int32_t>(rng() % 3);
      const RequestId id = engine.add_request(r);
      requests[id] = Tracked{std::move(r), {}, {}, false};
      live.push_back(id);
    } else if (dice < 4 && !live.empty()) {
      const RequestId id = live[rng() % live.size()];
      requests.at(id).abort_requested = true;
      engine.abort(id);
    } else {
      consume(engine.step());
      check_invariants();
    }
  }
  for (int steps = 0; steps < 100000 && !live.empty(); ++steps) {
    consume(engine.step());
    check_invariants();
  }
  REQUIRE(live.empty());
  REQUIRE_FALSE(engine.has_unfinished_requests());
  const KVCacheStats stats = engine.kv_cache().stats();
  CHECK(stats.num_used_blocks == 0);
  CHECK(stats.num_free_blocks == stats.num_blocks);

  std::size_t compared = 0;
  for (const auto& [id, t] : requests) {
    REQUIRE(t.reason.has_value());
    if (*t.reason == FinishReason::abort) {
      CHECK(t.abort_requested);
      continue;
    }
    INFO("request " << id);
    REQUIRE(*t.reason == FinishReason::length);
    CHECK(t.tokens == toy_reference(t.request.prompt_tokens, t.request.sampling, engine.executor().config()));
    ++compared;
  }
  CHECK(compared > 0);
}

}  // namespace

TEST_CASE("randomized add/abort/step keeps every invariant (FCFS, paged)", "[engine][stress]") {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    SchedulerConfig config;
    config.max_num_batched_tokens = 16 + seed * 16;
    config.max_num_seqs = 3 + seed * 3;
    auto engine = make_toy_engine(48, config);
    run_stress(seed, engine, config.max_num_batched_tokens, config.max_num_seqs, 1500);
    CHECK(engine.metrics().num_preemptions > 0);
  }
}

TEST_CASE("randomized add/abort/step keeps every invariant (priority, unified)", "[engine][stress]") {
  const std::uint64_t seed = 11;
  ManualMemoryPressureSource pressure;
  ToyExecutor executor;
  UnifiedKVCacheConfig kv_config;
  kv_config.num_blocks = 40;
  kv_config.poll_interval = std::chrono::nanoseconds(0);
  UnifiedKVCache<ManualMemoryPressureSource, 4> kv(executor.kv_cache_shape(), kv_config, pressure);
  SchedulerConfig config;
  config.max_num_batched_tokens = 32;
  config.max_num_seqs = 8;
  Engine engine(PriorityScheduler(config), std::move(kv), std::move(executor));
  run_stress(seed, engine, config.max_num_batched_tokens, config.max_num_seqs, 1500);
}
