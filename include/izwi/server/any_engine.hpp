#pragma once
// AnyEngine: the one virtual boundary of izwi.
//
// An Engine<Scheduler, KVCache, Executor> is a compile-time composition; a
// server that loads models chosen at run time needs one type to hold them
// all. AnyEngine is that type: an abstract model-serving handle with a
// handful of coarse calls (submit a request, render a chat, read metrics,
// shut down), each made once per HTTP request, never per token. The engine's
// step loop behind it stays free of virtual calls.
//
// EngineModel<E> adapts an engine E (with a detokenizing executor whose
// model has a tokenizer: CpuExecutor<Qwen3>, or WhisperCpuExecutor, whose
// model it also hands out as whisper_model(), or a Qwen3-TTS executor, whose
// model it hands out as qwen3_tts_model() and whose speech requests it
// builds: see izwi/server/qwen3_tts_speech.hpp) and runs E's loop on its own
// thread for the handle's lifetime.

#include <atomic>
#include <optional>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "izwi/core/error.hpp"
#include "izwi/core/ids.hpp"
#include "izwi/core/request.hpp"
#include "izwi/engine/stream.hpp"
#include "izwi/tokenizer/chat_template.hpp"

namespace izwi {
class Whisper;
class Qwen3Tts;
}

namespace izwi::server {

/// What /v1/models and the admin views say about a loaded model.
struct ModelInfo {
  /// The name clients put in "model".
  std::string id;
  /// Where it was loaded from (admin views only; never in client errors).
  std::filesystem::path path;
  /// Unix seconds when it was loaded (OpenAI's "created").
  std::int64_t created = 0;
  std::string owned_by = "izwi";
  /// The tasks it serves (chat covers /v1/chat/completions and /v1/completions).
  std::vector<Task> tasks;
  /// Prompt plus output tokens.
  std::size_t max_model_len = 0;
  /// Bytes of the longest token text in the vocabulary (0: unknown). A prompt
  /// text longer than max_model_len times this cannot fit, whatever its
  /// tokens, so the server refuses it before tokenizing.
  std::size_t max_token_bytes = 0;
  /// Random weights (the README's demo checkpoint): said in logs and listings.
  bool untrained = false;
  /// Architecture and size in words, for logs.
  std::string description;
  /// Where its engine runs: "cpu", or "opencl:P:D (platform / device (driver ...))"
  /// (izwi-server --device); /v1/models says it.
  std::string device = "cpu";
};

/// What a speech-synthesis model offers /v1/audio/speech and /v1/audio/voices.
struct SpeechVoices {
  /// Its named speakers (lower case; CustomVoice models), in the model's order.
  std::vector<std::string> speakers;
  /// Languages it takes, lower case ("english"); "auto" (detect) is always accepted too.
  std::vector<std::string> languages;
  /// "custom_voice", "voice_design" or "base" (Qwen3-TTS's tts_model_type).
  std::string kind;
  /// Why this model cannot clone a voice from reference audio; empty when it can.
  std::string cloning_unavailable;
  /// The rate of the audio its requests produce.
  std::uint32_t sample_rate = 24000;
};

/// One speech request as the server hands it to the model, checked against
/// SpeechVoices (the voice resolved to one of its speakers).
struct SpeechSynthesis {
  std::string text;
  /// One of SpeechVoices::speakers, or empty (no named speaker).
  std::string speaker;
  /// VoiceDesign's voice description or a CustomVoice style instruction; empty: none.
  std::string instructions;
  std::string language = "auto";
  std::uint64_t seed = 0;
  /// Unset: the model's defaults.
  std::optional<float> temperature;
  std::optional<std::int32_t> top_k;
  /// Most frames to generate; unset: the model's limit.
  std::optional<std::uint32_t> max_frames;
  /// Voice cloning: the reference audio (mono, at reference_sample_rate) and its transcript.
  std::shared_ptr<const std::vector<float>> reference_audio;
  std::uint32_t reference_sample_rate = 24000;
  std::string reference_text;
};

/// A consistent view of one engine's load, for admin views and tests.
struct EngineStatus {
  std::size_t num_running = 0;
  std::size_t num_pending = 0;
  std::size_t num_kv_blocks = 0;
  std::size_t num_kv_blocks_used = 0;
  bool draining = false;
};

class AnyEngine {
 public:
  virtual ~AnyEngine() = default;

  virtual const ModelInfo& info() const noexcept = 0;
  bool serves(Task task) const noexcept {
    for (Task t : info().tasks)
      if (t == task) return true;
    return false;
  }

