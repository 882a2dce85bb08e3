#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>

namespace izwi {

inline std::string_view describe(SampleError error) noexcept {
  switch (error) {
    case SampleError::none: return "no error";
    case SampleError::non_finite_logits:
      return "the model produced non-finite logits (NaN or infinity) for this request; the checkpoint may hold "
             "NaN weights or bad hyper-parameters";
    case SampleError::no_candidate:
      return "every token has probability zero (all logits are -infinity), so no token can be sampled";
  }
  return "unknown sampling error";
}

inline void Sampler::apply_penalties(std::span<float> logits, const SamplingInput& input) {
  const SamplingParams& p = *input.params;
  const bool repetition = p.repetition_penalty != 1.0f;
  const bool additive = p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f;
  if (!repetition && !additive) return;
  const auto vocab = static_cast<TokenId>(logits.size());
  if (counts_.size() < logits.size()) counts_.assign(logits.size(), 0);
  touched_.clear();
  // Output counts drive frequency/presence; prompt tokens count only for repetition.
  for (TokenId t : input.output_tokens) {
    if (t < 0 || t >= vocab) continue;
    if (counts_[static_cast<std::size_t>(t)]++ == 0) touched_.push_back(t);
  }
  if (repetition) {
    auto penalise = [&](TokenId t) {
      float& l = logits[static_cast<std::size_t>(t)];
      l = l > 0 ? l / p.repetition_penalty : l * p.repetition_penalty;
    };
    // Each distinct token once: mark prompt tokens with a high bit in counts_.
    constexpr std::uint32_t seen = 1u << 31;
    for (TokenId t : touched_) {
      penalise(t);
      counts_[static_cast<std::size_t>(t)] |= seen;
    }
    for (TokenId t : input.prompt_tokens) {
      if (t < 0 || t >= vocab) continue;
      std::uint32_t& c = counts_[static_cast<std::size_t>(t)];
      if (c & seen) continue;
      if (c == 0) touched_.push_back(t);
      c |= seen;
      penalise(t);
    }
    for (TokenId t : touched_) counts_[static_cast<std::size_t>(t)] &= ~seen;
  }
  for (TokenId t : touched_) {
    const std::uint32_t count = counts_[static_cast<std::size_t>(t)];
    if (count > 0)
      logits[static_cast<std::size_t>(t)] -= p.frequency_penalty * static_cast<float>(count) + p.presence_penalty;
    counts_[static_cast<std::size_t>(t)] = 0;
  }
}

inline void Sampler::log_softmax_top(std::span<const float> logits, TokenId chosen, std::uint32_t n,
                                     SampledToken& out, std::vector<TokenLogprob>* top) {
  float max = -std::numeric_limits<float>::infinity();
  for (float l : logits) max = std::max(max, l);
  double sum = 0.0;
  for (float l : logits) sum += std::exp(static_cast<double>(l - max));
  const float log_z = max + static_cast<float>(std::log(sum));
  out.logprob = logits[static_cast<std::size_t>(chosen)] - log_z;
  if (!top || n == 0) return;
  candidates_.clear();
  for (std::size_t i = 0; i < logits.size(); ++i) candidates_.emplace_back(logits[i], static_cast<TokenId>(i));
  n = std::min<std::uint32_t>(n, static_cast<std::uint32_t>(candidates_.size()));
  std::partial_sort(candidates_.begin(), candidates_.begin() + n, candidates_.end(), std::greater<>());
  for (std::uint32_t i = 0; i < n; ++i) top->push_back({candidates_[i].second, candidates_[i].first - log_z});
}

/// Each logit_bias entry added to its token's logit (ids past the vocabulary,
/// which the engine refuses at submission, are skipped here too).
inline void Sampler::add_logit_bias(std::span<float> logits, const SamplingInput& input) const {
  const auto vocab = static_cast<TokenId>(logits.size());
  for (const auto& [token, bias] : input.params->logit_bias)
    if (token >= 0 && token < vocab) logits[static_cast<std::size_t>(token)] += bias;
}

/// min_tokens hides the ways to stop: EOS and stop token ids get -infinity.
inline void Sampler::mask_stop_tokens(std::span<float> logits, const SamplingInput& input) const {
  const SamplingParams& p = *input.params;
  if (input.output_tokens.size() >= p.min_tokens) return;
  const auto vocab = static_cast<TokenId>(logits.size());
  constexpr float masked = -std::numeric_limits<float>::infinity();
  for (TokenId t : input.eos_token_ids)
    if (t >= 0 && t < vocab) logits[static_cast<std::size_t>(t)] = masked;
  for (TokenId t : p.stop_token_ids)
    if (t >= 0 && t < vocab) logits[static_cast<std::size_t>(t)] = masked;
}

inline SampledToken Sampler::sample(std::span<float> logits, const SamplingInput& input,
                                    std::vector<TokenLogprob>* top_logprobs) {
  const SamplingParams& p = *input.params;
  SampledToken out;

  // 0. A broken forward pass fails the request (see SampleError): NaN and
  //    +infinity both fail `l < +inf`; a vocabulary of -infinity has no candidate.
  constexpr float infinity = std::numeric_limits<float>::infinity();
  bool broken = logits.empty();
  for (float l : logits) broken |= !(l < infinity);
  if (broken) {
    out.error = SampleError::non_finite_logits;
    return out;
  }

  // 1. Raw logprobs are taken before anything changes the logits; the chosen
  //    token is not known yet, so keep a copy only when they are wanted.
  const bool want_logprobs = p.logprobs.has_value();
  if (want_logprobs) raw_.assign(logits.begin(), logits.end());

  add_logit_bias(logits, input);    // 2.
  mask_stop_tokens(logits, input);
  apply_penalties(logits, input);   // 3.
  draw(logits, input, out);         // 4. and 5.
  if (out.error != SampleError::none) return out;
  if (want_logprobs) log_softmax_top(raw_, out.token, *p.logprobs, out, top_logprobs);
  return out;
}

/// 4. Greedy, or 5. temperature and one draw among the candidates.
inline void Sampler::draw(std::span<float> logits, const SamplingInput& input, SampledToken& out) {
  const SamplingParams& p = *input.params;
  constexpr float infinity = std::numeric_limits<float>::infinity();
  const auto top = std::max_element(logits.begin(), logits.end());
  if (*top == -infinity) {
    out.token = -1;
    out.error = SampleError::no_candidate;
    return;
  }
  out.token = static_cast<TokenId>(top - logits.begin());
  if (p.is_greedy()) return;
  const float inv_t = 1.0f / p.temperature;
  // So small a temperature that scaling overflows: its limit is greedy.
  if (!(std::fabs(*top * inv_t) < infinity) || !(inv_t < infinity)) return;
  float max = -infinity;
  for (float& l : logits) {
    l *= inv_t;
    max = std::max(max, l);
  }
  const float floor = max - negligible_logit_gap;
  candidates_.clear();
  for (std::size_t i = 0; i < logits.size(); ++i)
    if (logits[i] >= floor) candidates_.emplace_back(logits[i], static_cast<TokenId>(i));
  draw_from_candidates(max, input, out);
}

/// Sorts the candidates, keeps those min_p, top_k and top_p allow, and draws
/// one with the request's generator.
inline void Sampler::draw_from_candidates(float max, const SamplingInput& input, SampledToken& out) {
  const SamplingParams& p = *input.params;
  // Only the first top_k candidates are ever read below (min_p stops within
  // them, top_p and the draw within what min_p keeps), so with a top_k only
  // those are ordered: (value, token) pairs are distinct, so partial_sort
  // puts exactly the elements and order a full sort would there. A
  // near-uniform distribution (Qwen3-TTS's codebooks: up to 3072
  // candidates, 16 draws a frame per stream, on the engine's thread) then
  // costs a selection of 50 instead of a sort of all of them.
  if (p.top_k > 0 && static_cast<std::size_t>(p.top_k) < candidates_.size()) {
    const auto top_k = static_cast<std::ptrdiff_t>(p.top_k);
    std::partial_sort(candidates_.begin(), candidates_.begin() + top_k, candidates_.end(), std::greater<>());
    candidates_.resize(static_cast<std::size_t>(p.top_k));
  } else {
    std::sort(candidates_.begin(), candidates_.end(), std::greater<>());
  }
  // Probabilities relative to the top token (exp(0) = 1 for it).
  for (auto& candidate : candidates_) candidate.first = std::exp(candidate.first - max);
  std::size_t keep = candidates_.size();
  if (p.min_p > 0.0f) {  // prob_i / prob_max < min_p, the top token's relative prob being 1
    std::size_t k = 1;
    while (k < keep && candidates_[k].first >= p.min_p) ++k;
    keep = k;
  }
  if (p.top_k > 0) keep = std::min(keep, static_cast<std::size_t>(p.top_k));
  double kept = 0.0;
  for (std::size_t i = 0; i < keep; ++i) kept += candidates_[i].first;
  if (p.top_p < 1.0f) {
    // Smallest prefix whose probability (renormalised over what is kept) reaches top_p.
    const double target = static_cast<double>(p.top_p) * kept;
    double running = 0.0;
    std::size_t k = 0;
    while (k < keep) {
      running += candidates_[k].first;
      ++k;
      if (running >= target) break;
    }
    keep = k;
    kept = running;
  }
  double u = static_cast<double>(input.rng->uniform_float()) * kept;
  out.token = candidates_[keep - 1].second;
  for (std::size_t i = 0; i < keep; ++i) {
    u -= candidates_[i].first;
    if (u < 0.0) {
      out.token = candidates_[i].second;
      break;
    }
  }
}

inline void Sampler::sample_into(std::span<float> logits, const ScheduledSequence& seq,
                                 std::span<const TokenId> prompt_tokens, std::span<const TokenId> output_tokens,
                                 std::span<const TokenId> eos_token_ids, StepResult& result) {
  SamplingInput input;
  input.params = seq.sampling;
  input.prompt_tokens = prompt_tokens;
  input.output_tokens = output_tokens;
  input.eos_token_ids = eos_token_ids;
  input.rng = seq.rng;
  SequenceOutput out;
  out.id = seq.id;
  out.top_logprobs_begin = static_cast<std::uint32_t>(result.top_logprobs.size());
  const SampledToken sampled = sample(logits, input, &result.top_logprobs);
  if (!sampled.ok()) {
    result.failures.push_back({seq.id, std::string(describe(sampled.error))});
    return;
  }
  out.token = sampled.token;
  out.logprob = sampled.logprob;
  out.top_logprobs_count = static_cast<std::uint32_t>(result.top_logprobs.size()) - out.top_logprobs_begin;
  result.outputs.push_back(out);
}

}  // namespace izwi
