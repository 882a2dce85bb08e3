// add, abort, generate and streaming from several threads while run() loops.
// Labelled "threads": the ThreadSanitizer configuration runs it.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/engine_fixture.hpp"

using namespace izwi;
using namespace izwi::testing;
using namespace std::chrono_literals;

TEST_CASE("clients on many threads while run() loops", "[engine][threads]") {
  SchedulerConfig config;
  config.max_num_batched_tokens = 64;
  config.max_num_seqs = 8;
  EngineConfig engine_config;
  engine_config.stream_capacity = 4;
  auto engine = make_toy_engine(64, config, {}, engine_config);
  engine.run();

  constexpr int threads = 4;
  constexpr int per_thread = 12;
  std::atomic<int> mismatches{0}, completed{0}, aborted{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < threads; ++t) {
    clients.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) {
        const auto salt = static_cast<std::uint32_t>(t * 100 + i);
        const Request r = make_request(make_prompt(4 + salt % 30, salt), 1 + salt % 16, salt, salt % 2 ? 1.0f : 0.0f);
        const auto expected = toy_reference(r.prompt_tokens, r.sampling, {});
        switch (i % 3) {
          case 0: {
            if (engine.generate(r).token_ids != expected) ++mismatches;
            ++completed;
            break;
          }
          case 1: {
            ResponseStream stream = engine.generate_streaming(r);
            std::vector<TokenId> tokens;
            while (auto chunk = stream.next()) {
              tokens.insert(tokens.end(), chunk->token_ids.begin(), chunk->token_ids.end());
              if (tokens.size() % 3 == 0) std::this_thread::sleep_for(100us);  // a slow reader
            }
            if (tokens != expected) ++mismatches;
            ++completed;
            break;
          }
          default: {
            const RequestId id = engine.add_request(r);
            std::this_thread::sleep_for(std::chrono::microseconds(50 * (salt % 5)));
            engine.abort(id);
            ++aborted;
          }
        }
      }
    });
  }
  for (auto& c : clients) c.join();
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (engine.has_unfinished_requests() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  engine.stop();

  CHECK(mismatches == 0);
  CHECK(completed == threads * per_thread * 2 / 3);
  CHECK_FALSE(engine.has_unfinished_requests());
  CHECK(engine.kv_cache().stats().num_used_blocks == 0);
  CHECK(engine.kv_cache().check_invariants().empty());
  CHECK(engine.executor().corrupt_reads() == 0);
}

