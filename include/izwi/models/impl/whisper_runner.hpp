#pragma once
// WhisperRunner, whisper_greedy_decode, whisper_detect_language: bodies.

#include <algorithm>
#include <cmath>
#include <limits>

#include "izwi/core/error.hpp"

namespace izwi {

inline WhisperRunner::WhisperRunner(const Whisper& model, WhisperRunnerOptions options)
    : model_(&model),
      pool_(options.num_threads),
      ops_(pool_),
      kv_(model.kv_cache_shape(), [&] {
        PagedKVCacheConfig c;
        c.byte_budget = options.kv_cache_bytes;
        return c;
      }()),
      cross_(model.make_cross_kv()) {}

inline WhisperRunner::~WhisperRunner() { kv_.free(sequence_); }

inline void WhisperRunner::start(std::span<const float> mel) {
  const WhisperConfig& c = model_->config();
  const std::size_t expected = std::size_t{c.n_mels} * 2 * c.n_audio_ctx;
  if (mel.size() != expected)
    throw izwi::invalid_argument("mel", "Whisper needs " + std::to_string(c.n_mels) + " x " +
                                            std::to_string(2 * c.n_audio_ctx) + " mel values, got " +
                                            std::to_string(mel.size()));
  encoder_out_.resize(std::size_t{c.n_audio_ctx} * c.d_model);
  model_->encode(ops_, mel.data(), encoder_out_.data());
  model_->cross_kv(ops_, encoder_out_.data(), cross_);
  restart();
}

inline void WhisperRunner::restart() {
  kv_.free(sequence_);
  ++sequence_;
  tokens_.clear();
}

inline std::span<const float> WhisperRunner::feed(std::span<const TokenId> tokens, bool all_rows) {
  const std::size_t n = tokens.size(), past = tokens_.size(), vocab = model_->vocab_size();
  if (n == 0) throw izwi::invalid_argument("tokens", "nothing to feed");
  if (past + n > model_->config().n_text_ctx)
    throw izwi::invalid_argument("tokens", "the decoder holds at most " +
                                               std::to_string(model_->config().n_text_ctx) + " tokens");
  for (TokenId t : tokens)
    if (t < 0 || static_cast<std::size_t>(t) >= vocab)
      throw izwi::invalid_argument("tokens", "token id " + std::to_string(t) + " outside the vocabulary");
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  const SequenceView view{sequence_, tokens_, nullptr};
  if (!kv_.allocate_slots(view, past, n)) throw izwi::error("WhisperRunner: KV cache too small for the sequence");
  const auto blocks = kv_.block_table(sequence_);
  const std::size_t bs = kv_.block_size();
  std::vector<std::int64_t> positions(n), slots(n);
  std::vector<std::uint32_t> rows;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t p = past + i;
    positions[i] = static_cast<std::int64_t>(p);
    slots[i] = static_cast<std::int64_t>(blocks[p / bs] * bs + p % bs);
    if (all_rows || i + 1 == n) rows.push_back(static_cast<std::uint32_t>(i));
  }
  ForwardBatch batch{tokens, positions, slots, rows};
  const detail::CpuOps::attention_sequence seq{past, n, blocks, 0};
  const WhisperCrossKV* cross = &cross_;
  logits_.resize(rows.size() * vocab);
  model_->forward(ops_, batch, std::span(&seq, 1), std::span(&cross, 1), kv_, logits_.data());
  return logits_;
}

