// izwi_step_loop_bench: what the engine's step loop itself costs per step,
// side by side in one run, on the toy executor (test/engine/toy_model.hpp: a
// hash instead of a forward pass, so the loop's own work is what is timed).
//
//   notifier   64 streams, CallbackNotifier with an on_ready callable on each
//              (what the server does) vs BlockingNotifier (stateless: nothing
//              stored, no lock, no call)
//   logprobs   logprobs=5, the engine spelling the sampled and top tokens
//              into the chunk (TokenLogprobs::bytes) vs a detokenizer without
//              token_bytes (nothing spelled): the cost moved from the
//              server's rendering into the step loop
//
// Each configuration runs 64 requests of 256 tokens to the end, stepped from
// this thread with the streams drained after every step; the time inside
// step() is divided by the number of steps. Medians of 7 alternating runs.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string_view>
#include <vector>

#include "engine/engine_fixture.hpp"

using namespace izwi;
using namespace izwi::testing;

namespace {

constexpr std::size_t kStreams = 64;
constexpr std::uint32_t kTokens = 256;

/// The toy detokenizer without token_bytes: the engine cannot spell tokens.
struct UnspelledDetokenizer {
  ToyDetokenizer inner;
  std::string_view append(TokenId t) { return inner.append(t); }
};
struct UnspelledExecutor : ToyExecutor {
  UnspelledDetokenizer make_detokenizer() const { return {ToyExecutor::make_detokenizer()}; }
};

/// Seconds per step of one run.
template <class Executor, class Notifier, class Attach>
double seconds_per_step(bool logprobs, Attach attach) {
  Executor executor;
  ToyKV kv(executor.kv_cache_shape(), {.num_blocks = 4096});
  EngineConfig config;
  config.stream_capacity = kTokens + 1;  // never full: no pauses
  SchedulerConfig scheduling;
  scheduling.max_num_seqs = kStreams;
  Engine<FcfsScheduler, ToyKV, Executor, Notifier> engine(FcfsScheduler(scheduling), std::move(kv),
                                                          std::move(executor), config);
  std::vector<BasicResponseStream<Notifier>> streams;
  for (std::size_t i = 0; i < kStreams; ++i) {
    Request r = make_request(make_prompt(16, static_cast<std::uint32_t>(i + 1)), kTokens);
    r.sampling.ignore_eos = true;
    if (logprobs) r.sampling.logprobs = 5;
    streams.push_back(engine.generate_streaming(r));
    attach(streams.back());
  }
  double stepping = 0;
  std::size_t steps = 0;
  while (engine.has_unfinished_requests()) {
    const auto start = std::chrono::steady_clock::now();
    engine.step();
    stepping += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ++steps;
    for (auto& stream : streams)
      while (stream.try_next()) {
      }
  }
  return stepping / static_cast<double>(steps);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main() {
  std::atomic<int> calls{0};
  auto with_callable = [&calls](BasicResponseStream<CallbackNotifier>& s) {
    s.on_ready([&calls] { calls.fetch_add(1, std::memory_order_relaxed); });
  };
  auto nothing = [](auto&) {};
  std::vector<double> callback, blocking, spelled, unspelled;
  for (int run = 0; run < 7; ++run) {
    callback.push_back(seconds_per_step<ToyExecutor, CallbackNotifier>(false, with_callable));
    blocking.push_back(seconds_per_step<ToyExecutor, BlockingNotifier>(false, nothing));
    spelled.push_back(seconds_per_step<ToyExecutor, CallbackNotifier>(true, with_callable));
    unspelled.push_back(seconds_per_step<UnspelledExecutor, CallbackNotifier>(true, with_callable));
  }
  std::printf("step loop, %zu streams of %u tokens, toy executor, us per step (median of 7)\n", kStreams, kTokens);
  std::printf("  notifier  CallbackNotifier + on_ready  %8.1f\n", 1e6 * median(callback));
  std::printf("            BlockingNotifier             %8.1f\n", 1e6 * median(blocking));
  std::printf("  logprobs=5, token bytes spelled        %8.1f\n", 1e6 * median(spelled));
  std::printf("            not spelled                  %8.1f\n", 1e6 * median(unspelled));
  return calls.load() > 0 ? 0 : 1;  // the callables ran
}
