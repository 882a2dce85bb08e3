// The engine on OpenClExecutor<Qwen3> + DeviceKVCache against the engine on
// CpuExecutor<Qwen3> + PagedKVCache, on the random Qwen3 checkpoint (f32
// weights and cache): the same greedy ids, logits within a stated tolerance,
// and the engine's properties (batching, chunked prefill, prefix caching,
// preemption, every block back in the pool) on the OpenCL executor.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "izwi/engine/engine.hpp"
#include "izwi/executor/cpu.hpp"
#include "izwi/executor/opencl.hpp"
#include "izwi/kernels/cpu/dispatch.hpp"
#include "izwi/kv_cache/device.hpp"
#include "izwi/kv_cache/paged.hpp"
#include "izwi/kv_cache/unified.hpp"
#include "izwi/models/qwen3.hpp"
#include "izwi/scheduler/fcfs.hpp"
#include "models/qwen3_engine_properties.hpp"
#include "models/random_qwen3.hpp"
#include "opencl/opencl_test_util.hpp"

using namespace izwi;
using izwi::testing::opencl_context;
using izwi::testing::relative_error;
using izwi::testing::qwen3_properties::greedy;
using izwi::testing::qwen3_properties::prompt_of;
using izwi::testing::qwen3_properties::run_all;

namespace {

using CpuQwen3Engine = Engine<FcfsScheduler, PagedKVCache<>, CpuExecutor<Qwen3>>;
using OpenClQwen3Engine = Engine<FcfsScheduler, DeviceKVCache<>, OpenClExecutor<Qwen3>>;

// The pairing rules, where the real types meet.
static_assert(ExecutorFor<OpenClExecutor<Qwen3>, DeviceKVCache<>>);
static_assert(!ExecutorFor<OpenClExecutor<Qwen3>, PagedKVCache<>>);
static_assert(ExecutorFor<OpenClExecutor<Qwen3>, UnifiedKVCache<ManualMemoryPressureSource>>);
static_assert(!ExecutorFor<CpuExecutor<Qwen3>, DeviceKVCache<>>);
static_assert(HasEosTokens<OpenClExecutor<Qwen3>> && HasDetokenizer<OpenClExecutor<Qwen3>>);

/// f32 arithmetic on both sides; only the summation order differs (one
/// work-item per output on the device, SIMD blocks on the CPU): 2e-5 of the
/// logits' largest magnitude (PoCL measured 2.6e-6 over 64 steps).
constexpr double logits_tolerance = 2e-5;
/// With an f16 KV cache (see the test that uses it).
constexpr double f16_cache_logits_tolerance = 5e-4;

constexpr std::size_t kv_blocks = 64;

CpuQwen3Engine make_cpu_engine(SchedulerConfig scheduling = {}, Qwen3 model = Qwen3::load(testing::random_qwen3())) {
  CpuExecutor<Qwen3> executor(std::move(model), {.num_threads = 2});
  executor.keep_logits(true);
  PagedKVCacheConfig kv_config;
  kv_config.num_blocks = kv_blocks;
  PagedKVCache<> kv(executor.kv_cache_shape(), kv_config);
  return CpuQwen3Engine(FcfsScheduler(scheduling), std::move(kv), std::move(executor));
}

OpenClQwen3Engine make_opencl_engine(const std::shared_ptr<opencl::Context>& ctx, SchedulerConfig scheduling = {},
                                     std::size_t blocks = kv_blocks,
                                     Qwen3 model = Qwen3::load(testing::random_qwen3())) {
  OpenClExecutor<Qwen3> executor(std::move(model), ctx);
  executor.keep_logits(true);
  PagedKVCacheConfig kv_config;
  kv_config.num_blocks = blocks;
  DeviceKVCache<> kv(ctx, executor.kv_cache_shape(), kv_config);
  return OpenClQwen3Engine(FcfsScheduler(scheduling), std::move(kv), std::move(executor));
}

}  // namespace

