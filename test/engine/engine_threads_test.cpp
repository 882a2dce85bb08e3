// add, abort, generate and streaming from several threads while run() loops.
// Labelled "threads": the ThreadSanitizer configuration runs it.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
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
