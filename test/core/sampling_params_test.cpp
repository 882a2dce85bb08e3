#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "izwi/core/sampling_params.hpp"

using izwi::SamplingParams;

namespace {
// Returns the field named by the error, failing the test if nothing was thrown.
std::string rejected_field(const SamplingParams& p, std::string* message = nullptr) {
  try {
    p.validate();
  } catch (const izwi::invalid_argument& e) {
    if (message) *message = e.what();
    return e.field();
  }
  return "";
}
}  // namespace

TEST_CASE("SamplingParams defaults are vLLM's", "[sampling]") {
  SamplingParams p;
  CHECK(p.temperature == 1.0f);
  CHECK(p.top_p == 1.0f);
  CHECK(p.top_k == 0);
  CHECK(p.min_p == 0.0f);
  CHECK(p.repetition_penalty == 1.0f);
  CHECK(p.presence_penalty == 0.0f);
  CHECK(p.frequency_penalty == 0.0f);
  CHECK(p.max_tokens == 16u);
  CHECK(p.min_tokens == 0u);
  CHECK_FALSE(p.ignore_eos);
  CHECK_FALSE(p.seed.has_value());
  CHECK_FALSE(p.logprobs.has_value());
  CHECK_NOTHROW(p.validate());
}

TEST_CASE("SamplingParams validation names the field, the value and the range", "[sampling]") {
  std::string message;
  SamplingParams p;
  p.top_p = 1.5f;
  CHECK(rejected_field(p, &message) == "top_p");
  CHECK(message == "top_p must be in (0, 1], got 1.5");

  p = {};
  p.temperature = -0.5f;
  CHECK(rejected_field(p, &message) == "temperature");
  CHECK(message.find("-0.5") != std::string::npos);

  p = {};
  p.temperature = std::nanf("");
  CHECK(rejected_field(p) == "temperature");

  p = {};
  p.logit_bias = {{7, 100.0f}, {8, -100.0f}};
  CHECK(rejected_field(p).empty());
  p.logit_bias = {{7, 100.5f}};
  CHECK(rejected_field(p, &message) == "logit_bias");
  CHECK(message == "logit_bias must be biases in [-100, 100], got 100.5");
  p.logit_bias = {{7, std::nanf("")}};
  CHECK(rejected_field(p) == "logit_bias");
  p.logit_bias = {{-1, 1.0f}};
  CHECK(rejected_field(p) == "logit_bias");
  p.logit_bias = {{7, 1.0f}, {3, 0.0f}, {7, -1.0f}};
  CHECK(rejected_field(p, &message) == "logit_bias");
  CHECK(message.find("token 7 more than once") != std::string::npos);
  p.logit_bias.assign(SamplingParams::max_logit_bias + 1, {0, 0.0f});
  for (std::size_t i = 0; i < p.logit_bias.size(); ++i) p.logit_bias[i].first = static_cast<izwi::TokenId>(i);
  CHECK(rejected_field(p) == "logit_bias");

  p = {};
  p.top_k = -2;
  CHECK(rejected_field(p) == "top_k");
  p.top_k = -1;
  CHECK(rejected_field(p).empty());

  p = {};
  p.min_p = 1.01f;
  CHECK(rejected_field(p) == "min_p");

  p = {};
  p.repetition_penalty = 0.0f;
  CHECK(rejected_field(p) == "repetition_penalty");

  p = {};
  p.presence_penalty = 2.5f;
  CHECK(rejected_field(p) == "presence_penalty");
  p = {};
  p.frequency_penalty = -2.01f;
  CHECK(rejected_field(p) == "frequency_penalty");

  p = {};
  p.max_tokens = 0;
  CHECK(rejected_field(p) == "max_tokens");

  p = {};
  p.max_tokens = 4;
  p.min_tokens = 5;
  CHECK(rejected_field(p, &message) == "min_tokens");
  CHECK(message == "min_tokens must be in [0, max_tokens] = [0, 4], got 5");

  p = {};
  p.logprobs = 21;
  CHECK(rejected_field(p) == "logprobs");
  p.logprobs = 20;
  CHECK(rejected_field(p).empty());

  p = {};
  p.stop = {"ok", ""};
  CHECK(rejected_field(p) == "stop");

  p = {};
  p.stop_token_ids = {3, -4};
  CHECK(rejected_field(p) == "stop_token_ids");
}