namespace {

struct Lockstep {
  std::vector<std::vector<TokenId>> cpu_tokens, gpu_tokens;
  std::size_t steps = 0, max_batch = 0;
  double worst = 0;  // the largest relative logits error of any step
  double first = 0;  // that of the first step (before any sampled token can differ)
};

/// Runs the same requests on both engines step by step. Same scheduler and
/// block count: the two engines plan identical steps, so each step's
/// sampling rows are compared one for one.
Lockstep run_lockstep(CpuQwen3Engine& cpu, OpenClQwen3Engine& gpu, const std::vector<Request>& requests) {
  Lockstep out;
  out.cpu_tokens.resize(requests.size());
  out.gpu_tokens.resize(requests.size());
  std::map<RequestId, std::size_t> cpu_index, gpu_index;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    cpu_index[cpu.add_request(requests[i])] = i;
    gpu_index[gpu.add_request(requests[i])] = i;
  }
  while (cpu.has_unfinished_requests() || gpu.has_unfinished_requests()) {
    REQUIRE(cpu.has_unfinished_requests() == gpu.has_unfinished_requests());
    for (const StreamChunk& c : cpu.step()) {
      auto& t = out.cpu_tokens[cpu_index.at(c.id)];
      t.insert(t.end(), c.token_ids.begin(), c.token_ids.end());
    }
    for (const StreamChunk& c : gpu.step()) {
      auto& t = out.gpu_tokens[gpu_index.at(c.id)];
      t.insert(t.end(), c.token_ids.begin(), c.token_ids.end());
    }
    out.max_batch = std::max(out.max_batch, gpu.scheduler().last_plan().sequences.size());
    const double error = relative_error(gpu.executor().last_logits(), cpu.executor().last_logits());
    if (out.steps == 0) out.first = error;
    out.worst = std::max(out.worst, error);
    ++out.steps;
  }
  return out;
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
  const std::vector<Request> requests = {greedy(prompt_of(7, 1), 64), greedy(prompt_of(23, 2), 64),
                                         greedy(prompt_of(40, 3), 64)};
  const Lockstep run = run_lockstep(cpu, gpu, requests);
  INFO("steps " << run.steps << ", worst relative logits error " << run.worst);
  CHECK(run.max_batch == requests.size());
  CHECK(run.worst <= logits_tolerance);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    INFO("request " << i);
    REQUIRE(run.gpu_tokens[i].size() == 64u);
    CHECK(run.gpu_tokens[i] == run.cpu_tokens[i]);
  }
  CHECK(gpu.kv_cache().stats().num_used_blocks == 0);
  CHECK(gpu.kv_cache().check_invariants().empty());
}

