// The engine's exception barrier and fault isolation, with the toy model's
// fault injection (toy_model.hpp: throw_token, nan_token), and the UTF-8
// boundaries of streamed text held back for stop strings.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "engine/engine_fixture.hpp"
#include "izwi/core/detail/utf8.hpp"

using namespace izwi;
using namespace izwi::testing;

namespace {

constexpr TokenId throw_token = 998;  // make_prompt never yields ids above 996
constexpr TokenId nan_token = 999;

ToyModelConfig faulty_model() {
  ToyModelConfig model;
  model.throw_token = throw_token;
  model.nan_token = nan_token;
  return model;
}

struct Finished {
  std::vector<TokenId> tokens;
  std::string text;
  std::optional<FinishReason> reason;
  std::string error;
};

Finished drain(ResponseStream& stream) {
  Finished f;
  while (auto chunk = stream.next()) {
    f.tokens.insert(f.tokens.end(), chunk->token_ids.begin(), chunk->token_ids.end());
    f.text += chunk->text;
    if (chunk->finished()) {
      f.reason = chunk->finish_reason;
      f.error = chunk->error;
    }
  }
  return f;
}

/// Eight healthy requests (greedy and seeded, prefill long enough to be
/// chunked with the faulty one) plus one whose prompt carries `fault`.
void check_fault_isolated(TokenId fault, const std::string& expected_message) {
  EngineConfig config;
  config.log_errors = false;
  SchedulerConfig scheduler;
  scheduler.max_num_batched_tokens = 48;  // the faulty request shares chunked steps with the others
  auto engine = make_toy_engine(256, scheduler, faulty_model(), config);
  std::vector<Request> healthy;
  for (std::uint32_t i = 0; i < 8; ++i)
    healthy.push_back(make_request(make_prompt(10 + 3 * i, i), 12 + i, 100 + i, i % 2 ? 1.0f : 0.0f));
  std::vector<TokenId> bad_prompt = make_prompt(20, 42);
  bad_prompt[7] = fault;

  engine.run();
  std::vector<ResponseStream> streams;
  for (std::size_t i = 0; i < healthy.size(); ++i) {
    streams.push_back(engine.generate_streaming(healthy[i]));
    if (i == 3) streams.push_back(engine.generate_streaming(make_request(bad_prompt, 30)));
  }
  std::size_t healthy_seen = 0;
  for (std::size_t i = 0; i < streams.size(); ++i) {
    const Finished f = drain(streams[i]);
    if (i == 4) {  // the faulty one
      CHECK(f.reason == FinishReason::error);
      CHECK(f.error.find(expected_message) != std::string::npos);
      continue;
    }
    const Request& r = healthy[healthy_seen++];
    INFO("healthy request " << healthy_seen);
    CHECK(f.reason == FinishReason::length);
    CHECK(f.error.empty());
    CHECK(f.tokens == toy_reference(r.prompt_tokens, r.sampling, engine.executor().config()));
  }
  engine.stop();
  CHECK_FALSE(engine.has_unfinished_requests());
  CHECK(engine.executor().corrupt_reads() == 0u);
  CHECK(engine.kv_cache().stats().num_used_blocks == 0u);
  CHECK(engine.kv_cache().check_invariants().empty());
  const EngineMetrics m = engine.metrics();
  CHECK(m.num_request_errors == 1u);
  CHECK(m.finished(FinishReason::error) == 1u);
  CHECK(m.finished(FinishReason::length) == healthy.size());
  const std::string text = engine.metrics_text();
  CHECK(text.find("izwi:request_errors_total{model_name=\"izwi\"} 1") != std::string::npos);
}

bool valid_utf8(std::string_view s) { return izwi::detail::utf8_first_invalid(s) == std::string_view::npos; }

}  // namespace

TEST_CASE("a forward pass that throws fails only its request, the loop goes on", "[engine][faults]") {
  check_fault_isolated(throw_token, "injected fault in the forward pass");
}

TEST_CASE("NaN logits fail only their request, with a clear error", "[engine][faults]") {
  check_fault_isolated(nan_token, "non-finite logits");
}

TEST_CASE("a thrown step is counted and the engine keeps serving", "[engine][faults]") {
  EngineConfig config;
  config.log_errors = false;
  auto engine = make_toy_engine(64, {}, faulty_model(), config);
  std::vector<TokenId> bad = make_prompt(9, 1);
  bad.back() = throw_token;
  // generate() steps the engine itself: the throw must not escape step().
  RequestOutput failed;
  REQUIRE_NOTHROW(failed = engine.generate(make_request(bad, 5)));
  CHECK(failed.finish_reason == FinishReason::error);
  CHECK(failed.error.find("injected fault") != std::string::npos);
  CHECK(engine.metrics().num_engine_faults >= 1u);
  CHECK(engine.kv_cache().stats().num_used_blocks == 0u);
  const Request good = make_request(make_prompt(9, 2), 6, 5, 1.0f);
  const RequestOutput ok = engine.generate(good);
  CHECK(ok.finish_reason == FinishReason::length);
  CHECK(ok.token_ids == toy_reference(good.prompt_tokens, good.sampling, engine.executor().config()));
  CHECK(engine.metrics_text().find("izwi:engine_faults_total") != std::string::npos);
}

