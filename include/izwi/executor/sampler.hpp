#pragma once
// Sampler: turns one sequence's logits into its next token, in vLLM's order
// and with vLLM's semantics, so a request means the same thing here:
//
//   1. logprobs, when asked for, of the raw logits (vLLM's default "raw_logprobs")
//   2. logit_bias added (vLLM applies it among its logits processors, with
//      min_tokens); min_tokens: EOS and stop_token_ids masked until that many
//      tokens exist
//   3. penalties: repetition (prompt and output; divides positive logits,
//      multiplies negative ones), frequency (minus f × count in the output),
//      presence (minus p once for every token in the output)
//   4. greedy (temperature 0): argmax of the processed logits, no generator
//   5. otherwise logits / temperature, then min_p (drop tokens whose
//      probability is below min_p × the top one's), top_k, top_p (the smallest
//      set reaching top_p), and a draw from the request's own generator
//
// The sampler keeps scratch buffers, so one sampler per executor thread
// allocates nothing per token in steady state.

#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "izwi/core/ids.hpp"
#include "izwi/core/random.hpp"
#include "izwi/core/sampling_params.hpp"
#include "izwi/core/step.hpp"

namespace izwi {

/// What the sampler needs to know about the sequence besides its logits.
struct SamplingInput {
  const SamplingParams* params = nullptr;
  std::span<const TokenId> prompt_tokens;
  std::span<const TokenId> output_tokens;
  /// The model's end-of-sequence ids (masked while min_tokens is unmet).
  std::span<const TokenId> eos_token_ids;
  SequenceRng* rng = nullptr;
};

/// Why the sampler could not choose a token.
enum class SampleError : std::uint8_t {
  none,
  /// Some logit is NaN or +infinity: the forward pass is broken (a NaN
  /// weight, bad hyper-parameters). Sampling from it would return garbage
  /// that looks like an answer, so the request fails instead.
  non_finite_logits,
  /// Every token's logit is -infinity: no token has any probability.
  no_candidate,
};

/// A sentence naming the problem, for the request's error message.
std::string_view describe(SampleError error) noexcept;

struct SampledToken {
  /// -1 when error != none.
  TokenId token = -1;
  /// Log-probability of `token` under the raw logits (when logprobs were asked for).
  float logprob = 0.0f;
  SampleError error = SampleError::none;

  bool ok() const noexcept { return error == SampleError::none; }
};

class Sampler {
 public:
  /// Samples from `logits` (one entry per vocabulary id), which it modifies in
  /// place. When the request asks for logprobs, appends its top-N raw
  /// log-probabilities to `top_logprobs` (most likely first).
  /// Total over every input: NaN or +infinity anywhere in the logits, or
  /// nothing but -infinity, returns an error (token -1, nothing appended)
  /// rather than indexing an empty candidate list or sampling garbage. The
  /// check is one pass over the row, small beside the lm_head product that made it.
  SampledToken sample(std::span<float> logits, const SamplingInput& input,
                      std::vector<TokenLogprob>* top_logprobs = nullptr);

  /// An executor's draw for one scheduled sequence, into the step's result:
  /// a SequenceOutput (its top logprobs appended to result.top_logprobs) or,
  /// when sample() fails, a SequenceFailure naming the problem. Penalties see
  /// `prompt_tokens` and `output_tokens` (usually the sequence's own split;
  /// a model family may draw the line elsewhere).
  void sample_into(std::span<float> logits, const ScheduledSequence& seq, std::span<const TokenId> prompt_tokens,
                   std::span<const TokenId> output_tokens, std::span<const TokenId> eos_token_ids,
                   StepResult& result);

  /// Tokens whose temperature-scaled logit lies this far below the maximum
  /// carry less than e^-30 of the top token's probability each; even summed over a
  /// 152k vocabulary (< 2e-8) they cannot change a top-p set or a draw, so
  /// sorting skips them. This is what keeps top-p over a large vocabulary cheap.
  static constexpr float negligible_logit_gap = 30.0f;

 private:
  void add_logit_bias(std::span<float> logits, const SamplingInput& input) const;
  void mask_stop_tokens(std::span<float> logits, const SamplingInput& input) const;
  void apply_penalties(std::span<float> logits, const SamplingInput& input);
  void draw(std::span<float> logits, const SamplingInput& input, SampledToken& out);
  void draw_from_candidates(float max, const SamplingInput& input, SampledToken& out);
  void log_softmax_top(std::span<const float> logits, TokenId chosen, std::uint32_t n, SampledToken& out,
                       std::vector<TokenLogprob>* top);

  std::vector<float> raw_;
  std::vector<std::pair<float, TokenId>> candidates_;
  std::vector<std::uint32_t> counts_;
  std::vector<TokenId> touched_;
};

}  // namespace izwi

#include "izwi/executor/impl/sampler.hpp"