TEST_CASE("OpenCL Qwen3 with F16, BF16 and Q8_0 weights and an f16 KV cache matches the CPU", "[opencl][qwen3][engine]") {
  auto ctx = opencl_context();
  if (!ctx || !testing::have_qwen3_tokenizer()) return;
  SchedulerConfig scheduling;
  scheduling.max_num_batched_tokens = 16;
  for (const std::string type : {"f16", "bf16", "q8_0"}) {
    INFO("weights " << type);
    const std::filesystem::path gguf = testing::random_qwen3_gguf(type);
    Qwen3LoadOptions options;
    options.kv_cache_dtype = DType::f16;
    auto cpu = make_cpu_engine(scheduling, Qwen3::load(gguf, options));
    auto gpu = make_opencl_engine(ctx, scheduling, kv_blocks, Qwen3::load(gguf, options));
    const std::vector<Request> requests = {greedy(prompt_of(9, 5), 16), greedy(prompt_of(30, 6), 16)};
    const Lockstep run = run_lockstep(cpu, gpu, requests);
    INFO("worst relative logits error " << run.worst << ", first step " << run.first);
    // The CPU's BF16 matmuls of KernelTable::bf16_rounded_min_rows rows or
    // more (4; "avx512" on a CPU with AMX-BF16 or AVX512_BF16) round the
    // activations to bf16.
    const bool cpu_rounds_bf16 = type == "bf16" && kernels::cpu::active_kernels().bf16_rounded_min_rows != 0;
    if (type == "q8_0" || cpu_rounds_bf16) {
      // The CPU's Q8_0 matmuls of few rows (KernelTable::q8_0_quantized_max_rows:
      // 16 on AVX-512 with VNNI, 11 on AVX2) quantize the activations to 8-bit
      // blocks for integer dot products, as llama.cpp's CPU backend does, and
      // its BF16 ones on AMX or with vdpbf16ps round them to bf16; the GPU widens the weights
      // and keeps f32 activations. Two different roundings, so the greedy ids
      // of random weights part after some tokens and the logits after that
      // are of different texts: compare the first step (measured 2.3%
      // relative for Q8_0 when AVX2 quantized up to 16 rows, about 0.4% per
      // matmul over 4 layers; 0.8% for BF16 on AMX) and each request's first
      // token.
      CHECK(run.first <= 5e-2);
      for (std::size_t i = 0; i < requests.size(); ++i) {
        REQUIRE(!run.cpu_tokens[i].empty());
        REQUIRE(!run.gpu_tokens[i].empty());
        CHECK(run.gpu_tokens[i][0] == run.cpu_tokens[i][0]);
      }
      CHECK(gpu.kv_cache().stats().num_used_blocks == 0);
      continue;
    }
    // Both sides widen the same stored weights to f32 and round K/V to f16
    // the same way (store_kv is byte-exact on equal inputs, opencl_ops_test.cpp),
    // but K/V computed a last bit apart can round to neighbouring f16 values
    // (half an f16 ulp is 2.4e-4 relative): 5e-4 (PoCL measured 5.7e-5 for f16,
    // 1.3e-4 for bf16, and, before the CPU quantized Q8_0's activations,
    // 8.4e-5 for q8_0 weights).
    CHECK(run.worst <= f16_cache_logits_tolerance);
    for (std::size_t i = 0; i < requests.size(); ++i) CHECK(run.gpu_tokens[i] == run.cpu_tokens[i]);
    CHECK(gpu.kv_cache().stats().num_used_blocks == 0);
  }
}

TEST_CASE("OpenCL Qwen3: a prefix-cache hit changes no token", "[opencl][qwen3][engine]") {
  auto ctx = opencl_context();
  if (!ctx || !testing::have_qwen3_tokenizer()) return;
  auto roomy = make_opencl_engine(ctx);
  // The second request starts with the first one's 40 tokens.
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
  CHECK(roomy.kv_cache().stats().num_used_blocks == 0);
}

// The CPU executor's property suite (models/qwen3_engine_properties.hpp) on
// the OpenCL executor: each side of every comparison runs on the device.
TEST_CASE("the engine properties hold on the OpenCL executor", "[opencl][qwen3][engine][properties]") {
  auto ctx = opencl_context();
  if (!ctx || !testing::have_qwen3_tokenizer()) return;
  namespace props = izwi::testing::qwen3_properties;
  const auto make = [&](SchedulerConfig scheduling, bool tight) {
    return make_opencl_engine(ctx, scheduling, tight ? 8 : kv_blocks);
  };
  // Both sides on the device; GEMV against the tiled GEMM, different chunks:
  // the f32 tolerance of the CPU comparison above.
  SECTION("KV-cached decoding equals a full recompute") { props::cached_decoding_equals_recompute(make, logits_tolerance); }
  SECTION("chunked prefill equals unchunked") { props::chunked_prefill_equals_unchunked(make, logits_tolerance); }
  SECTION("mixed greedy and seeded requests batched equal each alone") { props::batched_equals_alone(make, 4); }
  SECTION("a preempted-and-resumed request equals an undisturbed one") { props::preempted_equals_undisturbed(make); }
}

