// The engine end to end with the real schedulers and KV caches and the toy
// model of toy_model.hpp, whose outputs are known without the engine.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "engine/engine_fixture.hpp"
#include "izwi/scheduler/playback_deadline.hpp"

using namespace izwi;
using namespace izwi::testing;
using namespace std::chrono_literals;

namespace {

std::string letters_of(const std::vector<TokenId>& tokens) {
  std::string s;
  for (TokenId t : tokens) s += static_cast<char>('a' + t % 26);
  return s;
}

std::vector<TokenId> reference(const Request& r, const ToyModelConfig& config = {}) {
  return toy_reference(r.prompt_tokens, r.sampling, config);
}

}  // namespace

TEST_CASE("generate returns the model's output, greedy and seeded", "[engine]") {
  auto engine = make_toy_engine();
  for (std::uint32_t salt = 0; salt < 4; ++salt) {
    const Request greedy = make_request(make_prompt(5 + salt * 7, salt), 12);
    const RequestOutput out = engine.generate(greedy);
    CHECK(out.token_ids == reference(greedy));
    CHECK(out.finish_reason == FinishReason::length);
    CHECK(out.text == letters_of(out.token_ids));
    CHECK(out.stats.num_prompt_tokens == greedy.prompt_tokens.size());
    CHECK(out.stats.num_output_tokens == 12u);
    CHECK(out.stats.time_to_first_token >= out.stats.queue_time);
    CHECK(out.stats.e2e_latency >= out.stats.time_to_first_token);

    const Request seeded = make_request(make_prompt(9, salt), 10, 1234 + salt, 0.8f);
    CHECK(engine.generate(seeded).token_ids == reference(seeded));
  }
  CHECK(engine.executor().corrupt_reads() == 0);
  CHECK(engine.kv_cache().stats().num_used_blocks == 0);
}

TEST_CASE("stop conditions: EOS, ignore_eos, stop ids, min_tokens, max_model_len", "[engine]") {
  const Request probe = make_request(make_prompt(6, 42), 10);
  const std::vector<TokenId> free_run = reference(probe);
  REQUIRE(free_run.size() == 10u);

  SECTION("EOS ends the request and is kept as the last token, without text") {
    ToyModelConfig model;
    model.eos_token_ids = {free_run[3]};
    auto engine = make_toy_engine(256, {}, model);
    const RequestOutput out = engine.generate(probe);
    const std::size_t first = static_cast<std::size_t>(
        std::find(free_run.begin(), free_run.end(), free_run[3]) - free_run.begin());
    CHECK(out.finish_reason == FinishReason::stop);
    CHECK(out.token_ids == std::vector<TokenId>(free_run.begin(), free_run.begin() + first + 1));
    CHECK(out.text == letters_of({free_run.begin(), free_run.begin() + first}));
    CHECK_FALSE(out.stop_token.has_value());

    Request ignoring = probe;
    ignoring.sampling.ignore_eos = true;
    const RequestOutput all = engine.generate(ignoring);
    CHECK(all.token_ids == free_run);
    CHECK(all.finish_reason == FinishReason::length);

    Request late = probe;
    late.sampling.min_tokens = static_cast<std::uint32_t>(first + 2);
    const RequestOutput held = engine.generate(late);
    CHECK(held.token_ids.size() >= first + 2);
    CHECK(held.token_ids == reference(late, model));
  }
  SECTION("a stop token id ends the request and is reported") {
    auto engine = make_toy_engine();
    Request r = probe;
    r.sampling.stop_token_ids = {free_run[5]};
    const RequestOutput out = engine.generate(r);
    CHECK(out.finish_reason == FinishReason::stop);
    REQUIRE(out.stop_token.has_value());
    CHECK(*out.stop_token == free_run[5]);
    CHECK(out.token_ids.back() == free_run[5]);
  }
  SECTION("max_model_len caps prompt plus output") {
    ToyModelConfig model;
    model.max_model_len = probe.prompt_tokens.size() + 4;
    auto engine = make_toy_engine(256, {}, model);
    const RequestOutput out = engine.generate(probe);
    CHECK(out.finish_reason == FinishReason::length);
    CHECK(out.token_ids.size() == 4u);
    Request too_long = make_request(make_prompt(model.max_model_len, 1));
    CHECK_THROWS_AS(engine.generate(too_long), izwi::invalid_argument);
  }
}

