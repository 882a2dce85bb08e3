#pragma once
// WhisperRunner, whisper_greedy_decode, whisper_detect_language: bodies.

#include <algorithm>
#include <cmath>
#include <limits>

#include "izwi/core/error.hpp"
#include "izwi/models/detail/whisper_decoding.hpp"

namespace izwi {

inline WhisperRunner::WhisperRunner(const Whisper& model, WhisperRunnerOptions options)
    : model_(&model),
      pool_(options.num_threads),
      ops_(pool_),
      kv_(model.kv_cache_shape(), [&] {
        PagedKVCacheConfig c;
        const KVCacheShape shape = model.kv_cache_shape();
        const std::size_t per_position =
            2 * std::size_t{shape.num_layers} * shape.num_kv_heads * shape.head_dim * dtype_size(shape.dtype);
        // One more block than the longest sequence needs, for the null block.
        c.byte_budget = options.kv_cache_bytes ? options.kv_cache_bytes
                                               : (model.max_sequence_length() + 2 * 64) * per_position;
        return c;
      }()) {}

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
  restart();
}

inline void WhisperRunner::restart() {
  kv_.free(sequence_);
  ++sequence_;
  const std::size_t audio = model_->audio_positions(), n_audio_ctx = model_->config().n_audio_ctx;
  sequence_tokens_.assign(audio, model_->special_tokens().eot);  // placeholders: never embedded
  if (encoder_out_.empty()) return;
  const SequenceView view{sequence_, sequence_tokens_, nullptr};
  if (!kv_.allocate_slots(view, 0, audio)) throw izwi::error("WhisperRunner: KV cache too small for the audio");
  const auto blocks = kv_.block_table(sequence_);
  const std::size_t bs = kv_.block_size();
  std::vector<std::int64_t> slots(n_audio_ctx);
  for (std::size_t p = 0; p < n_audio_ctx; ++p) slots[p] = static_cast<std::int64_t>(blocks[p / bs] * bs + p % bs);
  model_->store_cross_kv(ops_, encoder_out_.data(), 0, slots, kv_);
}

inline std::span<const float> WhisperRunner::feed(std::span<const TokenId> tokens, bool all_rows) {
  return feed_tokens(tokens, all_rows, [&](const ForwardBatch& batch, auto self, auto cross) {
    model_->forward(ops_, batch, self, cross, kv_, logits_.data());
  });
}

inline std::span<const float> WhisperRunner::feed_with_alignment(
    std::span<const TokenId> tokens, std::span<const std::pair<std::uint32_t, std::uint32_t>> heads,
    std::size_t audio_frames, std::vector<float>& weights) {
  restart();
  weights.assign(heads.size() * tokens.size() * audio_frames, 0.0f);
  return feed_tokens(tokens, true, [&](const ForwardBatch& batch, auto self, auto cross) {
    model_->alignment_weights(ops_, batch, self, cross, kv_, encoder_out_.data(), heads, audio_frames,
                              weights.data(), logits_.data());
  });
}

template <class Run>
std::span<const float> WhisperRunner::feed_tokens(std::span<const TokenId> tokens, bool all_rows, Run&& run) {
  const std::size_t audio = model_->audio_positions();
  if (encoder_out_.empty()) throw izwi::invalid_argument("tokens", "start() the runner with a window first");
  const std::size_t n = tokens.size(), past = sequence_tokens_.size(), vocab = model_->vocab_size();
  if (n == 0) throw izwi::invalid_argument("tokens", "nothing to feed");
  if (past - audio + n > model_->config().n_text_ctx)
    throw izwi::invalid_argument("tokens", "the decoder holds at most " +
                                               std::to_string(model_->config().n_text_ctx) + " tokens");
  for (TokenId t : tokens)
    if (t < 0 || static_cast<std::size_t>(t) >= vocab)
      throw izwi::invalid_argument("tokens", "token id " + std::to_string(t) + " outside the vocabulary");
  sequence_tokens_.insert(sequence_tokens_.end(), tokens.begin(), tokens.end());
  const SequenceView view{sequence_, sequence_tokens_, nullptr};
  if (!kv_.allocate_slots(view, past, n)) throw izwi::error("WhisperRunner: KV cache too small for the sequence");
  const auto blocks = kv_.block_table(sequence_);
  const std::size_t bs = kv_.block_size();
  std::vector<std::int64_t> positions(n), slots(n);
  std::vector<std::uint32_t> rows;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t p = past + i;
    positions[i] = static_cast<std::int64_t>(p - audio);
    slots[i] = static_cast<std::int64_t>(blocks[p / bs] * bs + p % bs);
    if (all_rows || i + 1 == n) rows.push_back(static_cast<std::uint32_t>(i));
  }
  ForwardBatch batch{tokens, positions, slots, rows};
  detail::CpuOps::attention_sequence self{past, n, blocks, 0};
  self.first_visible = audio;
  detail::CpuOps::attention_sequence cross = self;
  cross.first_visible = 0;
  cross.visible_end = model_->config().n_audio_ctx;
  logits_.resize(rows.size() * vocab);
  run(batch, std::span<const detail::CpuOps::attention_sequence>(&self, 1),
      std::span<const detail::CpuOps::attention_sequence>(&cross, 1));
  return logits_;
}


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
      if (options.checkpoint_suppress_tokens)
        detail::whisper::apply_checkpoint_suppression(scratch, model.generation_config(), result.tokens.empty());
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
