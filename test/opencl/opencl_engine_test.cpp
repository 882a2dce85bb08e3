// The engine on OpenClExecutor<Qwen3> + DeviceKVCache against the engine on
// CpuExecutor<Qwen3> + PagedKVCache, on the random Qwen3 checkpoint (f32
// weights and cache): the same greedy ids, logits within a stated tolerance,
// and the engine's properties (batching, chunked prefill, prefix caching,
// preemption, every block back in the pool) on the OpenCL executor.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "izwi/engine/engine.hpp"
#include "izwi/executor/cpu.hpp"
#include "izwi/executor/opencl.hpp"
#include "izwi/kv_cache/device.hpp"
#include "izwi/kv_cache/paged.hpp"
#include "izwi/models/qwen3.hpp"
#include "izwi/scheduler/fcfs.hpp"
#include "models/random_qwen3.hpp"
#include "opencl/opencl_test_util.hpp"

using namespace izwi;
using izwi::testing::opencl_context;
using izwi::testing::relative_error;

namespace {

using CpuQwen3Engine = Engine<FcfsScheduler, PagedKVCache<>, CpuExecutor<Qwen3>>;
using OpenClQwen3Engine = Engine<FcfsScheduler, DeviceKVCache<>, OpenClExecutor<Qwen3>>;

// The pairing rules, where the real types meet.
static_assert(ExecutorFor<OpenClExecutor<Qwen3>, DeviceKVCache<>>);
static_assert(!ExecutorFor<OpenClExecutor<Qwen3>, PagedKVCache<>>);
static_assert(!ExecutorFor<CpuExecutor<Qwen3>, DeviceKVCache<>>);
static_assert(HasEosTokens<OpenClExecutor<Qwen3>> && HasDetokenizer<OpenClExecutor<Qwen3>>);

/// f32 on both sides; summation order differs (one work-item per output on
/// the device, SIMD blocks on the CPU; online softmax on both): 1e-4 of the
/// logits' largest magnitude.
constexpr double logits_tolerance = 1e-4;

constexpr std::size_t kv_blocks = 64;

CpuQwen3Engine make_cpu_engine(SchedulerConfig scheduling = {}) {
  CpuExecutor<Qwen3> executor(Qwen3::load(testing::random_qwen3()), {.num_threads = 2});
  executor.keep_logits(true);
  PagedKVCacheConfig kv_config;
  kv_config.num_blocks = kv_blocks;
  PagedKVCache<> kv(executor.kv_cache_shape(), kv_config);
  return CpuQwen3Engine(FcfsScheduler(scheduling), std::move(kv), std::move(executor));
}

OpenClQwen3Engine make_opencl_engine(const std::shared_ptr<opencl::Context>& ctx, SchedulerConfig scheduling = {},
                                     std::size_t blocks = kv_blocks) {
  OpenClExecutor<Qwen3> executor(Qwen3::load(testing::random_qwen3()), ctx);
  executor.keep_logits(true);
  PagedKVCacheConfig kv_config;
  kv_config.num_blocks = blocks;
  DeviceKVCache<> kv(ctx, executor.kv_cache_shape(), kv_config);
  return OpenClQwen3Engine(FcfsScheduler(scheduling), std::move(kv), std::move(executor));
}

Request greedy(std::vector<TokenId> prompt, std::uint32_t max_tokens) {
  Request r;
  r.prompt_tokens = std::move(prompt);
  r.sampling.temperature = 0.0f;
  r.sampling.max_tokens = max_tokens;
  r.sampling.ignore_eos = true;
  return r;
}

std::vector<TokenId> prompt_of(std::size_t length, std::uint32_t salt) {
  std::vector<TokenId> p(length);
  for (std::size_t i = 0; i < length; ++i) p[i] = static_cast<TokenId>((salt * 104729u + i * 7919u) % 151000u);
  return p;
}

/// Runs `engine` to the end, collecting each request's tokens by its index.
template <class E>
std::vector<std::vector<TokenId>> run_all(E& engine, const std::vector<Request>& requests) {
  std::map<RequestId, std::size_t> index;
  for (std::size_t i = 0; i < requests.size(); ++i) index[engine.add_request(requests[i])] = i;
  std::vector<std::vector<TokenId>> got(requests.size());
  while (engine.has_unfinished_requests())
    for (const StreamChunk& c : engine.step()) {
      auto& tokens = got[index.at(c.id)];
      tokens.insert(tokens.end(), c.token_ids.begin(), c.token_ids.end());
    }
  return got;
}

}  // namespace

