#pragma once
// openai-whisper's logit filters, shared by WhisperRunner's greedy decoding
// and the engine's WhisperCpuExecutor.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "izwi/core/ids.hpp"
#include "izwi/models/whisper.hpp"
#include "izwi/tokenizer/whisper_tokenizer.hpp"

namespace izwi {

namespace detail::whisper {

inline constexpr float minus_infinity = -std::numeric_limits<float>::infinity();

/// openai-whisper's SuppressBlank, SuppressTokens (as whisper.cpp applies them
/// by default) and ApplyTimestampRules, on the logits of the next token after
/// `generated`.
inline void apply_decoding_rules(std::span<float> logits, std::span<const TokenId> generated,
                                 const tokenizer::WhisperSpecialTokens& s, std::optional<TokenId> space,
                                 bool timestamps, bool initial_timestamp) {
  const auto begin = static_cast<std::size_t>(s.timestamp_begin);
  const auto eot = static_cast<std::size_t>(s.eot);
  if (generated.empty()) {
    logits[eot] = minus_infinity;
    if (space) logits[static_cast<std::size_t>(*space)] = minus_infinity;
  }
  for (std::size_t id = eot + 1; id < begin; ++id) logits[id] = minus_infinity;  // every special but <|endoftext|>
  if (!timestamps) {
    std::fill(logits.begin() + static_cast<std::ptrdiff_t>(begin), logits.end(), minus_infinity);
    return;
  }
  const std::size_t n = generated.size();
  const bool last_ts = n >= 1 && s.is_timestamp(generated[n - 1]);
  const bool penultimate_ts = n < 2 || s.is_timestamp(generated[n - 2]);
  if (last_ts) {
    if (penultimate_ts)
      std::fill(logits.begin() + static_cast<std::ptrdiff_t>(begin), logits.end(), minus_infinity);
    else
      std::fill(logits.begin(), logits.begin() + static_cast<std::ptrdiff_t>(eot), minus_infinity);
  }
  // Timestamps never decrease, and a segment has non-zero length.
  for (std::size_t i = n; i-- > 0;)
    if (s.is_timestamp(generated[i])) {
      const auto last = static_cast<std::size_t>(generated[i]) + (last_ts && !penultimate_ts ? 0 : 1);
      std::fill(logits.begin() + static_cast<std::ptrdiff_t>(begin), logits.begin() + static_cast<std::ptrdiff_t>(last),
                minus_infinity);
      break;
    }
  if (n == 0) {  // the first timestamp is at most 1 s (and the first token one, for openai-whisper)
    if (initial_timestamp) std::fill(logits.begin(), logits.begin() + static_cast<std::ptrdiff_t>(begin), minus_infinity);
    std::fill(logits.begin() + static_cast<std::ptrdiff_t>(std::min(logits.size(), begin + 51)), logits.end(),
              minus_infinity);
  }
  // A timestamp when their total probability beats every text token's:
  // logsumexp(timestamps) > max(text), openai-whisper's comparison of
  // log-probabilities with the softmax's normaliser cancelled from both
  // sides, so only the 1501 timestamps need an exponential, not the vocabulary
  // (each decoder step of a timestamped decode runs this).
  const auto ts_begin = logits.begin() + static_cast<std::ptrdiff_t>(std::min(begin, logits.size()));
  const float best_text = ts_begin == logits.begin() ? minus_infinity : *std::max_element(logits.begin(), ts_begin);
  const float top_timestamp = ts_begin == logits.end() ? minus_infinity : *std::max_element(ts_begin, logits.end());
  if (top_timestamp == minus_infinity) return;  // every timestamp suppressed: their probability is 0
  double timestamp_mass = 0;
  for (auto it = ts_begin; it != logits.end(); ++it) timestamp_mass += std::exp(static_cast<double>(*it - top_timestamp));
  if (static_cast<double>(top_timestamp) + std::log(timestamp_mass) > static_cast<double>(best_text))
    std::fill(logits.begin(), ts_begin, minus_infinity);
}

/// Index in a decoder's tokens of the first one after the
/// <|startoftranscript|> sequence (its language, task and <|notimestamps|>):
/// where the text starts that the filters constrain. The tokens' size when
/// there is no <|startoftranscript|>.
inline std::size_t sample_begin(std::span<const TokenId> decoder_tokens, const tokenizer::WhisperSpecialTokens& s) {
  const auto sot = std::find(decoder_tokens.begin(), decoder_tokens.end(), s.sot);
  if (sot == decoder_tokens.end()) return decoder_tokens.size();
  auto at = sot + 1;
  const auto in_sot_sequence = [&](TokenId t) {
    return !s.language_code(t).empty() || t == s.translate || t == s.transcribe || t == s.no_timestamps;
  };
  while (at != decoder_tokens.end() && in_sot_sequence(*at)) ++at;
  return static_cast<std::size_t>(at - decoder_tokens.begin());
}

/// A Hugging Face checkpoint's own lists (generation_config.json):
/// suppress_tokens always, begin_suppress_tokens for the first token.
inline void apply_checkpoint_suppression(std::span<float> logits, const WhisperGenerationConfig& g, bool first) {
  const auto suppress = [&](TokenId id) {
    if (id >= 0 && static_cast<std::size_t>(id) < logits.size()) logits[static_cast<std::size_t>(id)] = minus_infinity;
  };
  for (TokenId id : g.suppress_tokens) suppress(id);
  if (first)
    for (TokenId id : g.begin_suppress_tokens) suppress(id);
}

}  // namespace detail::whisper

}  // namespace izwi