TEST_CASE("OpenCL Qwen3 on the unified-memory cache, under memory pressure, matches the CPU", "[opencl][qwen3][unified]") {
  auto ctx = opencl_context();
  if (!ctx || !testing::have_qwen3_tokenizer()) return;
  const std::vector<Request> requests = {greedy(prompt_of(12, 7), 6), greedy(prompt_of(33, 8), 6),
                                         greedy(prompt_of(20, 9), 6)};
  auto cpu = make_cpu_engine();
  std::vector<std::vector<TokenId>> expected;
  for (const Request& r : requests) expected.push_back(cpu.generate(r).token_ids);

  // Every way this device offers: the host alias (forced), coarse- and fine-grained SVM.
  for (auto mode : {opencl::UnifiedMemoryMode::host_alias, opencl::UnifiedMemoryMode::coarse_grained_svm,
                    opencl::UnifiedMemoryMode::fine_grained_svm}) {
    INFO(opencl::to_string(mode));
    UnifiedKVCacheConfig kv_config;
    try {
      kv_config.memory = opencl::unified_memory_for(ctx, mode);
    } catch (const unavailable& e) {
      WARN("SKIPPED: " << e.what());
      continue;
    }
    OpenClExecutor<Qwen3> executor(Qwen3::load(testing::random_qwen3()), ctx);
    kv_config.num_blocks = 64;
    kv_config.poll_interval = std::chrono::milliseconds(0);
    ManualMemoryPressureSource pressure;
    UnifiedKVCache<ManualMemoryPressureSource> kv(executor.kv_cache_shape(), kv_config, pressure);
    auto svm = std::dynamic_pointer_cast<opencl::SvmMemory>(kv.memory_resource());
    CHECK((svm != nullptr) == (mode != opencl::UnifiedMemoryMode::host_alias));
    const std::byte* storage = kv.layer(0).keys;  // the one allocation, which moves with the cache
    Engine unified(FcfsScheduler(), std::move(kv), std::move(executor));
    // Normal pressure: the three together.
    CHECK(run_all(unified, requests) == expected);
    // Warning: cached blocks are evicted and their pages given back; the
    // kernels then write into pages the OS hands out anew, in place.
    pressure.set(0.08);
    CHECK(run_all(unified, requests) == expected);
    CHECK(unified.kv_cache().released_bytes() > 0);
    CHECK(unified.kv_cache().stats().evictions > 0);
    CHECK(unified.kv_cache().stats().num_used_blocks == 0);
    CHECK(unified.kv_cache().check_invariants().empty());
    // Between steps the host holds the memory (coarse-grained: mapped back after each step).
    if (svm) CHECK(svm->host_mapped(storage));
  }
}

TEST_CASE("a device that does not share host memory refuses the unified-memory cache in one sentence",
          "[opencl][qwen3][unified]") {
  auto ctx = opencl_context();
  if (!ctx || !testing::have_qwen3_tokenizer()) return;
  // The same device, taken to report what a discrete GPU reports.
  auto options = testing::opencl_options("opencl-program-cache");
  options.memory_sharing_override = opencl::DeviceMemorySharing{false, CL_DEVICE_SVM_COARSE_GRAIN_BUFFER};
  auto discrete = opencl::Context::create(options);
  CHECK_THROWS_WITH(opencl::unified_memory_for(discrete),
                    Catch::Contains("does not (CL_DEVICE_HOST_UNIFIED_MEMORY is false") &&
                        Catch::Contains("use DeviceKVCache"));
  // A cache made without asking (host memory) is refused at its first step, and the engine says why.
  OpenClExecutor<Qwen3> executor(Qwen3::load(testing::random_qwen3()), discrete);
  UnifiedKVCacheConfig kv_config;
  kv_config.num_blocks = 16;
  UnifiedKVCache<ManualMemoryPressureSource> kv(executor.kv_cache_shape(), kv_config);
  Engine engine(FcfsScheduler(), std::move(kv), std::move(executor));
  const RequestOutput out = engine.generate(greedy(prompt_of(5, 1), 2));
  CHECK(out.finish_reason == FinishReason::error);
  CHECK_THAT(out.error, Catch::Contains("use DeviceKVCache"));
  CHECK(engine.kv_cache().stats().num_used_blocks == 0);
}