TEST_CASE("a device out of memory preempts the newest sequences, which then give the undisturbed tokens",
          "[engine][faults][preemption]") {
  EngineConfig config;
  config.log_errors = false;
  SchedulerConfig scheduler;
  scheduler.max_num_batched_tokens = 256;  // the scheduler plans more than the device holds
  ToyModelConfig tight = faulty_model();
  tight.device_memory_step_tokens = 48;
  // Greedy and seeded requests; the odd ones share a 24-token prefix (six
  // full blocks) with the request before them, admitted in the same step, so
  // a later request reads prefix blocks an earlier one writes in that pass.
  std::vector<Request> requests;
  std::vector<TokenId> shared;
  for (std::uint32_t i = 0; i < 8; ++i) {
    std::vector<TokenId> prompt = make_prompt(4 + 2 * i, i);  // 28 to 42 tokens: each fits alone
    if (i % 2 == 0) shared = make_prompt(24, 60 + i);
    prompt.insert(prompt.begin(), shared.begin(), shared.end());
    requests.push_back(make_request(prompt, 10 + i, 100 + i, i % 3 ? 1.0f : 0.0f));
  }
  // 76 tokens sharing 24 with request 0: even after that prefix hit, 52 to
  // compute in one step, more than the device holds.
  std::vector<TokenId> too_big = requests[0].prompt_tokens;
  too_big.resize(24);
  for (TokenId t : make_prompt(52, 99)) too_big.push_back(t);

  auto roomy = make_toy_engine(256, scheduler, faulty_model(), config);
  std::vector<std::vector<TokenId>> expected;
  for (const Request& r : requests) expected.push_back(roomy.generate(r).token_ids);

  auto engine = make_toy_engine(256, scheduler, tight, config);
  std::vector<RequestId> ids;
  for (const Request& r : requests) ids.push_back(engine.add_request(r));
  const RequestId too_big_id = engine.add_request(make_request(too_big, 4));
  std::map<RequestId, Finished> got;
  while (engine.has_unfinished_requests())
    for (const StreamChunk& chunk : engine.step()) {
      Finished& f = got[chunk.id];
      f.tokens.insert(f.tokens.end(), chunk.token_ids.begin(), chunk.token_ids.end());
      if (chunk.finished()) {
        f.reason = chunk.finish_reason;
        f.error = chunk.error;
      }
    }
  for (std::size_t i = 0; i < requests.size(); ++i) {
    INFO("request " << i);
    CHECK(got[ids[i]].reason == FinishReason::length);
    CHECK(got[ids[i]].tokens == expected[i]);
  }
  CHECK(got[too_big_id].reason == FinishReason::error);
  CHECK_THAT(got[too_big_id].error, Catch::Contains("does not fit the device"));
  // The failed request's blocks were registered but never written: a request
  // with its first 40 tokens must compute them, not hit them.
  const std::vector<TokenId> after(too_big.begin(), too_big.begin() + 40);
  CHECK(engine.generate(make_request(after, 6)).token_ids == roomy.generate(make_request(after, 6)).token_ids);
  CHECK(engine.metrics().num_preemptions > 0);
  CHECK(engine.metrics().num_request_errors == 1);
  CHECK(engine.executor().num_faults_thrown() > 0);
  CHECK(engine.executor().corrupt_reads() == 0);  // no block planned but never written was reused
  CHECK(engine.executor().max_step_tokens() <= 48);
  CHECK(engine.kv_cache().stats().num_used_blocks == 0);
  CHECK(engine.kv_cache().check_invariants().empty());
}

TEST_CASE("prompt token ids outside the vocabulary are refused at the edge", "[engine][faults]") {
  ToyModelConfig model;
  model.report_vocab_size = true;
  auto engine = make_toy_engine(64, {}, model);
  for (TokenId bad : {TokenId{1000}, TokenId{-1}}) {
    try {
      engine.add_request(make_request({1, 2, bad}, 4));
      FAIL("accepted token id " << bad);
    } catch (const invalid_argument& e) {
      CHECK(std::string(e.what()).find("is out of vocabulary (size 1000)") != std::string::npos);
      CHECK(std::string(e.what()).find(std::to_string(bad)) != std::string::npos);
    }
  }
  CHECK_NOTHROW(engine.add_request(make_request({1, 2, 999}, 4)));
  // logit_bias names ids of the same vocabulary.
  Request biased = make_request({1, 2}, 4);
  biased.sampling.logit_bias = {{999, 1.0f}, {1000, -100.0f}};
  try {
    engine.add_request(biased);
    FAIL("accepted a logit_bias id outside the vocabulary");
  } catch (const invalid_argument& e) {
    CHECK(e.field() == "logit_bias");
    CHECK(std::string(e.what()).find("token 1000, outside the model's vocabulary of 1000 ids") != std::string::npos);
  }
  biased.sampling.logit_bias = {{999, 1.0f}};
  CHECK_NOTHROW(engine.add_request(biased));
}

