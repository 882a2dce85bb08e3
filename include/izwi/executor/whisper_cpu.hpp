#pragma once
// WhisperCpuExecutor: runs Whisper (speech recognition, translation) on CPU
// cores for the engine, many requests per step.
//
//   auto model = izwi::Whisper::load("ggml-base.bin");
//   izwi::WhisperCpuExecutor executor(std::move(model), {.num_threads = 2});
//   izwi::PagedKVCache<> cache(executor.kv_cache_shape(), {.byte_budget = 1ull << 30});
//   izwi::Engine engine(izwi::FcfsScheduler{}, std::move(cache), std::move(executor));
//   auto out = engine.generate(izwi::make_whisper_request(engine.executor().model(), window, {.language = "en"}));
//
// A request is one sequence: audio placeholders (model.audio_positions()),
// then the decoder prompt (models/whisper_request.hpp builds both). The
// scheduler treats the placeholders as prompt tokens, so the encoder's work
// counts against the step's token budget and the cross-attention K/V against
// the cache's blocks, and chunked prefill, preemption and the prefix cache
// apply unchanged. Each step:
//   1. every sequence whose chunk reaches into its audio and whose window is
//      not encoded yet is encoded, all such windows in one batch
//      (Whisper::encode_batch); a window whose placeholders span several
//      chunks keeps its encoder output here until its last chunk
//      (release() drops it when the request ends or is preempted first);
//   2. the chunk's audio positions get their cross-attention K/V
//      (Whisper::store_cross_kv, into the chunk's own cache slots);
//   3. one decoder pass over every decoder token of the step;
//   4. each sampling sequence's logits go through openai-whisper's filters
//      (suppress_blank, special tokens, the checkpoint's suppress lists, the
//      timestamp rules; timestamps are on unless the prompt has
//      <|notimestamps|>), then the Sampler. A language probe (a decoder prompt
//      of <|startoftranscript|> alone) instead picks the most probable
//      language and reports the languages and <|nospeech|> as its logprobs
//      (see make_whisper_language_probe).
//
// Satisfies ExecutorFor<WhisperCpuExecutor, K> for caches in host or unified
// memory, with the optional abilities eos_token_ids (<|endoftext|>),
// make_detokenizer (text tokens' text), max_model_len and release.

#include <cstddef>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "izwi/concepts/executor.hpp"
#include "izwi/concepts/kv_cache.hpp"
#include "izwi/concepts/memory_space.hpp"
#include "izwi/core/step.hpp"
#include "izwi/executor/detail/cpu_ops.hpp"
#include "izwi/executor/sampler.hpp"
#include "izwi/kernels/cpu/thread_pool.hpp"
#include "izwi/models/whisper.hpp"

namespace izwi {

struct WhisperCpuExecutorConfig {
  /// Worker threads, the caller included; 0 uses every hardware thread.
  std::size_t num_threads = 0;
  /// With timestamps, the first token must be a timestamp (openai-whisper).
  /// false decodes as whisper.cpp, which does not force it.
  bool initial_timestamp = true;
  /// Apply the checkpoint's suppress lists (Whisper::generation_config(): an
  /// HF directory's, openai-whisper's defaults for a ggml file). false
  /// decodes as whisper.cpp does without --suppress-nst.
  bool checkpoint_suppress_tokens = true;
};

class WhisperCpuExecutor {
 public:
  using policy_category = executor_tag;
  using execution_space = cpu_execution;
  using model_type = Whisper;

  explicit WhisperCpuExecutor(Whisper model, WhisperCpuExecutorConfig config = {});

  KVCacheShape kv_cache_shape() const { return model_.kv_cache_shape(); }
  std::span<const TokenId> eos_token_ids() const noexcept { return {&eot_, 1}; }
  /// Audio placeholders plus n_text_ctx decoder tokens.
  std::size_t max_model_len() const noexcept { return model_.max_sequence_length(); }
  tokenizer::WhisperDetokenizer make_detokenizer() const { return tokenizer::WhisperDetokenizer(model_.tokenizer()); }
  const Whisper& model() const noexcept { return model_; }
  std::size_t vocab_size() const noexcept { return model_.vocab_size(); }
  std::size_t num_threads() const noexcept { return pool_->size(); }
  /// Windows encoded and kept for a later chunk (tests check none leak).
  std::size_t num_pending_windows() const noexcept { return pending_.size(); }

  /// The engine's hooks when a request ends or is preempted: drop its encoder
  /// output (a resumed request encodes its window again).
  void release(RequestId id) noexcept { pending_.erase(id); }
  void preempted(RequestId id) noexcept { pending_.erase(id); }

  template <KVCachePolicy K>
  void execute(const StepPlan& plan, K& kv, StepResult& result);

  /// The logits of the last step's sampling rows, [rows][vocab], before any
  /// filter (tests compare these with a reference). Kept only when keep_logits(true).
  std::span<const float> last_logits() const noexcept { return kept_logits_; }
  void keep_logits(bool keep) noexcept { keep_logits_ = keep; }

 private:
  template <KVCachePolicy K>
  void store_audio(const StepPlan& plan, K& kv, StepResult& result);
  void encode_windows(const StepPlan& plan, StepResult& result);
  void flatten_decoder_rows(const StepPlan& plan, StepResult& result);
  void sample(const ScheduledSequence& seq, std::span<float> logits, StepResult& result);
  void answer_language_probe(const ScheduledSequence& seq, std::span<const float> logits, StepResult& result);
  bool failed(RequestId id) const noexcept;

  Whisper model_;
  WhisperCpuExecutorConfig config_;
  std::unique_ptr<detail::ThreadPool> pool_;  // the engine moves executors; the pool stays put
  detail::CpuOps ops_;
  Sampler sampler_;
  TokenId eot_;
  std::optional<TokenId> space_;
  /// Encoder outputs of windows whose placeholders span several chunks.
  std::unordered_map<RequestId, std::vector<float>> pending_;
  // Per-step scratch.
  std::vector<const ScheduledSequence*> to_encode_;
  std::vector<float> mels_, encoded_, mel_scratch_;
  std::vector<RequestId> failed_;
  std::vector<TokenId> tokens_;
  std::vector<std::int64_t> positions_, slots_;
  std::vector<std::uint32_t> logit_rows_;
  std::vector<const ScheduledSequence*> sampling_;
  std::vector<detail::CpuOps::attention_sequence> self_, cross_;
  std::vector<float> logits_, kept_logits_;
  bool keep_logits_ = false;
};

}  // namespace izwi

#include "izwi/executor/impl/whisper_cpu.hpp"
#if !defined(IZWI_SEPARATE_COMPILATION)
#include "izwi/executor/impl/whisper_cpu.ipp"
#endif
