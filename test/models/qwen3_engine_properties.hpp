#pragma once
// Engine properties of Qwen3 that need no outside reference, for any
// executor: KV-cached decoding equals a full recompute, chunked prefill
// equals unchunked, a batch of mixed greedy and seeded requests equals each
// request alone, a preempted-and-resumed request equals an undisturbed one,
// and every KV block is free at the end. Shared by the CPU executor's tests
// (models/qwen3_properties_test.cpp) and the OpenCL executor's
// (opencl/opencl_engine_test.cpp).
//
// `make(scheduling, tight)` returns a fresh engine on the random Qwen3 with
// keep_logits(true): a roomy KV cache, or with `tight` room for about two
// and a half of four 20-token requests at 44 tokens (8 blocks of 16).

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "relative_difference.hpp"
#include "izwi/core/request.hpp"
#include "izwi/scheduler/scheduler_config.hpp"

namespace izwi::testing::qwen3_properties {

inline Request greedy(std::vector<TokenId> prompt, std::uint32_t max_tokens) {
  Request r;
  r.prompt_tokens = std::move(prompt);
  r.sampling.temperature = 0.0f;
  r.sampling.max_tokens = max_tokens;
  r.sampling.ignore_eos = true;
  return r;
}

inline std::vector<TokenId> prompt_of(std::size_t length, std::uint32_t salt) {
  std::vector<TokenId> p(length);
  for (std::size_t i = 0; i < length; ++i) p[i] = static_cast<TokenId>((salt * 104729u + i * 7919u) % 151000u);
  return p;
}

/// Runs `engine` to the end, collecting each request's tokens by its index.
template <class E>
std::vector<std::vector<TokenId>> run_all(E& engine, const std::vector<Request>& requests,
                                          std::size_t* max_batch = nullptr) {
  std::map<RequestId, std::size_t> index;
  for (std::size_t i = 0; i < requests.size(); ++i) index[engine.add_request(requests[i])] = i;
  std::vector<std::vector<TokenId>> got(requests.size());
  while (engine.has_unfinished_requests()) {
    for (const StreamChunk& c : engine.step()) {
      auto& tokens = got[index.at(c.id)];
      tokens.insert(tokens.end(), c.token_ids.begin(), c.token_ids.end());
    }
    if (max_batch) *max_batch = std::max(*max_batch, engine.scheduler().last_plan().sequences.size());
  }
  return got;
}

/// Decodes step by step, then recomputes every third position from scratch
/// (a different cache salt each time, so no prefix is shared).
template <class MakeEngine>
void cached_decoding_equals_recompute(MakeEngine make, double tolerance) {
  auto engine = make(SchedulerConfig{}, false);
  const std::vector<TokenId> prompt = prompt_of(9, 1);
  std::vector<std::vector<float>> decoded_logits;
  std::vector<TokenId> output;
  engine.add_request(greedy(prompt, 12));
  while (engine.has_unfinished_requests()) {
    for (const StreamChunk& c : engine.step()) output.insert(output.end(), c.token_ids.begin(), c.token_ids.end());
    const auto logits = engine.executor().last_logits();
    if (!logits.empty()) decoded_logits.emplace_back(logits.begin(), logits.end());
  }
  REQUIRE(output.size() == 12u);
  REQUIRE(decoded_logits.size() == 12u);
  for (std::size_t k = 0; k < output.size(); k += 3) {
    std::vector<TokenId> context = prompt;
    context.insert(context.end(), output.begin(), output.begin() + static_cast<std::ptrdiff_t>(k));
    Request full = greedy(context, 1);
    full.cache_salt = "recompute-" + std::to_string(k);
    const RequestOutput out = engine.generate(full);
    INFO("position " << k);
    CHECK(out.token_ids.front() == output[k]);
    CHECK(relative_difference(engine.executor().last_logits(), decoded_logits[k]) <= tolerance);
  }
  CHECK(engine.kv_cache().stats().num_used_blocks == 0);
}

template <class MakeEngine>
void chunked_prefill_equals_unchunked(MakeEngine make, double tolerance) {
  const Request r = greedy(prompt_of(45, 2), 8);
  auto whole = make(SchedulerConfig{}, false);
  const RequestOutput expected = whole.generate(r);
  const std::vector<float> expected_logits(whole.executor().last_logits().begin(),
                                           whole.executor().last_logits().end());
  SchedulerConfig small;
  small.max_num_batched_tokens = 7;  // the prompt goes in chunks of 7, none on a block boundary
  auto chunked = make(small, false);
  const RequestOutput out = chunked.generate(r);
  CHECK(out.token_ids == expected.token_ids);
  CHECK(relative_difference(chunked.executor().last_logits(), expected_logits) <= tolerance);
  CHECK(chunked.kv_cache().stats().num_used_blocks == 0);
}

/// `count` requests of growing length; the odd ones sample with their own
/// seeded generator, which must give the same draws whatever the batch.
template <class MakeEngine>
void batched_equals_alone(MakeEngine make, std::uint32_t count = 8) {
  std::vector<Request> requests;
  for (std::uint32_t i = 0; i < count; ++i) {
    Request r = greedy(prompt_of(3 + i * 6, 10 + i), 6 + i);
    if (i % 2) {
      r.sampling.temperature = 0.8f;
      r.sampling.top_k = 40;
      r.sampling.seed = 1000 + i;
    }
    requests.push_back(std::move(r));
  }
  auto alone = make(SchedulerConfig{}, false);
  std::vector<std::vector<TokenId>> expected;
  for (const Request& r : requests) {
    Request unshared = r;
    unshared.cache_salt = "alone";
    expected.push_back(alone.generate(unshared).token_ids);
  }
  auto batched = make(SchedulerConfig{}, false);
  std::size_t max_batch = 0;
  const auto got = run_all(batched, requests, &max_batch);
  CHECK(max_batch == requests.size());  // they really shared steps
  for (std::size_t i = 0; i < requests.size(); ++i) {
    INFO("request " << i);
    CHECK(got[i] == expected[i]);
  }
  CHECK(batched.kv_cache().stats().num_used_blocks == 0);
}

template <class MakeEngine>
void preempted_equals_undisturbed(MakeEngine make) {
  std::vector<Request> requests;
  for (std::uint32_t i = 0; i < 4; ++i) requests.push_back(greedy(prompt_of(20 + i, 30 + i), 24));
  // Undisturbed: batched in a roomy cache (batched = alone is its own property).
  auto roomy = make(SchedulerConfig{}, false);
  const auto expected = run_all(roomy, requests);
  CHECK(roomy.metrics().num_preemptions == 0);
  auto tight = make(SchedulerConfig{}, true);
  const auto got = run_all(tight, requests);
  CHECK(tight.metrics().num_preemptions > 0);
  for (std::size_t i = 0; i < requests.size(); ++i) CHECK(got[i] == expected[i]);
  CHECK(tight.kv_cache().stats().num_used_blocks == 0);
  CHECK(tight.kv_cache().check_invariants().empty());
}

}  // namespace izwi::testing::qwen3_properties