TEST_CASE("an empty prompt and one that fills the context are refused in vLLM's words", "[engine][faults]") {
  // The one prompt check (izwi::check_prompt_tokens): the server passes these
  // messages on unchanged, naming its own parameter.
  ToyModelConfig model;
  model.max_model_len = 8;
  auto engine = make_toy_engine(64, {}, model);
  auto message_of = [&](std::vector<TokenId> prompt) -> std::string {
    try {
      engine.add_request(make_request(std::move(prompt), 1));
    } catch (const invalid_argument& e) {
      CHECK(e.field() == "prompt_tokens");
      return e.what();
    }
    return "";
  };
  CHECK(message_of({}) == "The prompt is empty.");
  CHECK(message_of(std::vector<TokenId>(8, 1)) ==
        "This model's maximum context length is 8 tokens. However, your request has 8 input tokens. Please reduce "
        "the length of the input.");
  CHECK(message_of(std::vector<TokenId>(7, 1)).empty());  // one token of room is enough
}

TEST_CASE("text held back for a stop string is released only between UTF-8 characters", "[engine][stream][utf8]") {
  ToyModelConfig model;
  model.multibyte_text = true;  // tokens read as 1- to 4-byte characters
  auto engine = make_toy_engine(256, {}, model);
  engine.run();
  for (std::uint32_t salt = 0; salt < 12; ++salt) {
    Request r = make_request(make_prompt(6, salt), 40, salt, 1.0f);
    // Never matches, but holds back 6 bytes: every cut would land inside some character.
    r.sampling.stop = {"xxxxxxx"};
    if (salt % 3 == 1) {
      // A multibyte stop string, "語😀" (a token = 2 mod 4, then one = 3 mod 4).
      r.sampling.stop.push_back("\xE8\xAA\x9E\xF0\x9F\x98\x80");
    }
    const RequestOutput whole = engine.generate(r);
    ResponseStream stream = engine.generate_streaming(r);
    std::string streamed;
    while (auto chunk = stream.next()) {
      INFO("salt " << salt << ", chunk of " << chunk->text.size() << " bytes");
      CHECK(valid_utf8(chunk->text));
      streamed += chunk->text;
    }
    CHECK(streamed == whole.text);
    CHECK(valid_utf8(whole.text));
  }
  engine.stop();
}

TEST_CASE("a throw in output processing fails the step's requests, the engine goes on", "[engine][faults]") {
  const Request victim = make_request(make_prompt(8, 5), 10);
  ToyModelConfig model;
  const std::vector<TokenId> free_run = toy_reference(victim.prompt_tokens, victim.sampling, model);
  model.detokenizer_throw_token = free_run.at(3);
  const auto first_bad = static_cast<std::size_t>(
      std::find(free_run.begin(), free_run.end(), *model.detokenizer_throw_token) - free_run.begin());
  EngineConfig config;
  config.log_errors = false;
  auto engine = make_toy_engine(64, {}, model, config);
  engine.run();
  ResponseStream stream = engine.generate_streaming(victim);
  const Finished f = drain(stream);
  CHECK(f.reason == FinishReason::error);
  CHECK(f.error.find("toy detokenizer: injected fault") != std::string::npos);
  // Tokens up to the one whose text threw (its id is in the last chunk; its text is not).
  CHECK(f.tokens == std::vector<TokenId>(free_run.begin(), free_run.begin() + static_cast<std::ptrdiff_t>(first_bad) + 1));
  // The loop still runs: a request after the fault is served in full.
  Request next = make_request(make_prompt(8, 6), 10);
  ResponseStream second = engine.generate_streaming(next);
  const Finished g = drain(second);
  engine.stop();
  const auto expected = toy_reference(next.prompt_tokens, next.sampling, model);
  if (std::find(expected.begin(), expected.end(), *model.detokenizer_throw_token) == expected.end()) {
    CHECK(g.reason == FinishReason::length);
    CHECK(g.tokens == expected);
  }
  CHECK_FALSE(engine.has_unfinished_requests());
  CHECK(engine.kv_cache().stats().num_used_blocks == 0u);
  CHECK(engine.kv_cache().check_invariants().empty());
  CHECK(engine.metrics().num_engine_faults >= 1u);
  CHECK(engine.metrics().num_request_errors >= 1u);
}
