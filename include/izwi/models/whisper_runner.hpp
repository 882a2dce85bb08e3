#pragma once
// WhisperRunner: one Whisper request on the CPU, outside the engine: the
// encoder of one 30-s window, its cross-attention K/V, and decoder steps over
// a paged KV cache of its own, laid out as the engine lays out a request
// (Whisper::audio_positions() of cross-attention K/V, then the decoder
// tokens). Tools and the reference comparisons use it; the engine's
// WhisperCpuExecutor drives Whisper::encode_batch / store_cross_kv / forward
// for many requests per step and is tested equal to it.
//
//   izwi::WhisperRunner run(model, {.num_threads = 2});
//   run.start(mel);                                   // [n_mels][3000], WhisperLogMel
//   auto logits = run.feed(model.tokenizer()->sot_sequence("en", false, false));
//   auto text = izwi::whisper_greedy_decode(run, {.language = "en"});

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "izwi/executor/detail/cpu_ops.hpp"
#include "izwi/kernels/cpu/thread_pool.hpp"
#include "izwi/kv_cache/paged.hpp"
#include "izwi/models/whisper.hpp"

namespace izwi {

struct WhisperRunnerOptions {
  std::size_t num_threads = 0;  ///< 0: all cores
  /// KV-cache memory (the audio's cross-attention K/V and the decoder's
  /// self-attention); 0: enough for one request of the model's longest
  /// sequence (tiny in f32: 24 MB; large-v3 in f16: 325 MB).
  std::size_t kv_cache_bytes = 0;
};

class WhisperRunner {
 public:
  explicit WhisperRunner(const Whisper& model, WhisperRunnerOptions options = {});
  ~WhisperRunner();

  const Whisper& model() const noexcept { return *model_; }

  /// Runs the encoder on one window (mel [n_mels][2 × n_audio_ctx]), computes
  /// the cross-attention K/V and starts an empty decoder sequence.
  void start(std::span<const float> mel);
  /// The last window's encoder output, [n_audio_ctx][d_model].
  std::span<const float> encoder_output() const noexcept { return encoder_out_; }

  /// Appends `tokens` to the sequence and returns the logits of the last one
  /// ([vocab]), or of every one when `all_rows` ([tokens][vocab]).
  std::span<const float> feed(std::span<const TokenId> tokens, bool all_rows = false);
  /// A fresh decoder sequence (restart()) fed `tokens` while taking the
  /// cross-attention probabilities of the alignment `heads` over the first
  /// `audio_frames` encoder positions (Whisper::alignment_weights):
  /// `weights` becomes [heads][tokens][audio_frames]. Returns every token's
  /// logits ([tokens][vocab]). Word timestamps (whisper_alignment.hpp) use it.
  std::span<const float> feed_with_alignment(std::span<const TokenId> tokens,
                                             std::span<const std::pair<std::uint32_t, std::uint32_t>> heads,
                                             std::size_t audio_frames, std::vector<float>& weights);
  /// Decoder tokens fed since start() or restart().
  std::span<const TokenId> tokens() const noexcept {
    return std::span<const TokenId>(sequence_tokens_).subspan(model_->audio_positions());
  }
  /// Drops the decoder tokens (a fresh sequence whose cross-attention K/V are
  /// stored again from the kept encoder output).
  void restart();

 private:
  /// feed()'s checks, slots and batch; `run(batch, self, cross)` does the pass.
  template <class Run>
  std::span<const float> feed_tokens(std::span<const TokenId> tokens, bool all_rows, Run&& run);

  const Whisper* model_;
  detail::ThreadPool pool_;
  detail::CpuOps ops_;
  PagedKVCache<> kv_;
  RequestId sequence_ = 1;
  std::vector<float> encoder_out_;
  std::vector<TokenId> sequence_tokens_;  ///< audio placeholders, then decoder tokens
  std::vector<float> logits_;
};

/// How whisper_greedy_decode() picks tokens.
struct WhisperGreedyOptions {
  std::string language = "en";  ///< ignored by .en models
  bool translate = false;
  bool timestamps = false;
  /// openai-whisper's decoding rules: suppress_blank (no " " or <|endoftext|>
  /// first), suppress_tokens (every special token but <|endoftext|>, and the
  /// timestamp tokens unless `timestamps`), and the timestamp rules (pairs,
  /// non-decreasing, first at most 1 s, text-then-timestamp when their
  /// probability wins). false: plain argmax over the vocabulary.
  bool apply_rules = true;
  /// With timestamps: the first token must be a timestamp (openai-whisper).
  /// whisper.cpp does not force it (it takes the segment start from the most
  /// probable timestamp instead); false decodes as whisper.cpp does.
  bool initial_timestamp = true;
  /// Also never generate the checkpoint's suppress_tokens and, first, its
  /// begin_suppress_tokens (Whisper::generation_config(): an HF directory's
  /// generation_config.json, openai-whisper's defaults for a ggml file — the
  /// non-speech symbols). false decodes as whisper.cpp does without --suppress-nst.
  bool checkpoint_suppress_tokens = true;
  std::size_t max_tokens = 224;
};

struct WhisperGreedyResult {
  std::vector<TokenId> prompt;
  std::vector<TokenId> tokens;  ///< generated, <|endoftext|> excluded
  std::string text;             ///< text tokens only
  bool reached_end = false;     ///< <|endoftext|> was produced
};

/// Greedy decoding of the window `runner` has encoded (runner.start() first);
/// restarts the runner's decoder sequence.
WhisperGreedyResult whisper_greedy_decode(WhisperRunner& runner, const WhisperGreedyOptions& options = {});

/// Detected language: the most probable language token after
/// <|startoftranscript|>, with its probability among the languages.
struct WhisperLanguage {
  std::string code;
  TokenId token = 0;
  double probability = 0;
};
WhisperLanguage whisper_detect_language(WhisperRunner& runner);

}  // namespace izwi

#include "izwi/models/impl/whisper_runner.hpp"