TEST_CASE("stop strings truncate the text and are never streamed", "[engine][stream]") {
  const Request probe = make_request(make_prompt(7, 3), 16);
  const std::vector<TokenId> free_run = reference(probe);
  const std::string text = letters_of(free_run);
  const std::string stop = text.substr(6, 3);
  const std::size_t at = text.find(stop);

  auto engine = make_toy_engine();
  Request r = probe;
  r.sampling.stop = {"zzzzzzzzzz", stop};
  const RequestOutput out = engine.generate(r);
  CHECK(out.finish_reason == FinishReason::stop);
  CHECK(out.text == text.substr(0, at));
  REQUIRE(out.stop_string.has_value());
  CHECK(*out.stop_string == stop);

  engine.run();
  ResponseStream stream = engine.generate_streaming(r);
  std::string streamed;
  std::optional<FinishReason> reason;
  while (auto chunk = stream.next()) {
    streamed += chunk->text;
    CHECK(streamed.find(stop) == std::string::npos);
    if (chunk->finished()) reason = chunk->finish_reason;
  }
  CHECK(streamed == text.substr(0, at));
  CHECK(reason == FinishReason::stop);
  engine.stop();
}

TEST_CASE("streamed chunks add up to the complete output", "[engine][stream]") {
  auto engine = make_toy_engine();
  engine.run();
  Request r = make_request(make_prompt(11, 8), 20, 77, 1.0f);
  r.sampling.logprobs = 2;
  const RequestOutput whole = engine.generate(r);
  ResponseStream stream = engine.generate_streaming(r);
  std::vector<TokenId> tokens;
  std::string text;
  std::size_t logprobs = 0, finals = 0;
  while (auto chunk = stream.next()) {
    tokens.insert(tokens.end(), chunk->token_ids.begin(), chunk->token_ids.end());
    text += chunk->text;
    logprobs += chunk->logprobs.size();
    for (const auto& lp : chunk->logprobs) CHECK(lp.top.size() == 2u);
    if (chunk->finished()) {
      ++finals;
      REQUIRE(chunk->stats.has_value());
      CHECK(chunk->stats->num_output_tokens == 20u);
    }
  }
  CHECK(stream.done());
  CHECK(finals == 1u);
  CHECK(tokens == whole.token_ids);
  CHECK(tokens == reference(r));
  CHECK(text == whole.text);
  CHECK(logprobs == 20u);
  engine.stop();
}