TEST_CASE("OpenCL Qwen3 gives the CPU's greedy ids and logits, batched with chunked prefill",
          "[opencl][qwen3][engine]") {
  auto ctx = opencl_context();
  if (!ctx || !testing::have_qwen3_tokenizer()) return;
  SchedulerConfig scheduling;
  scheduling.max_num_batched_tokens = 16;  // prompts of 23 and 40 go in chunks, beside decodes
  auto cpu = make_cpu_engine(scheduling);
  auto gpu = make_opencl_engine(ctx, scheduling);
  std::vector<Request> requests = {greedy(prompt_of(7, 1), 64), greedy(prompt_of(23, 2), 64),
                                   greedy(prompt_of(40, 3), 64)};
  std::map<RequestId, std::size_t> cpu_index, gpu_index;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    cpu_index[cpu.add_request(requests[i])] = i;
    gpu_index[gpu.add_request(requests[i])] = i;
  }
  // Same scheduler, same block count: the two engines plan identical steps,
  // so each step's sampling rows can be compared one for one.
  std::vector<std::vector<TokenId>> cpu_tokens(requests.size()), gpu_tokens(requests.size());
  std::size_t steps = 0, max_batch = 0;
  double worst = 0;
  while (cpu.has_unfinished_requests() || gpu.has_unfinished_requests()) {
    REQUIRE(cpu.has_unfinished_requests() == gpu.has_unfinished_requests());
    for (const StreamChunk& c : cpu.step()) {
      auto& t = cpu_tokens[cpu_index.at(c.id)];
      t.insert(t.end(), c.token_ids.begin(), c.token_ids.end());
    }
    for (const StreamChunk& c : gpu.step()) {
      auto& t = gpu_tokens[gpu_index.at(c.id)];
      t.insert(t.end(), c.token_ids.begin(), c.token_ids.end());
    }
    max_batch = std::max(max_batch, gpu.scheduler().last_plan().sequences.size());
    REQUIRE(gpu.executor().last_logits().size() == cpu.executor().last_logits().size());
    if (!cpu.executor().last_logits().empty())
      worst = std::max(worst, relative_error(gpu.executor().last_logits(), cpu.executor().last_logits()));
    ++steps;
  }
  INFO("steps " << steps << ", worst relative logits error " << worst);
  CHECK(max_batch == requests.size());
  CHECK(worst <= logits_tolerance);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    INFO("request " << i);
    REQUIRE(gpu_tokens[i].size() == 64u);
    CHECK(gpu_tokens[i] == cpu_tokens[i]);
  }
  CHECK(gpu.kv_cache().stats().num_used_blocks == 0);
  CHECK(gpu.kv_cache().check_invariants().empty());
}

TEST_CASE("OpenCL Qwen3: a prefix-cache hit and a preemption change no token", "[opencl][qwen3][engine]") {
  auto ctx = opencl_context();
  if (!ctx || !testing::have_qwen3_tokenizer()) return;
  auto roomy = make_opencl_engine(ctx);
  // Prefix caching: the second request starts with the first one's 40 tokens.
  std::vector<TokenId> shared = prompt_of(40, 4);
  std::vector<TokenId> longer = shared;
  longer.insert(longer.end(), {11, 12, 13, 14, 15});
  const RequestOutput first = roomy.generate(greedy(shared, 8));
  const std::uint64_t hits_before = roomy.kv_cache().stats().prefix_cache_hits;
  const RequestOutput cached = roomy.generate(greedy(longer, 8));
  CHECK(roomy.kv_cache().stats().prefix_cache_hits >= hits_before + 32);  // two full blocks reused
  Request recompute = greedy(longer, 8);
  recompute.cache_salt = "no-sharing";
  CHECK(roomy.generate(recompute).token_ids == cached.token_ids);
  CHECK(first.token_ids.size() == 8u);

  // Preemption: room for about half of the four sequences at full length.
  std::vector<Request> requests;
  for (std::uint32_t i = 0; i < 4; ++i) requests.push_back(greedy(prompt_of(20 + i, 30 + i), 24));
  std::vector<std::vector<TokenId>> expected;
  for (const Request& r : requests) expected.push_back(roomy.generate(r).token_ids);
  auto tight = make_opencl_engine(ctx, {}, 8);
  const auto got = run_all(tight, requests);
  CHECK(tight.metrics().num_preemptions > 0);
  for (std::size_t i = 0; i < requests.size(); ++i) CHECK(got[i] == expected[i]);
  CHECK(tight.kv_cache().stats().num_used_blocks == 0);
  CHECK(tight.kv_cache().check_invariants().empty());
  CHECK(roomy.kv_cache().stats().num_used_blocks == 0);
}

TEST_CASE("OpenClExecutor refuses a DeviceKVCache of another context", "[opencl][executor]") {
  auto ctx = opencl_context();
  if (!ctx || !testing::have_qwen3_tokenizer()) return;
  auto other = opencl::Context::create(testing::opencl_options("opencl-program-cache"));
  OpenClExecutor<Qwen3> executor(Qwen3::load(testing::random_qwen3()), ctx);
  PagedKVCacheConfig kv_config;
  kv_config.num_blocks = 4;
  DeviceKVCache<> kv(other, executor.kv_cache_shape(), kv_config);
  StepPlan plan;
  StepResult result;
  CHECK_THROWS_AS(executor.execute(plan, kv, result), invalid_argument);
}
