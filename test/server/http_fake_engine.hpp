#pragma once
// A served model for the HTTP tests: the engine tests' toy model
// (test/engine/toy_model.hpp) behind AnyEngine, with a text "tokenizer" of
// one token per byte and an optional delay per engine step, so a test can
// hold a stream open long enough to hang up in the middle of it.

#include <algorithm>
#include <chrono>
#include <optional>
#include <memory>
#include <shared_mutex>
#include <string>
#include <thread>

#include "engine/engine_fixture.hpp"
#include "izwi/server/any_engine.hpp"

namespace izwi::testing {

/// ToyExecutor, sleeping `delay` before each step.
class SlowToyExecutor : public ToyExecutor {
 public:
  SlowToyExecutor(ToyModelConfig config, std::chrono::microseconds delay)
      : ToyExecutor(std::move(config)), delay_(delay) {}

  template <KVCachePolicy K>
  void execute(const StepPlan& plan, K& kv, StepResult& result) {
    if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
    ToyExecutor::execute(plan, kv, result);
  }

 private:
  std::chrono::microseconds delay_;
};

struct FakeEngineOptions {
  std::string id = "toy";
  std::chrono::microseconds step_delay{0};
  std::size_t num_blocks = 4096;  // block size 4: 16384 tokens
  std::size_t max_model_len = 0;
  std::size_t max_waiting_requests = 0;
  std::size_t max_num_seqs = 128;
  std::vector<Task> tasks{Task::chat};
  /// Fault injection (ToyModelConfig): a prompt holding this byte makes the
  /// forward pass throw / gives NaN logits.
  std::optional<TokenId> throw_token;
  std::optional<TokenId> nan_token;
  /// ModelInfo::max_token_bytes (0: unknown).
  std::size_t max_token_bytes = 0;
  /// Task::tts in `tasks`: the speech model it claims to be. Each generated
  /// token is one frame of 1920 samples at 24 kHz whose level is token/1000.
  server::SpeechVoices speech{{"vivian", "ryan"}, {"english", "chinese"}, "custom_voice",
                              "voice cloning needs a Base model; this one is 'custom_voice'", 24000};
  /// Frames a speech request generates when it names no max_tokens.
  std::uint32_t speech_frames = 12;
};

class FakeEngine final : public server::AnyEngine {
 public:
  using EngineType = Engine<FcfsScheduler, ToyKV, SlowToyExecutor>;

  explicit FakeEngine(FakeEngineOptions options = {}) {
    ToyModelConfig model;
    model.max_model_len = options.max_model_len;
    model.report_vocab_size = true;  // ids past vocab_size() are refused by the engine, as EngineModel's are
    model.throw_token = options.throw_token;
    model.nan_token = options.nan_token;
    model.audio_samples_per_token = 1920;
    model.audio_sample_rate = options.speech.sample_rate;
    SlowToyExecutor executor(model, options.step_delay);
    ToyKV kv(executor.kv_cache_shape(), {.num_blocks = options.num_blocks});
    SchedulerConfig scheduler;
    scheduler.max_num_seqs = options.max_num_seqs;
    EngineConfig config;
    config.model_name = options.id;
    config.max_waiting_requests = options.max_waiting_requests;
    engine_ = std::make_unique<EngineType>(FcfsScheduler(scheduler), std::move(kv), std::move(executor), config);
    info_.id = options.id;
    info_.tasks = options.tasks;
    info_.created = 1700000000;
    info_.max_model_len = options.max_model_len;
    info_.max_token_bytes = options.max_token_bytes;
    info_.description = "toy model";
    speech_ = options.speech;
    speech_frames_ = options.speech_frames;
    engine_->run();
  }
  ~FakeEngine() override { shutdown(std::chrono::steady_clock::now()); }

