// add, abort, generate and streaming from several threads while run() loops.
// Labelled "threads": the ThreadSanitizer configuration runs it.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
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