TEST_CASE("a full stream pauses its request until the consumer reads", "[engine][stream]") {
  EngineConfig config;
  config.stream_capacity = 2;
  auto engine = make_toy_engine(256, {}, {}, config);
  engine.run();
  const Request r = make_request(make_prompt(5, 9), 30);
  ResponseStream stream = engine.generate_streaming(r);
  // Nobody reads: the request must stop at the stream's capacity.
  const auto deadline = std::chrono::steady_clock::now() + 2s;
  while (engine.metrics().generation_tokens < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(50ms);
  CHECK(engine.metrics().generation_tokens == 2u);
  CHECK(engine.num_running() == 1u);  // paused, still holding its blocks

  std::vector<TokenId> tokens;
  while (auto chunk = stream.next()) tokens.insert(tokens.end(), chunk->token_ids.begin(), chunk->token_ids.end());
  CHECK(tokens == reference(r));
  engine.stop();
}

TEST_CASE("closing a stream aborts the request and frees its blocks", "[engine][stream]") {
  auto engine = make_toy_engine();
  engine.run();
  {
    ResponseStream stream = engine.generate_streaming(make_request(make_prompt(40, 1), 1000));
    REQUIRE(stream.next().has_value());
  }  // destroyed mid-stream: the client hung up
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (engine.has_unfinished_requests() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  engine.stop();
  CHECK_FALSE(engine.has_unfinished_requests());
  CHECK(engine.metrics().finished(FinishReason::abort) == 1u);
  CHECK(engine.kv_cache().stats().num_used_blocks == 0);
}

TEST_CASE("abort works in every state and frees everything", "[engine]") {
  SchedulerConfig one_at_a_time;
  one_at_a_time.max_num_seqs = 1;
  auto engine = make_toy_engine(256, one_at_a_time);

  const RequestId running = engine.add_request(make_request(make_prompt(10, 1), 50));
  const RequestId waiting = engine.add_request(make_request(make_prompt(10, 2), 50));
  engine.step();
  engine.step();
  const RequestId queued = engine.add_request(make_request(make_prompt(10, 3), 50));
  CHECK(engine.num_running() == 1u);
  CHECK(engine.num_pending() == 2u);

  CHECK(engine.abort(queued));    // still in the inbox
  CHECK(engine.abort(waiting));   // in the scheduler's queue
  CHECK(engine.abort(running));   // holding blocks
  CHECK_FALSE(engine.abort(987654));
  std::vector<RequestId> aborted;
  for (const StreamChunk& chunk : engine.step())
    if (chunk.finish_reason == FinishReason::abort) aborted.push_back(chunk.id);
  std::sort(aborted.begin(), aborted.end());
  CHECK(aborted == std::vector<RequestId>{running, waiting, queued});
  CHECK_FALSE(engine.abort(running));  // already finished
  CHECK_FALSE(engine.has_unfinished_requests());
  CHECK(engine.kv_cache().stats().num_used_blocks == 0);
  CHECK(engine.kv_cache().check_invariants().empty());
}

TEST_CASE("preempted requests produce the same tokens as undisturbed ones", "[engine]") {
  // 24 blocks of 4 tokens for 6 requests that need up to 10 blocks each:
  // running requests must be preempted and recomputed.
  auto engine = make_toy_engine(24);
  std::vector<Request> requests;
  std::vector<RequestId> ids;
  for (std::uint32_t i = 0; i < 6; ++i) {
    requests.push_back(make_request(make_prompt(12 + i, 100 + i), 24, 500 + i, i % 2 ? 0.7f : 0.0f));
    ids.push_back(engine.add_request(requests.back()));
  }
  std::map<RequestId, std::vector<TokenId>> outputs;
  std::size_t finished = 0;
  for (int steps = 0; steps < 10000 && finished < requests.size(); ++steps)
    for (const StreamChunk& chunk : engine.step()) {
      outputs[chunk.id].insert(outputs[chunk.id].end(), chunk.token_ids.begin(), chunk.token_ids.end());
      finished += chunk.finished();
    }
  REQUIRE(finished == requests.size());
  CHECK(engine.metrics().num_preemptions > 0);
  for (std::size_t i = 0; i < requests.size(); ++i) CHECK(outputs[ids[i]] == reference(requests[i]));
  CHECK(engine.executor().corrupt_reads() == 0);
  CHECK(engine.kv_cache().stats().num_used_blocks == 0);
}

TEST_CASE("batch composition does not change a seeded request's output", "[engine]") {
  auto engine = make_toy_engine();
  engine.run();
  std::vector<Request> requests;
  std::vector<ResponseStream> streams;
  for (std::uint32_t i = 0; i < 8; ++i) {
    requests.push_back(make_request(make_prompt(3 + 5 * i, i), 16, 40 + i, 1.0f));
    streams.push_back(engine.generate_streaming(requests.back()));
  }
  for (std::size_t i = 0; i < streams.size(); ++i) {
    std::vector<TokenId> tokens;
    while (auto chunk = streams[i].next()) tokens.insert(tokens.end(), chunk->token_ids.begin(), chunk->token_ids.end());
    CHECK(tokens == reference(requests[i]));  // as if it had run alone
  }
  engine.stop();
  CHECK(engine.executor().max_step_tokens() <= 2048u);
}

TEST_CASE("a shared prefix is computed once and reused", "[engine][prefix]") {
  auto engine = make_toy_engine();
  std::vector<TokenId> system = make_prompt(32, 5);
  Request a = make_request(system, 6);
  a.prompt_tokens.push_back(1);
  Request b = make_request(system, 6);
  b.prompt_tokens.push_back(2);
  CHECK(engine.generate(a).token_ids == reference(a));
  CHECK(engine.generate(b).token_ids == reference(b));
  const EngineMetrics m = engine.metrics();
  CHECK(m.prefix_cache_hits >= 32u);
  CHECK(m.prefix_cache_queries >= m.prefix_cache_hits);
  CHECK(engine.executor().corrupt_reads() == 0);

  Request salted = b;
  salted.cache_salt = "tenant-2";
  const std::uint64_t hits_before = engine.metrics().prefix_cache_hits;
  CHECK(engine.generate(salted).token_ids == reference(b));
  CHECK(engine.metrics().prefix_cache_hits == hits_before);  // a different salt shares nothing
}

TEST_CASE("requests are validated at the edge with the field named", "[engine]") {
  EngineConfig config;
  config.max_waiting_requests = 2;
  auto engine = make_toy_engine(256, {}, {}, config);
  auto field_of = [&](Request r) -> std::string {
    try {
      engine.add_request(std::move(r));
    } catch (const izwi::invalid_argument& e) {
      return e.field();
    }
    return "";
  };
  CHECK(field_of(make_request({})) == "prompt_tokens");
  Request bad = make_request({1, 2});
  bad.sampling.top_p = 0.0f;
  CHECK(field_of(bad) == "top_p");
  Request with_id = make_request({1, 2});
  with_id.id = 77;
  CHECK(field_of(with_id).empty());
  CHECK(field_of(with_id) == "id");  // duplicate of a live request
  CHECK_NOTHROW(engine.add_request(make_request({3})));
  CHECK(engine.num_pending() == 2u);
  CHECK_THROWS_AS(engine.add_request(make_request({4})), izwi::unavailable);  // a queue of 2 is full
}

TEST_CASE("the cache must match the executor's shape", "[engine]") {
  ToyExecutor executor;
  KVCacheShape other = executor.kv_cache_shape();
  other.num_layers += 1;
  ToyKV kv(other, {.num_blocks = 8});
  CHECK_THROWS_AS(ToyEngine(FcfsScheduler(), std::move(kv), ToyExecutor()), izwi::invalid_argument);
}

TEST_CASE("priority scheduling on the unified-memory cache, with memory pressure", "[engine][unified]") {
  ManualMemoryPressureSource pressure;
  ToyExecutor executor;
  UnifiedKVCacheConfig kv_config;
  kv_config.num_blocks = 128;
  kv_config.poll_interval = std::chrono::nanoseconds(0);
  UnifiedKVCache<ManualMemoryPressureSource, 4> kv(executor.kv_cache_shape(), kv_config, pressure);
  Engine engine(PriorityScheduler(), std::move(kv), std::move(executor));

  Request r = make_request(make_prompt(9, 4), 10);
  CHECK(engine.generate(r).token_ids == reference(r));

  pressure.set(0.01);  // critical: no new prefill may start
  const RequestId id = engine.add_request(r);
  for (int i = 0; i < 5; ++i) engine.step();
  CHECK(engine.num_running() == 0u);
  CHECK(engine.num_pending() == 1u);
  pressure.set(0.9);  // well past the hysteresis margin
  std::vector<TokenId> tokens;
  for (int i = 0; i < 100 && engine.has_unfinished_requests(); ++i)
    for (const StreamChunk& c : engine.step())
      if (c.id == id) tokens.insert(tokens.end(), c.token_ids.begin(), c.token_ids.end());
  CHECK(tokens == reference(r));
}

TEST_CASE("audio output carries samples and a real-time factor", "[engine][audio]") {
  auto engine = make_toy_engine();
  Request r = make_request(make_prompt(4, 2), 25);
  r.task = Task::tts;
  const RequestOutput out = engine.generate(r);
  CHECK(out.audio.size() == 25u * 160u);
  CHECK(out.audio_sample_rate == 16000u);
  CHECK(out.stats.output_audio_seconds == Approx(0.25));
  CHECK(out.stats.real_time_factor > 0.0);
  CHECK(engine.metrics().audio_real_time_factor.count() == 1u);
}

TEST_CASE("metrics use vLLM's names and a valid Prometheus exposition", "[engine][metrics]") {
  auto engine = make_toy_engine();
  std::size_t prompt_tokens = 0;
  for (std::uint32_t i = 0; i < 5; ++i) {
    const Request r = make_request(make_prompt(6 + i, i), 4);
    prompt_tokens += r.prompt_tokens.size();
    engine.generate(r);
  }
  const EngineMetrics m = engine.metrics();
  CHECK(m.prompt_tokens == prompt_tokens);
  CHECK(m.generation_tokens == 20u);
  CHECK(m.finished(FinishReason::length) == 5u);
  CHECK(m.time_to_first_token.count() == 5u);
  CHECK(m.inter_token_latency.count() == 15u);
  CHECK(m.e2e_request_latency.count() == 5u);
  CHECK(m.request_queue_time.count() == 5u);

  const std::string text = engine.metrics_text();
  for (const char* line :
       {"# TYPE izwi:time_to_first_token_seconds histogram", "# TYPE izwi:prompt_tokens_total counter",
        "izwi:num_requests_running{model_name=\"izwi\"} 0", "izwi:generation_tokens_total{model_name=\"izwi\"} 20",
        "izwi:request_success_total{model_name=\"izwi\",finished_reason=\"length\"} 5",
        "izwi:time_to_first_token_seconds_bucket{model_name=\"izwi\",le=\"+Inf\"} 5",
        "izwi:e2e_request_latency_seconds_count{model_name=\"izwi\"} 5"})
    CHECK(text.find(line) != std::string::npos);
  // Every bucket series is cumulative: non-decreasing in le order.
  std::istringstream lines(text);
  std::string line, series;
  double previous = -1;
  while (std::getline(lines, line)) {
    const auto bucket = line.find("_bucket{");
    if (bucket == std::string::npos) continue;
    const std::string name = line.substr(0, bucket);
    const double value = std::stod(line.substr(line.rfind(' ') + 1));
    if (name != series) previous = -1, series = name;
    CHECK(value >= previous);
    previous = value;
  }
}

TEST_CASE("Histogram quantiles interpolate inside buckets like histogram_quantile", "[metrics]") {
  const std::array<double, 3> bounds{1.0, 2.0, 4.0};
  Histogram h(bounds);
  CHECK(h.quantile(0.5) == 0.0);  // empty
  for (int i = 0; i < 10; ++i) h.observe(0.5);   // bucket le=1
  for (int i = 0; i < 10; ++i) h.observe(1.5);   // bucket le=2
  CHECK(h.count() == 20u);
  CHECK(h.sum() == Approx(20.0));
  CHECK(h.quantile(0.25) == Approx(0.5));   // rank 5 of 10 in [0, 1]
  CHECK(h.quantile(0.5) == Approx(1.0));    // rank 10: end of the first bucket
  CHECK(h.quantile(0.75) == Approx(1.5));   // rank 15: half into (1, 2]
  h.observe(100.0);                          // +Inf bucket
  CHECK(h.quantile(1.0) == Approx(4.0));     // the largest finite bound
  CHECK(h.bucket_counts().size() == 4u);
  CHECK(h.bucket_counts()[3] == 1u);
}

TEST_CASE("abort_all ends every unfinished request and frees its blocks", "[engine][abort]") {
  auto engine = make_toy_engine();
  engine.run();
  std::vector<ResponseStream> streams;
  for (std::uint32_t i = 0; i < 5; ++i) streams.push_back(engine.generate_streaming(make_request(make_prompt(20, i), 1000)));
  CHECK(engine.abort_all() == 5u);
  for (auto& stream : streams) {
    std::optional<FinishReason> reason;
    while (auto chunk = stream.next())
      if (chunk->finished()) reason = chunk->finish_reason;
    CHECK(reason == FinishReason::abort);
  }
  engine.stop();
  CHECK_FALSE(engine.has_unfinished_requests());
  CHECK(engine.abort_all() == 0u);
  CHECK(engine.kv_cache().stats().num_used_blocks == 0);
  CHECK(engine.metrics().num_kv_blocks_used == 0);
}

TEST_CASE("the engine with PlaybackDeadlineScheduler hands each step's audio to the scheduler",
          "[engine][audio][playback]") {
  using DeadlineEngine = Engine<PlaybackDeadlineScheduler, ToyKV, ToyExecutor>;
  ToyExecutor executor(ToyModelConfig{});
  ToyKV kv(executor.kv_cache_shape(), {.num_blocks = 256});
  DeadlineEngine engine(PlaybackDeadlineScheduler({.seed = 1}), std::move(kv), std::move(executor), EngineConfig{});
  std::map<RequestId, std::size_t> samples;
  std::vector<RequestId> speech;
  for (std::uint32_t i = 0; i < 4; ++i) {
    Request r = make_request(make_prompt(5 + i, i), 30);
    r.task = Task::tts;
    speech.push_back(engine.add_request(std::move(r)));
  }
  const RequestId text = engine.add_request(make_request(make_prompt(6, 9), 30));
  std::map<RequestId, bool> finished;
  for (int step = 0; step < 1000 && engine.has_unfinished_requests(); ++step) {
    for (const StreamChunk& c : engine.step()) {
      samples[c.id] += c.audio.size();
      if (c.finished()) finished[c.id] = c.finish_reason == FinishReason::length;
    }
    // What the scheduler believes was delivered is what the streams received.
    for (RequestId id : speech)
      if (const SequenceState* s = engine.scheduler().find(id))
        CHECK(s->playback.delivered_seconds == Approx(static_cast<double>(samples[id]) / 16000.0));
  }
  for (RequestId id : speech) {
    CHECK(finished[id]);
    CHECK(samples[id] == 30u * 160u);
  }
  CHECK(finished[text]);  // a request without audio is served too
  CHECK(samples[text] == 0u);
  CHECK(engine.kv_cache().stats().num_used_blocks == 0u);
}
