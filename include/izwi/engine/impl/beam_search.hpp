#pragma once
// Body of izwi/engine/beam_search.hpp.

#include <string>

namespace izwi {

inline double beam_score(double sum_logprob, std::size_t length, std::optional<double> length_penalty) {
  if (length == 0) return sum_logprob;
  const auto n = static_cast<double>(length);
  return sum_logprob / (length_penalty ? std::pow((5.0 + n) / 6.0, *length_penalty) : n);
}

namespace detail::beam {

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
  float logprob;
  double sum_logprob;
};

}  // namespace detail::beam

inline BeamSearcher::BeamSearcher(std::span<const TokenId> eos_token_ids, BeamSearchOptions options)
    : eos_(eos_token_ids.begin(), eos_token_ids.end()), options_(options), beams_(1) {
  if (options_.beam_width == 0 || options_.beam_width + 1 > SamplingParams::max_logprobs)
    throw invalid_argument("beam_width", "beam_width must be in [1, " + std::to_string(SamplingParams::max_logprobs - 1) +
                                             "], got " + std::to_string(options_.beam_width));
  wanted_ = static_cast<std::size_t>(std::max(1.0, std::round(static_cast<double>(options_.beam_width) * options_.patience)));
}

inline bool BeamSearcher::done() const noexcept {
  return rounds_ >= options_.max_tokens || beams_.empty() || finished_.size() >= wanted_;
}

// openai-whisper's BeamSearchDecoder.update: every beam's candidates ranked
// by summed log-probability; in that order, an end token finishes its
// hypothesis, anything else lives on, until beam_width live beams are kept.
inline void BeamSearcher::advance(std::span<const std::vector<TokenLogprob>> tops) {
  if (tops.size() != beams_.size())
    throw invalid_argument("tops", "one top list per live beam is needed: " + std::to_string(beams_.size()) +
                                       ", got " + std::to_string(tops.size()));
  ++rounds_;
  num_requests_ += beams_.size();
  std::vector<detail::beam::Candidate> candidates;
  for (std::size_t b = 0; b < beams_.size(); ++b)
    for (const TokenLogprob& alt : tops[b])  // empty: the context is full, this beam cannot grow
      candidates.push_back({b, alt.token, alt.logprob, beams_[b].sum_logprob + alt.logprob});
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const auto& a, const auto& b) { return a.sum_logprob > b.sum_logprob; });
  std::vector<BeamHypothesis> next;
  std::vector<BeamHypothesis> newly_finished;
  for (const auto& c : candidates) {
    if (next.size() == options_.beam_width) break;
    BeamHypothesis h{beams_[c.parent].tokens, beams_[c.parent].logprobs, c.sum_logprob, false, 0};
    h.logprobs.push_back(c.logprob);
    if (std::find(eos_.begin(), eos_.end(), c.token) != eos_.end()) {
      h.finished = true;
      newly_finished.push_back(std::move(h));
      continue;
    }
    h.tokens.push_back(c.token);
    next.push_back(std::move(h));
  }
  for (BeamHypothesis& h : newly_finished)  // already in order of sum_logprob
    if (finished_.size() < wanted_) finished_.push_back(std::move(h));
  beams_ = std::move(next);
}

inline BeamSearchResult BeamSearcher::finish() {
  // Not enough ended: the live beams compete too (openai-whisper's finalize).
  std::stable_sort(beams_.begin(), beams_.end(), [](const auto& a, const auto& b) { return a.sum_logprob > b.sum_logprob; });
  for (BeamHypothesis& b : beams_)
    if (finished_.size() < wanted_ || finished_.empty()) finished_.push_back(std::move(b));
  beams_.clear();
  for (BeamHypothesis& h : finished_) h.score = beam_score(h.sum_logprob, h.tokens.size(), options_.length_penalty);
  std::stable_sort(finished_.begin(), finished_.end(), [](const auto& a, const auto& b) { return a.score > b.score; });
  BeamSearchResult result;
  result.hypotheses = std::move(finished_);
  result.num_requests = num_requests_;
  if (result.hypotheses.empty()) result.hypotheses.emplace_back();
  return result;
}

template <class GenerateAll>
BeamSearchResult beam_search(GenerateAll&& generate_all, const Request& base, std::span<const TokenId> eos_token_ids,
                             const BeamSearchOptions& options) {
  BeamSearcher search(eos_token_ids, options);
  while (!search.done()) {
    const std::vector<RequestOutput> outputs =
        generate_all(detail::beam::round_requests(base, search.beams(), search.candidates_per_beam()));
    std::vector<std::vector<TokenLogprob>> tops(search.beams().size());
    for (std::size_t b = 0; b < tops.size(); ++b) {
      const RequestOutput& out = outputs.at(b);
      if (!out.error.empty() || out.finish_reason == FinishReason::error || out.finish_reason == FinishReason::abort)
        throw error("beam search: a beam's request failed: " + (out.error.empty() ? std::string("aborted") : out.error));
      if (!out.logprobs.empty()) tops[b] = out.logprobs.front().top;
    }
    search.advance(tops);
  }
  return search.finish();
}

}  // namespace izwi
