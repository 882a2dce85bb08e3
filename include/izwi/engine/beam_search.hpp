#pragma once
// Beam search on top of any engine, the way vLLM v1 does it: each round,
// every live beam is a request (the base request with the beam's tokens
// appended to its prompt, one token to generate, its top log-probabilities
// asked for); all beams of a round go to the engine together, so one step
// computes them as a batch, and the prefix cache shares what they have in
// common. Beams forked from one parent share its full KV blocks (a full block
// is never written again, so sharing is copy-on-write by construction), and
// the rows of its partly filled last block are copied into each child's own
// block (PagedKVCache and UnifiedKVCache remember a freed sequence's last
// block), so a child computes its one new token. Every
// family whose executor filters logits from the whole known sequence
// (Whisper's timestamp rules do) sees a beam exactly as it would see the same
// tokens generated.
//
//   auto result = izwi::beam_search(izwi::engine_generate_all(engine), request, eos, {.beam_width = 5});
//   result.best().tokens
//
// Scoring as openai-whisper's BeamSearchDecoder: each live beam expands into
// its beam_width + 1 most probable next tokens; the beam_width best
// candidates by summed log-probability live on; candidates that end (EOS)
// are collected until beam_width × patience have (the candidates ranked
// below the beam_width-th live one are not looked at); at the end hypotheses
// are ranked by sum_logprob / length, the end token's log-probability in the
// sum but not counted in the length (or / ((5 + length) / 6)^length_penalty).
// BeamSearcher is the same search as a state machine, for drivers that feed
// it rounds from streams (the transcription endpoints).
// The log-probabilities are what the executor's sampler reports: under the
// logits after the model's own filters, at temperature 1.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "izwi/core/error.hpp"
#include "izwi/core/request.hpp"
#include "izwi/engine/output.hpp"
#include "izwi/engine/stream.hpp"

namespace izwi {

struct BeamSearchOptions {
  std::size_t beam_width = 5;
  /// Tokens a hypothesis may reach (besides the prompt).
  std::size_t max_tokens = 224;
  /// Stop once round(beam_width × patience) hypotheses have ended.
  double patience = 1.0;
  /// Unset: rank by sum_logprob / length. Set: by sum_logprob / ((5 + length) / 6)^penalty (Google NMT).
  std::optional<double> length_penalty;
};

struct BeamHypothesis {
  std::vector<TokenId> tokens;  ///< generated tokens, the end token excluded
  /// Each generated token's log-probability; one more (the end token's) when finished.
  std::vector<float> logprobs;
  double sum_logprob = 0;
  bool finished = false;        ///< ended with an end token (not the length limit)
  double score = 0;             ///< the ranking score
};

struct BeamSearchResult {
  /// Best first; never empty.
  std::vector<BeamHypothesis> hypotheses;
  /// Requests sent to the engine (one per live beam and round).
  std::size_t num_requests = 0;
  const BeamHypothesis& best() const { return hypotheses.front(); }
};

/// openai-whisper's ranking score (MaximumLikelihoodRanker): sum_logprob over
/// the length (the end token not counted), or over ((5 + length) / 6)^penalty.
double beam_score(double sum_logprob, std::size_t length, std::optional<double> length_penalty);

/// The search as a state machine, for drivers that cannot block on a round
/// (the transcription server feeds it from engine streams):
///
///   BeamSearcher search(eos, options);
///   while (!search.done()) {
///     // one request per search.beams()[i]: its tokens after the prompt,
///     // greedy, one token, top search.candidates_per_beam() logprobs
///     search.advance(tops);   // tops[i]: that request's first top list (empty: it cannot grow)
///   }
///   BeamSearchResult r = search.finish();
class BeamSearcher {
 public:
  /// Throws izwi::invalid_argument for a beam width of 0 or above SamplingParams::max_logprobs − 1.
  BeamSearcher(std::span<const TokenId> eos_token_ids, BeamSearchOptions options);

  bool done() const noexcept;
  /// The live beams to expand this round (the first round: one, empty).
  const std::vector<BeamHypothesis>& beams() const noexcept { return beams_; }
  /// How many top log-probabilities each beam's request must return (beam_width + 1).
  std::uint32_t candidates_per_beam() const noexcept { return static_cast<std::uint32_t>(options_.beam_width + 1); }
  /// The round's answers, one top list per beam in beams()' order.
  void advance(std::span<const std::vector<TokenLogprob>> tops);
  /// The hypotheses ranked, best first (never empty). Call once done().
  BeamSearchResult finish();

 private:
  std::vector<TokenId> eos_;
  BeamSearchOptions options_;
  std::size_t wanted_ = 1;
  std::size_t rounds_ = 0;
  std::size_t num_requests_ = 0;
  std::vector<BeamHypothesis> beams_, finished_;
};

/// Beam search of `base` (its sampling is replaced: greedy, one token, top
/// beam_width + 1 logprobs). `generate_all(std::vector<Request>)` returns one
/// RequestOutput per request, in order, having run them concurrently (see
/// engine_generate_all). Throws izwi::invalid_argument for a beam width of 0
/// or above SamplingParams::max_logprobs − 1, and izwi::error naming the
/// request's error when a beam's request fails.
template <class GenerateAll>
BeamSearchResult beam_search(GenerateAll&& generate_all, const Request& base, std::span<const TokenId> eos_token_ids,
                             const BeamSearchOptions& options = {});

/// generate_all for an Engine running its loop (engine.run()): submits every
/// request as a stream, then collects each stream's output.
template <class Engine>
auto engine_generate_all(Engine& engine) {
  return [&engine](std::vector<Request> requests) {
    std::vector<ResponseStream> streams;
    streams.reserve(requests.size());
    for (Request& r : requests) streams.push_back(engine.generate_streaming(std::move(r)));
    std::vector<RequestOutput> outputs(streams.size());
    for (std::size_t i = 0; i < streams.size(); ++i)
      while (std::optional<StreamChunk> chunk = streams[i].next()) {
        RequestOutput& out = outputs[i];
        out.id = chunk->id;
        out.token_ids.insert(out.token_ids.end(), chunk->token_ids.begin(), chunk->token_ids.end());
        out.logprobs.insert(out.logprobs.end(), chunk->logprobs.begin(), chunk->logprobs.end());
        out.text += chunk->text;
        if (chunk->finish_reason) out.finish_reason = *chunk->finish_reason;
        out.error += chunk->error;
      }
    return outputs;
  };
}

}  // namespace izwi

#include "izwi/engine/impl/beam_search.hpp"