  // --- text ---
  /// The model's tokenizer. Throws izwi::invalid_argument when it has none.
  virtual std::vector<TokenId> encode(std::string_view text) const = 0;
  /// As encode(), but text that spells a special token ("<|im_end|>") is
  /// encoded as plain text (Hugging Face's split_special_tokens). The default
  /// refuses (izwi::invalid_argument) for models that cannot.
  virtual std::vector<TokenId> encode_as_text(std::string_view text) const {
    (void)text;
    throw invalid_argument("special_tokens_as_text", "model '" + info().id +
                                                         "' cannot encode special tokens as plain text");
  }
  /// The model's chat template applied to messages.
  virtual std::string render_chat(std::span<const tokenizer::ChatMessage> messages,
                                  const tokenizer::ChatTemplateOptions& options) const = 0;
  /// The bytes one token stands for (logprobs' "token" and "bytes"); may be
  /// part of a UTF-8 sequence.
  virtual std::string token_bytes(TokenId id) const = 0;
  virtual std::size_t vocab_size() const noexcept = 0;

  // --- speech recognition ---
  /// The Whisper model behind a transcription engine (its tokenizer, special
  /// ids and shape, to build window requests with make_whisper_request);
  /// nullptr for other models.
  virtual const Whisper* whisper_model() const noexcept { return nullptr; }

  // --- speech synthesis ---
  /// The Qwen3-TTS model behind a speech engine (its config, tokenizer,
  /// codec); nullptr for other models.
  virtual const Qwen3Tts* qwen3_tts_model() const noexcept { return nullptr; }
  /// What a speech model offers; nullptr for models that do not speak.
  virtual const SpeechVoices* speech_voices() const noexcept { return nullptr; }
  /// The engine request that speaks `synthesis` (Task::tts; its stream's
  /// chunks carry audio). Throws izwi::invalid_argument naming the field
  /// (an unknown speaker or language, text the model cannot read, cloning a
  /// model cannot do); the default refuses every request.
  virtual Request make_speech_request(const SpeechSynthesis& synthesis) const {
    (void)synthesis;
    throw invalid_argument("model", "model '" + info().id + "' does not synthesize speech");
  }

  // --- serving ---
  /// Queues a request; its chunks arrive on the returned stream (see
  /// ResponseStream::on_ready for event-loop consumers). Throws
  /// izwi::invalid_argument for a request the engine refuses (→ 400) and
  /// izwi::unavailable when the waiting queue is full or the engine is
  /// draining (→ 429 / 503).
  virtual ResponseStream submit(Request request) = 0;
  /// The engine's metrics in Prometheus text, labelled with the model id.
  virtual std::string metrics_text() const = 0;
  virtual EngineStatus status() const = 0;
  /// Graceful stop: refuses new requests, lets running ones finish until
  /// `deadline`, aborts what is left, then stops the loop. Blocks until done;
  /// safe to call twice.
  virtual void shutdown(std::chrono::steady_clock::time_point deadline) = 0;
};

/// Adapts an engine. Engine's executor must detokenize and expose
/// executor().model().tokenizer() (a tokenizer::BpeTokenizer*).
template <class Engine>
class EngineModel final : public AnyEngine {
 public:
  /// Takes the engine and starts its loop.
  EngineModel(std::unique_ptr<Engine> engine, ModelInfo info);
  ~EngineModel() override;

  const ModelInfo& info() const noexcept override { return info_; }
  std::vector<TokenId> encode(std::string_view text) const override;
  std::vector<TokenId> encode_as_text(std::string_view text) const override;
  std::string render_chat(std::span<const tokenizer::ChatMessage> messages,
                          const tokenizer::ChatTemplateOptions& options) const override;
  std::string token_bytes(TokenId id) const override;
  std::size_t vocab_size() const noexcept override;
  const Whisper* whisper_model() const noexcept override;
  const Qwen3Tts* qwen3_tts_model() const noexcept override;
  const SpeechVoices* speech_voices() const noexcept override;
  Request make_speech_request(const SpeechSynthesis& synthesis) const override;
  ResponseStream submit(Request request) override;
  std::string metrics_text() const override;
  EngineStatus status() const override;
  void shutdown(std::chrono::steady_clock::time_point deadline) override;

  Engine& engine() noexcept { return *engine_; }

 private:
  std::unique_ptr<Engine> engine_;
  ModelInfo info_;
  std::optional<SpeechVoices> speech_voices_;  // speech models: read from the model once
  std::atomic<bool> draining_{false};
  // Submits hold it shared; shutdown takes it exclusively to start draining,
  // so a request is either refused or queued before shutdown looks for
  // unfinished requests (and is finished or aborted), never queued after.
  std::shared_mutex submit_mutex_;
  std::mutex shutdown_mutex_;
  bool shut_down_ = false;
};

}  // namespace izwi::server

#include "izwi/server/impl/any_engine.hpp"
