#pragma once
// Body of izwi/engine/beam_search.hpp.

#include <string>

namespace izwi {

namespace detail::beam {

inline double score(const BeamHypothesis& h, const BeamSearchOptions& options) {
  const double length = static_cast<double>(h.tokens.size() + (h.finished ? 1 : 0));
  if (length == 0) return h.sum_logprob;
  const double penalty = options.length_penalty ? std::pow((5.0 + length) / 6.0, *options.length_penalty) : length;
  return h.sum_logprob / penalty;
}

/// A round's requests: the base with each beam's tokens appended.
inline std::vector<Request> round_requests(const Request& base, const std::vector<BeamHypothesis>& beams,
                                           std::uint32_t candidates) {
  std::vector<Request> requests;
  requests.reserve(beams.size());
  for (const BeamHypothesis& beam : beams) {
    Request r = base;
    r.id = 0;
    r.prompt_tokens.insert(r.prompt_tokens.end(), beam.tokens.begin(), beam.tokens.end());
    r.sampling.temperature = 0.0f;
    r.sampling.max_tokens = 1;
    r.sampling.min_tokens = 0;
    r.sampling.logprobs = candidates;
    r.sampling.stop.clear();
    requests.push_back(std::move(r));
  }
  return requests;
}

struct Candidate {
  std::size_t parent;
  TokenId token;
  double sum_logprob;
};

}  // namespace detail::beam

template <class GenerateAll>
BeamSearchResult beam_search(GenerateAll&& generate_all, const Request& base, std::span<const TokenId> eos_token_ids,
                             const BeamSearchOptions& options) {
  if (options.beam_width == 0 || options.beam_width + 1 > SamplingParams::max_logprobs)
    throw invalid_argument("beam_width", "beam_width must be in [1, " + std::to_string(SamplingParams::max_logprobs - 1) +
                                             "], got " + std::to_string(options.beam_width));
  const auto is_end = [&](TokenId t) { return std::find(eos_token_ids.begin(), eos_token_ids.end(), t) != eos_token_ids.end(); };
  const auto wanted = static_cast<std::size_t>(std::max(1.0, std::round(options.beam_width * options.patience)));
  BeamSearchResult result;
  std::vector<BeamHypothesis> beams(1), finished;
  for (std::size_t length = 0; length < options.max_tokens && !beams.empty() && finished.size() < wanted; ++length) {
    std::vector<Request> requests =
        detail::beam::round_requests(base, beams, static_cast<std::uint32_t>(options.beam_width + 1));
    result.num_requests += requests.size();
    const std::vector<RequestOutput> outputs = generate_all(std::move(requests));
    std::vector<detail::beam::Candidate> candidates;
    for (std::size_t b = 0; b < beams.size(); ++b) {
      const RequestOutput& out = outputs.at(b);
      if (!out.error.empty() || out.finish_reason == FinishReason::error || out.finish_reason == FinishReason::abort)
        throw error("beam search: a beam's request failed: " + (out.error.empty() ? std::string("aborted") : out.error));
      if (out.logprobs.empty()) continue;  // the context is full: this beam cannot grow
      for (const TokenLogprob& alt : out.logprobs.front().top)
        candidates.push_back({b, alt.token, beams[b].sum_logprob + alt.logprob});
    }
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const auto& a, const auto& b) { return a.sum_logprob > b.sum_logprob; });
    std::vector<BeamHypothesis> next;
    for (const auto& c : candidates) {
      BeamHypothesis h{beams[c.parent].tokens, c.sum_logprob, false, 0};
      if (is_end(c.token)) {
        if (finished.size() < wanted) {
          h.finished = true;
          finished.push_back(std::move(h));
        }
        continue;
      }
      if (next.size() == options.beam_width) continue;
      h.tokens.push_back(c.token);
      next.push_back(std::move(h));
    }
    beams = std::move(next);
  }
  // Not enough ended: the live beams compete too (openai-whisper's finalize).
  for (BeamHypothesis& b : beams)
    if (finished.size() < wanted || finished.empty()) finished.push_back(std::move(b));
  for (BeamHypothesis& h : finished) h.score = detail::beam::score(h, options);
  std::stable_sort(finished.begin(), finished.end(), [](const auto& a, const auto& b) { return a.score > b.score; });
  result.hypotheses = std::move(finished);
  if (result.hypotheses.empty()) result.hypotheses.emplace_back();
  return result;
}

}  // namespace izwi