namespace detail::whisper {

inline constexpr float minus_infinity = -std::numeric_limits<float>::infinity();

/// openai-whisper's SuppressBlank, SuppressTokens (as whisper.cpp applies them
/// by default) and ApplyTimestampRules, on the logits of the next token after
/// `generated`.
inline void apply_decoding_rules(std::vector<float>& logits, std::span<const TokenId> generated,
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
  // A timestamp when their total probability beats every text token.
  const float top = *std::max_element(logits.begin(), logits.end());
  double total = 0, timestamp_mass = 0;
  float best_text = minus_infinity;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    const double p = std::exp(static_cast<double>(logits[i] - top));
    total += p;
    if (i >= begin) timestamp_mass += p;
    else best_text = std::max(best_text, logits[i]);
  }
  const double log_timestamp = std::log(timestamp_mass) - std::log(total);
  const double log_best_text = static_cast<double>(best_text - top) - std::log(total);
  if (timestamp_mass > 0 && log_timestamp > log_best_text)
    std::fill(logits.begin(), logits.begin() + static_cast<std::ptrdiff_t>(begin), minus_infinity);
}

}  // namespace detail::whisper

inline WhisperGreedyResult whisper_greedy_decode(WhisperRunner& runner, const WhisperGreedyOptions& options) {
  const Whisper& model = runner.model();
  const auto& s = model.special_tokens();
  const tokenizer::WhisperTokenizer* tok = model.tokenizer();
  WhisperGreedyResult result;
  if (tok != nullptr) {
    result.prompt = tok->sot_sequence(options.language, options.translate, options.timestamps);
  } else {
    result.prompt = {s.sot};
    if (s.multilingual) {
      const auto lang = s.language_token(options.language);
      if (!lang) throw izwi::invalid_argument("language", "unknown language '" + options.language + "'");
      result.prompt.push_back(*lang);
      result.prompt.push_back(options.translate ? s.translate : s.transcribe);
    }
    if (!options.timestamps) result.prompt.push_back(s.no_timestamps);
  }
  const std::optional<TokenId> space = tok ? tok->token_to_id(" ") : std::nullopt;
  runner.restart();
  std::span<const float> logits = runner.feed(result.prompt);
  std::vector<float> scratch;
  const std::size_t limit = std::min<std::size_t>(options.max_tokens, model.config().n_text_ctx - result.prompt.size());
  while (result.tokens.size() < limit) {
    scratch.assign(logits.begin(), logits.end());
    if (options.apply_rules) {
      if (options.checkpoint_suppress_tokens) {
        const WhisperGenerationConfig& g = model.generation_config();
        for (TokenId id : g.suppress_tokens) scratch[static_cast<std::size_t>(id)] = detail::whisper::minus_infinity;
        if (result.tokens.empty())
          for (TokenId id : g.begin_suppress_tokens)
            scratch[static_cast<std::size_t>(id)] = detail::whisper::minus_infinity;
      }
      detail::whisper::apply_decoding_rules(scratch, result.tokens, s, space, options.timestamps,
                                            options.initial_timestamp);
    }
    const auto best = static_cast<TokenId>(std::max_element(scratch.begin(), scratch.end()) - scratch.begin());
    if (best == s.eot) {
      result.reached_end = true;
      break;
    }
    result.tokens.push_back(best);
    if (result.tokens.size() == limit) break;
    logits = runner.feed(std::span(&best, 1));
  }
  if (tok != nullptr) result.text = tok->decode(result.tokens);
  return result;
}

inline WhisperLanguage whisper_detect_language(WhisperRunner& runner) {
  const auto& s = runner.model().special_tokens();
  if (!s.multilingual) return {"en", s.sot + 1, 1.0};
  runner.restart();
  const TokenId sot = s.sot;
  const std::span<const float> logits = runner.feed(std::span(&sot, 1));
  const auto first = static_cast<std::size_t>(s.sot + 1);
  const auto languages = logits.subspan(first, s.num_languages);
  const auto best = static_cast<std::size_t>(std::max_element(languages.begin(), languages.end()) - languages.begin());
  double total = 0;
  for (float l : languages) total += std::exp(static_cast<double>(l - languages[best]));
  runner.restart();
  return {std::string(tokenizer::whisper_languages[best]), static_cast<TokenId>(first + best), 1.0 / total};
}

}  // namespace izwi
