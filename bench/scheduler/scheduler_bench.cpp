// schedule() cost against a long waiting queue.
//
// Steady state of a busy server: max_num_seqs (128) requests running, N
// waiting (1k, 10k, 100k). Each step every running request decodes one token;
// a request that reaches its max_tokens (uniform in [64, 256], so about one
// per step) is finished and a new one is added at the back of the queue, so
// the queue length stays N and most steps admit a request (a 32-token prefill)
// from its head. Only schedule() is timed (manual timing); update() and the
// bookkeeping around it are not. The figures to read: ns_per_seq, schedule()'s
// wall time divided by the sequences it scheduled, and cpu_ns_per_seq, the same
// from this thread's CPU time (steadier on a loaded machine). Neither should
// grow with N.
//
//   ./izwi_scheduler_bench --benchmark_counters_tabular=true

#include <benchmark/benchmark.h>

#include <time.h>

#include <chrono>
#include <cstdint>
#include <random>
#include <vector>

#include "izwi/kv_cache/paged.hpp"
#include "izwi/scheduler/fcfs.hpp"
#include "izwi/scheduler/playback_deadline.hpp"
#include "izwi/scheduler/priority.hpp"
#include "scheduler/fixed_block_kv_cache.hpp"

namespace {

double thread_cpu_seconds() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

constexpr std::size_t prompt_length = 32;

izwi::Request bench_request(izwi::RequestId id, std::mt19937_64& rng) {
  izwi::Request r;
  r.id = id;
  r.prompt_tokens.resize(prompt_length);
  for (std::size_t i = 0; i < prompt_length; ++i) r.prompt_tokens[i] = static_cast<izwi::TokenId>((id * 7 + i) % 1000);
  r.sampling.max_tokens = static_cast<std::uint32_t>(64 + rng() % 193);
  r.sampling.seed = id;
  r.priority = static_cast<std::int32_t>(rng() % 4);
  r.arrival_time = izwi::TimePoint{} + std::chrono::microseconds(id);
  return r;
}

struct FixedCache {
  static izwi::test::FixedBlockKVCache make() { return izwi::test::FixedBlockKVCache(8192, 16); }
};
struct PagedCache {
  static izwi::PagedKVCache<> make() {
    izwi::PagedKVCacheConfig config;
    config.num_blocks = 8192;
    return izwi::PagedKVCache<>(izwi::KVCacheShape{1, 1, 1, izwi::DType::f32}, config);
  }
};

template <class Scheduler, class CacheMaker>
void BM_Schedule(benchmark::State& state) {
  const auto num_waiting = static_cast<std::size_t>(state.range(0));
  std::mt19937_64 rng(42);
  izwi::SchedulerConfig config;  // 2048 tokens, 128 sequences
  config.seed = 1;
  Scheduler scheduler(config);
  auto kv = CacheMaker::make();
  izwi::RequestId next = 1;
  for (std::size_t i = 0; i < num_waiting + config.max_num_seqs; ++i) scheduler.add(bench_request(next++, rng));

  izwi::StepResult result;
  std::vector<izwi::RequestId> done;
  double cpu_seconds = 0;
  double wall_seconds = 0;
  auto one_step = [&](bool timed) {
    const double cpu_start = thread_cpu_seconds();
    const auto start = std::chrono::steady_clock::now();
    const izwi::StepPlan& plan = scheduler.schedule(kv);
    const auto stop = std::chrono::steady_clock::now();
    const double cpu_stop = thread_cpu_seconds();
    if (timed) {
      const double wall = std::chrono::duration<double>(stop - start).count();
      state.SetIterationTime(wall);
      wall_seconds += wall;
      cpu_seconds += cpu_stop - cpu_start;
    }
    result.clear();
    done.clear();
    for (const izwi::ScheduledSequence& s : plan.sequences)
      if (s.samples) result.outputs.push_back({.id = s.id, .token = 7});
    const std::size_t scheduled = plan.sequences.size();
    scheduler.update(result, kv);
    for (const izwi::SequenceOutput& out : result.outputs) {
      const izwi::SequenceState* st = scheduler.find(out.id);
      if (st->num_output_tokens() >= *st->request.sampling.max_tokens) done.push_back(out.id);
    }
    for (izwi::RequestId id : done) {
      scheduler.finish(id, izwi::FinishReason::length, kv);
      scheduler.add(bench_request(next++, rng));
    }
    return scheduled;
  };
  for (int i = 0; i < 300; ++i) one_step(false);  // reach the steady state first

  double sequences = 0;
  for (auto _ : state) sequences += static_cast<double>(one_step(true));
  state.counters["seqs_per_step"] = benchmark::Counter(sequences / static_cast<double>(state.iterations()));
  state.counters["ns_per_seq"] = benchmark::Counter(wall_seconds * 1e9 / sequences);
  state.counters["cpu_ns_per_seq"] = benchmark::Counter(cpu_seconds * 1e9 / sequences);
  state.counters["waiting"] = benchmark::Counter(static_cast<double>(scheduler.num_waiting()));
}

}  // namespace

BENCHMARK_TEMPLATE(BM_Schedule, izwi::FcfsScheduler, FixedCache)->UseManualTime()->Arg(1000)->Arg(10000)->Arg(100000);
BENCHMARK_TEMPLATE(BM_Schedule, izwi::PriorityScheduler, FixedCache)->UseManualTime()->Arg(1000)->Arg(10000)->Arg(100000);
BENCHMARK_TEMPLATE(BM_Schedule, izwi::FcfsScheduler, PagedCache)->UseManualTime()->Arg(1000)->Arg(10000)->Arg(100000);
BENCHMARK_TEMPLATE(BM_Schedule, izwi::PriorityScheduler, PagedCache)->UseManualTime()->Arg(1000)->Arg(10000)->Arg(100000);
// Playback deadline: the same requests (no audio), so the running set is
// sorted by deadline every step and nobody sits out: the sort's cost.
BENCHMARK_TEMPLATE(BM_Schedule, izwi::PlaybackDeadlineScheduler, FixedCache)
    ->UseManualTime()->Arg(1000)->Arg(10000)->Arg(100000);
BENCHMARK_TEMPLATE(BM_Schedule, izwi::PlaybackDeadlineScheduler, PagedCache)
    ->UseManualTime()->Arg(1000)->Arg(10000)->Arg(100000);

BENCHMARK_MAIN();