// An event-loop consumer never blocks in next(): the listener wakes it and it
// drains with try_next(). Every chunk must still arrive, in order, and a
// stream closed from the listener's side must free its blocks.
TEST_CASE("on_ready listeners drive asynchronous consumers", "[engine][threads][stream]") {
  EngineConfig engine_config;
  engine_config.stream_capacity = 2;  // forces pauses and drained wake-ups
  auto engine = make_toy_engine(64, {}, {}, engine_config);
  engine.run();

  constexpr int streams = 8;
  std::mutex mutex;
  std::condition_variable woken;
  std::vector<int> wakeups(streams, 0);
  std::vector<ResponseStream> handles;
  std::vector<Request> requests;
  for (int i = 0; i < streams; ++i) {
    requests.push_back(make_request(make_prompt(9 + i, 3 + i), 24));
    handles.push_back(engine.generate_streaming(requests.back()));
    handles.back().on_ready([&, i] {
      std::lock_guard lock(mutex);
      ++wakeups[i];
      woken.notify_all();
    });
  }

  std::vector<std::vector<TokenId>> received(streams);
  std::vector<bool> finished(streams, false);
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  int remaining = streams;
  while (remaining > 0 && std::chrono::steady_clock::now() < deadline) {
    {
      std::unique_lock lock(mutex);
      woken.wait_for(lock, 50ms);
    }
    for (int i = 0; i < streams; ++i) {
      while (auto chunk = handles[i].try_next()) {
        received[i].insert(received[i].end(), chunk->token_ids.begin(), chunk->token_ids.end());
        if (chunk->finished()) {
          finished[i] = true;
          --remaining;
        }
      }
    }
  }
  for (int i = 0; i < streams; ++i) {
    CHECK(finished[i]);
    CHECK(received[i] == toy_reference(requests[i].prompt_tokens, requests[i].sampling, {}));
    std::lock_guard lock(mutex);
    CHECK(wakeups[i] > 0);
  }

  // A listener set on a stream that the consumer then closes is dropped:
  // the request is aborted and its blocks come back.
  ResponseStream dropped = engine.generate_streaming(make_request(make_prompt(40, 1), 1000));
  std::atomic<int> late_calls{0};
  dropped.on_ready([&] { ++late_calls; });
  while (late_calls.load() == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  dropped.close();
  while (engine.has_unfinished_requests() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  engine.stop();
  CHECK(late_calls.load() > 0);
  CHECK_FALSE(engine.has_unfinished_requests());
  CHECK(engine.metrics().num_kv_blocks_used == 0);
  CHECK(engine.metrics().num_kv_blocks > 0);
}

// --- the StreamNotifier policy (docs/concepts/stream_notifier.md) -------------

namespace {

/// Stateful: set per stream with on_ready, counts that stream's calls.
struct CountingNotifier {
  using policy_category = stream_notifier_tag;
  std::shared_ptr<std::atomic<int>> calls;
  void notify() const {
    if (calls) calls->fetch_add(1);
  }
};

/// Stateless: the engine calls it for every stream, without on_ready.
struct CountingStatelessNotifier {
  using policy_category = stream_notifier_tag;
  static inline std::atomic<int> calls{0};
  void notify() const { calls.fetch_add(1); }
};

template <class Notifier>
Engine<FcfsScheduler, ToyKV, ToyExecutor, Notifier> make_notified_engine() {
  ToyExecutor executor;
  ToyKV kv(executor.kv_cache_shape(), {.num_blocks = 64});
  EngineConfig config;
  config.stream_capacity = 64;  // never full: no pause changes which steps deliver
  return Engine<FcfsScheduler, ToyKV, ToyExecutor, Notifier>(FcfsScheduler(SchedulerConfig{}), std::move(kv),
                                                             std::move(executor), config);
}

Request counted_request(std::size_t i) {
  Request r = make_request(make_prompt(5 + i, static_cast<std::uint32_t>(i + 1)), static_cast<std::uint32_t>(4 + i));
  r.sampling.ignore_eos = true;  // exactly max_tokens tokens, one per step
  return r;
}

}  // namespace

TEST_CASE("a compile-time notifier is called once per step for each stream that got chunks",
          "[engine][stream][notifier]") {
  auto engine = make_notified_engine<CountingNotifier>();
  constexpr std::size_t streams = 3;
  std::vector<BasicResponseStream<CountingNotifier>> handles;
  std::vector<std::shared_ptr<std::atomic<int>>> calls;
  for (std::size_t i = 0; i < streams; ++i) {
    handles.push_back(engine.generate_streaming(counted_request(i)));
    calls.push_back(std::make_shared<std::atomic<int>>(0));
    handles.back().on_ready(CountingNotifier{calls.back()});
    CHECK(calls.back()->load() == 0);  // nothing waiting yet: not called at once
  }
  std::vector<int> steps_with_chunks(streams, 0);
  for (int step = 0; step < 100 && engine.has_unfinished_requests(); ++step) {
    engine.step();
    for (std::size_t i = 0; i < streams; ++i) {
      int chunks = 0;
      while (handles[i].try_next()) ++chunks;
      if (chunks > 0) ++steps_with_chunks[i];
      INFO("step " << step << ", stream " << i << ", chunks " << chunks);
      CHECK(calls[i]->load() == steps_with_chunks[i]);  // one call per step with chunks, none without
    }
  }
  for (std::size_t i = 0; i < streams; ++i) CHECK(steps_with_chunks[i] == static_cast<int>(4 + i));
  CHECK_FALSE(engine.has_unfinished_requests());
}

TEST_CASE("a stateless notifier is called for every stream without on_ready", "[engine][stream][notifier]") {
  auto engine = make_notified_engine<CountingStatelessNotifier>();
  CountingStatelessNotifier::calls = 0;
  std::vector<BasicResponseStream<CountingStatelessNotifier>> handles;
  for (std::size_t i = 0; i < 2; ++i) handles.push_back(engine.generate_streaming(counted_request(i)));
  int steps_with_chunks = 0;
  for (int step = 0; step < 100 && engine.has_unfinished_requests(); ++step) {
    engine.step();
    for (auto& handle : handles) {
      bool got = false;
      while (handle.try_next()) got = true;
      steps_with_chunks += got;
    }
    CHECK(CountingStatelessNotifier::calls.load() == steps_with_chunks);
  }
  CHECK(steps_with_chunks == 4 + 5);
}

TEST_CASE("BlockingNotifier streams serve blocking readers", "[engine][threads][stream][notifier]") {
  auto engine = make_notified_engine<BlockingNotifier>();
  engine.run();
  std::vector<Request> requests;
  std::vector<BasicResponseStream<BlockingNotifier>> handles;
  for (std::size_t i = 0; i < 4; ++i) {
    requests.push_back(counted_request(i));
    handles.push_back(engine.generate_streaming(requests.back()));
  }
  for (std::size_t i = 0; i < handles.size(); ++i) {
    std::vector<TokenId> received;
    while (auto chunk = handles[i].next()) received.insert(received.end(), chunk->token_ids.begin(), chunk->token_ids.end());
    CHECK(received == toy_reference(requests[i].prompt_tokens, requests[i].sampling, {}));
  }
  engine.stop();
  CHECK(engine.kv_cache().stats().num_used_blocks == 0u);
}