TEST_CASE("a device allocation failure preempts the newest sequences, and fails only what cannot fit alone",
          "[opencl][qwen3][faults]") {
  auto ctx = opencl_context();
  if (!ctx || !testing::have_qwen3_tokenizer()) return;
  Qwen3 model = Qwen3::load(testing::random_qwen3());
  const Qwen3Config& c = model.config();
  // Scratch floats per token of one step (Qwen3::forward's eight buffers).
  const std::size_t per_token = sizeof(float) * (2u * c.hidden_size + 2u * c.num_heads * c.head_dim +
                                                 2u * c.num_kv_heads * c.head_dim + 2u * c.intermediate_size);
  OpenClExecutorConfig config;
  config.max_scratch_bytes = per_token * 30;  // a step of 30 tokens fits, not more
  OpenClExecutor<Qwen3> executor(std::move(model), ctx, config);
  PagedKVCacheConfig kv_config;
  kv_config.num_blocks = kv_blocks;
  DeviceKVCache<> kv(ctx, executor.kv_cache_shape(), kv_config);
  OpenClQwen3Engine engine(FcfsScheduler(), std::move(kv), std::move(executor));

  // Four 20-token prompts in one 80-token step: too much scratch together,
  // enough for each alone. The newest are preempted and recomputed later;
  // the fifth, 50 tokens, does not fit even alone: it alone fails, with the reason.
  std::vector<Request> requests;
  for (std::uint32_t i = 0; i < 4; ++i) requests.push_back(greedy(prompt_of(20, 40 + i), 4));
  requests.push_back(greedy(prompt_of(50, 50), 4));
  auto cpu = make_cpu_engine();
  std::vector<std::vector<TokenId>> expected;
  for (std::size_t i = 0; i < 4; ++i) expected.push_back(cpu.generate(requests[i]).token_ids);

  std::map<RequestId, std::size_t> index;
  for (std::size_t i = 0; i < requests.size(); ++i) index[engine.add_request(requests[i])] = i;
  std::vector<std::vector<TokenId>> got(requests.size());
  std::vector<std::optional<FinishReason>> reasons(requests.size());
  std::string too_big_error;
  while (engine.has_unfinished_requests())
    for (const StreamChunk& chunk : engine.step()) {
      const std::size_t i = index.at(chunk.id);
      got[i].insert(got[i].end(), chunk.token_ids.begin(), chunk.token_ids.end());
      if (chunk.finish_reason) reasons[i] = chunk.finish_reason;
      if (!chunk.error.empty()) too_big_error = chunk.error;
    }
  for (std::size_t i = 0; i < 4; ++i) {
    INFO("request " << i);
    CHECK(reasons[i] == FinishReason::length);
    CHECK(got[i] == expected[i]);
  }
  CHECK(reasons[4] == FinishReason::error);
  CHECK(got[4].empty());
  CHECK_THAT(too_big_error, Catch::Contains("CL_MEM_OBJECT_ALLOCATION_FAILURE"));
  CHECK(engine.metrics().num_preemptions >= 3);   // at least the three newest of the first step
  CHECK(engine.metrics().num_request_errors == 1);
  CHECK(engine.kv_cache().stats().num_used_blocks == 0);
  CHECK(engine.kv_cache().check_invariants().empty());
  // The engine goes on serving.
  CHECK(engine.generate(requests[0]).token_ids == expected[0]);
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
