#pragma once
// EngineModel<Engine> bodies. Included by izwi/server/any_engine.hpp.

#include <ctime>
#include <thread>
#include <type_traits>

#include "izwi/core/error.hpp"
#include "izwi/engine/metrics.hpp"
#include "izwi/tokenizer/bpe_tokenizer.hpp"

namespace izwi::server {

namespace detail {

template <class Model>
concept HasOwnChatTemplate = requires(const Model& m, std::span<const tokenizer::ChatMessage> messages,
                                      const tokenizer::ChatTemplateOptions& options) {
  { m.render_chat(messages, options) } -> std::convertible_to<std::string>;
};

/// A Whisper-style tokenizer: encode(text) only, token_text(id) for bytes.
template <class Tokenizer>
concept HasTokenBytes = requires(const Tokenizer& t, TokenId id) { t.token_bytes(id); };

template <class Model>
concept IsWhisperModel = std::is_same_v<std::remove_cvref_t<Model>, Whisper>;

template <class Model>
concept IsQwen3TtsModel = std::is_same_v<std::remove_cvref_t<Model>, Qwen3Tts>;

/// vocab_size() of the model, or of its tokenizer for models without one (Qwen3-TTS).
template <class Model>
std::size_t model_vocab_size(const Model& model) noexcept {
  if constexpr (requires { model.vocab_size(); }) {
    return model.vocab_size();
  } else {
    const auto* tokenizer = model.tokenizer();
    return tokenizer ? tokenizer->vocab_size() : 0;
  }
}

}  // namespace detail

template <class Engine>
EngineModel<Engine>::EngineModel(std::unique_ptr<Engine> engine, ModelInfo info)
    : engine_(std::move(engine)), info_(std::move(info)) {
  if (info_.created == 0) info_.created = static_cast<std::int64_t>(std::time(nullptr));
  const auto& model = engine_->executor().model();
  // Found by argument-dependent lookup in izwi/server/qwen3_tts_speech.hpp,
  // which the code instantiating this must include (the stock loader does).
  if constexpr (detail::IsQwen3TtsModel<decltype(model)>) {
    SpeechVoices voices;
    describe_speech(model, voices);
    speech_voices_ = std::move(voices);
  }
  engine_->run();
}

template <class Engine>
EngineModel<Engine>::~EngineModel() {
  shutdown(std::chrono::steady_clock::now());
}

template <class Engine>
std::vector<TokenId> EngineModel<Engine>::encode(std::string_view text) const {
  const auto* tokenizer = engine_->executor().model().tokenizer();
  if (!tokenizer) throw invalid_argument("model", "model '" + info_.id + "' has no tokenizer; send token ids");
  return tokenizer->encode(text);
}

template <class Engine>
std::vector<TokenId> EngineModel<Engine>::encode_as_text(std::string_view text) const {
  const auto* tokenizer = engine_->executor().model().tokenizer();
  if (!tokenizer) throw invalid_argument("model", "model '" + info_.id + "' has no tokenizer; send token ids");
  if constexpr (detail::HasTokenBytes<std::remove_cvref_t<decltype(*tokenizer)>>) {
    tokenizer::EncodeOptions options;
    options.parse_special_tokens = false;
    return tokenizer->encode(text, options);
  } else {
    return tokenizer->encode(text);  // Whisper's tokenizer never parses special tokens in text
  }
}

template <class Engine>
std::string EngineModel<Engine>::render_chat(std::span<const tokenizer::ChatMessage> messages,
                                             const tokenizer::ChatTemplateOptions& options) const {
  const auto& model = engine_->executor().model();
  if constexpr (detail::HasOwnChatTemplate<std::decay_t<decltype(model)>>) {
    return model.render_chat(messages, options);
  } else if constexpr (detail::IsWhisperModel<decltype(model)>) {
    (void)messages;
    (void)options;
    throw invalid_argument("model", "model '" + info_.id + "' is a speech recognition model without a chat template");
  } else {
    // Qwen-family checkpoints (the only text family so far) speak ChatML
    // with Qwen3's thinking switch.
    return tokenizer::render_qwen3_chat(messages, options);
  }
}

template <class Engine>
std::string EngineModel<Engine>::token_bytes(TokenId id) const {
  const auto* tokenizer = engine_->executor().model().tokenizer();
  if (!tokenizer) return {};
  if constexpr (detail::HasTokenBytes<std::remove_cvref_t<decltype(*tokenizer)>>)
    return std::string(tokenizer->token_bytes(id));
  else
    return tokenizer->token_text(id);
}

template <class Engine>
const Whisper* EngineModel<Engine>::whisper_model() const noexcept {
  const auto& model = engine_->executor().model();
  if constexpr (detail::IsWhisperModel<decltype(model)>)
    return &model;
  else
    return nullptr;
}

template <class Engine>
const Qwen3Tts* EngineModel<Engine>::qwen3_tts_model() const noexcept {
  const auto& model = engine_->executor().model();
  if constexpr (detail::IsQwen3TtsModel<decltype(model)>)
    return &model;
  else
    return nullptr;
}

template <class Engine>
const SpeechVoices* EngineModel<Engine>::speech_voices() const noexcept {
  return speech_voices_ ? &*speech_voices_ : nullptr;
}

template <class Engine>
Request EngineModel<Engine>::make_speech_request(const SpeechSynthesis& synthesis) const {
  const auto& model = engine_->executor().model();
  if constexpr (detail::IsQwen3TtsModel<decltype(model)>) {
    return qwen3_tts_speech_request(model, synthesis);
  } else {
    return AnyEngine::make_speech_request(synthesis);
  }
}

template <class Engine>
std::size_t EngineModel<Engine>::vocab_size() const noexcept {
  return detail::model_vocab_size(engine_->executor().model());
}

template <class Engine>
ResponseStream EngineModel<Engine>::submit(Request request) {
  std::shared_lock lock(submit_mutex_);
  if (draining_.load(std::memory_order_acquire))
    throw unavailable("model '" + info_.id + "' is shutting down");
  return engine_->generate_streaming(std::move(request));
}

template <class Engine>
std::string EngineModel<Engine>::metrics_text() const {
  return engine_->metrics_text();
}

template <class Engine>
EngineStatus EngineModel<Engine>::status() const {
  const EngineMetrics m = engine_->metrics();
  EngineStatus s;
  s.num_running = m.num_requests_running;
  s.num_pending = m.num_requests_waiting;
  s.num_kv_blocks = m.num_kv_blocks;
  s.num_kv_blocks_used = m.num_kv_blocks_used;
  s.draining = draining_.load(std::memory_order_acquire);
  return s;
}

template <class Engine>
void EngineModel<Engine>::shutdown(std::chrono::steady_clock::time_point deadline) {
  std::lock_guard lock(shutdown_mutex_);
  if (shut_down_) return;
  {
    std::unique_lock submits(submit_mutex_);  // waits out submits in progress
    draining_.store(true, std::memory_order_release);
  }
  using namespace std::chrono_literals;
  while (engine_->has_unfinished_requests() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(5ms);
  if (engine_->abort_all() > 0) {
    // Aborts are applied by the loop at its next step; give it a moment so
    // every stream gets its final chunk before the loop stops.
    const auto grace = std::chrono::steady_clock::now() + 2s;
    while (engine_->has_unfinished_requests() && std::chrono::steady_clock::now() < grace)
      std::this_thread::sleep_for(1ms);
  }
  engine_->stop();
  shut_down_ = true;
}

}  // namespace izwi::server