  const server::ModelInfo& info() const noexcept override { return info_; }
  /// One token per byte, except that "<|im_end|>" is the special token 999.
  std::vector<TokenId> encode(std::string_view text) const override {
    std::vector<TokenId> out;
    for (std::size_t i = 0; i < text.size(); ++i) {
      if (text.substr(i, 10) == "<|im_end|>") {
        out.push_back(999);
        i += 9;
      } else {
        out.push_back(static_cast<TokenId>(static_cast<unsigned char>(text[i])));
      }
    }
    return out;
  }
  /// One token per byte: "<|im_end|>" is ten tokens of text.
  std::vector<TokenId> encode_as_text(std::string_view text) const override {
    std::vector<TokenId> out;
    for (unsigned char c : text) out.push_back(static_cast<TokenId>(c));
    return out;
  }
  std::string render_chat(std::span<const tokenizer::ChatMessage> messages,
                          const tokenizer::ChatTemplateOptions& options) const override {
    if (messages.empty()) throw invalid_argument("messages", "messages must not be empty");
    std::string out;
    for (const auto& m : messages) out += m.role + ": " + m.content + "\n";
    if (options.add_generation_prompt) out += "assistant: ";
    return out;
  }
  std::string token_bytes(TokenId id) const override { return std::string(1, static_cast<char>('a' + id % 26)); }
  std::size_t vocab_size() const noexcept override { return 1000; }
  const server::SpeechVoices* speech_voices() const noexcept override { return serves(Task::tts) ? &speech_ : nullptr; }
  /// One prompt token per byte of the text, the speaker's name and the
  /// instructions; max_frames (or speech_frames) frames. Unknown speakers,
  /// languages and cloning are refused as a real model refuses them.
  Request make_speech_request(const server::SpeechSynthesis& s) const override {
    if (s.reference_audio) throw invalid_argument("reference_audio", speech_.cloning_unavailable);
    if (s.language != "auto" &&
        std::find(speech_.languages.begin(), speech_.languages.end(), s.language) == speech_.languages.end())
      throw invalid_argument("language", "unknown language '" + s.language + "'");
    Request r;
    r.task = Task::tts;
    r.prompt_tokens = encode_as_text(s.speaker + "|" + s.instructions + "|" + s.text);
    r.voice = s.speaker;
    r.sampling.seed = s.seed;
    r.sampling.max_tokens = s.max_frames.value_or(speech_frames_);
    r.sampling.min_tokens = *r.sampling.max_tokens;
    return r;
  }
  ResponseStream submit(Request request) override {
    std::shared_lock lock(submit_mutex_);  // as EngineModel: never queued after shutdown looked
    if (draining_) throw unavailable("model '" + info_.id + "' is shutting down");
    return engine_->generate_streaming(std::move(request));
  }
  std::string metrics_text() const override { return engine_->metrics_text(); }
  server::EngineStatus status() const override {
    const EngineMetrics m = engine_->metrics();
    return {m.num_requests_running, m.num_requests_waiting, m.num_kv_blocks, m.num_kv_blocks_used, draining_.load()};
  }
  void shutdown(std::chrono::steady_clock::time_point deadline) override {
    std::lock_guard lock(mutex_);
    if (shut_down_) return;
    {
      std::unique_lock submits(submit_mutex_);
      draining_ = true;
    }
    while (engine_->has_unfinished_requests() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (engine_->abort_all() > 0) {
      const auto grace = std::chrono::steady_clock::now() + std::chrono::seconds(2);
      while (engine_->has_unfinished_requests() && std::chrono::steady_clock::now() < grace)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    engine_->stop();
    shut_down_ = true;
  }

 private:
  std::unique_ptr<EngineType> engine_;
  server::ModelInfo info_;
  server::SpeechVoices speech_;
  std::uint32_t speech_frames_ = 12;
  std::atomic<bool> draining_{false};
  std::shared_mutex submit_mutex_;
  std::mutex mutex_;
  bool shut_down_ = false;
};

}  // namespace izwi::testing
