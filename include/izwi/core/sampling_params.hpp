#pragma once
// SamplingParams: how a request turns logits into tokens and when it stops.
// Fields, defaults and allowed ranges follow vLLM's SamplingParams, so a
// request that vLLM accepts means the same thing here.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "izwi/core/ids.hpp"

namespace izwi {

struct SamplingParams {
  /// Scales logits before sampling; 0 means greedy (argmax). Range [0, inf).
  float temperature = 1.0f;
  /// Nucleus sampling: keep the smallest set of tokens whose probability sums to top_p. Range (0, 1].
  float top_p = 1.0f;
  /// Keep the k most likely tokens; 0 or -1 disables. Range -1, 0 or >= 1.
  std::int32_t top_k = 0;
  /// Drop tokens whose probability is below min_p times the most likely one's. Range [0, 1].
  float min_p = 0.0f;
  /// Multiplies logits of tokens seen in prompt or output (>1 discourages). Range (0, inf).
  float repetition_penalty = 1.0f;
  /// Subtracted once from logits of tokens that appeared in the output. Range [-2, 2].
  float presence_penalty = 0.0f;
  /// Subtracted per occurrence from logits of tokens in the output. Range [-2, 2].
  float frequency_penalty = 0.0f;
  /// Seeds this request's own generator: the same seed gives the same tokens
  /// whatever else shares the batch. Unset: the engine draws a seed.
  std::optional<std::uint64_t> seed;
  /// Generation stops when the output text contains one of these (not included in the output).
  std::vector<std::string> stop;
  /// Generation stops when one of these tokens is sampled (in addition to EOS).
  std::vector<TokenId> stop_token_ids;
  /// Upper bound on generated tokens; unset means "until EOS or the context limit". Range >= 1.
  std::optional<std::uint32_t> max_tokens = 16;
  /// EOS and stop_token_ids are ignored until this many tokens were generated. Range [0, max_tokens].
  std::uint32_t min_tokens = 0;
  /// Keep generating past EOS (benchmarks).
  bool ignore_eos = false;
  /// Return the log-probability of each sampled token and of this many top alternatives. Range [0, 20].
  std::optional<std::uint32_t> logprobs;
  /// (token id, bias) pairs: each bias is added to that token's logit before
  /// the penalties and the draw, greedy included (OpenAI's and vLLM's
  /// logit_bias; -100 bans a token in practice, +100 all but forces it).
  /// Biases in [-100, 100]; ids non-negative (the engine checks them against
  /// the model's vocabulary); at most max_logit_bias entries, each id once.
  std::vector<std::pair<TokenId, float>> logit_bias;

  /// Largest `logprobs` accepted, as vLLM's default max_logprobs.
  static constexpr std::uint32_t max_logprobs = 20;
  /// Most logit_bias entries: each is work per sampled token on the engine's
  /// thread (OpenAI documents no limit; real biases name a few tokens).
  static constexpr std::size_t max_logit_bias = 1024;

  /// Greedy decoding: argmax, no generator consulted.
  bool is_greedy() const noexcept { return temperature == 0.0f; }

  /// Throws izwi::invalid_argument naming the first field that is out of range,
  /// its value and the allowed range, e.g. "top_p must be in (0, 1], got 1.5".
  void validate() const;

 private:
  void validate_logit_bias() const;
};

}  // namespace izwi

#include "izwi/core/impl/sampling_params.hpp"
