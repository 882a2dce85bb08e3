#pragma once
// Qwen3TtsCpuExecutor: runs Qwen3-TTS (text to speech) on CPU cores for the
// engine, many speaking requests per step.
//
//   auto model = izwi::Qwen3Tts::load("Qwen3-TTS-12Hz-0.6B-CustomVoice");
//   izwi::Qwen3TtsCpuExecutor executor(std::move(model), {.num_threads = 2});
//   izwi::PagedKVCache<> cache(executor.kv_cache_shape(), {.byte_budget = 1ull << 30});
//   izwi::Engine engine(izwi::FcfsScheduler{}, std::move(cache), std::move(executor));
//   izwi::Qwen3TtsRequest r{.text_tokens = tokens, .speaker = "ryan"};
//   auto out = engine.generate(izwi::make_qwen3_tts_request(engine.executor().model(), r));
//   // out.audio: 24 kHz mono; streamed chunks carry it window by window
//
// A speech request is one talker sequence in the engine's KV cache (see
// models/qwen3_tts_request.hpp): prompt rows packed into token ids, then one
// token per generated frame, its first code. Each step:
//   1. one talker forward pass over every scheduled row of every request
//      (prompt chunks and decoding frames alike; a frame's input row is the
//      sum of its 16 code embeddings and a text row);
//   2. codebook 0 of every sampling request (control ids suppressed,
//      repetition penalty, EOS held back until min_tokens frames);
//   3. the 15 code-predictor passes, batched across all requests that spoke;
//   4. the codec decoder, batched across the requests whose audio window is
//      ready (SpeechConditioning: first_window_frames, then windows doubling
//      up to window_frames, and whatever is left when the request ends by
//      EOS, max_tokens or the context limit), so audio leaves with the
//      step's token. Its matmuls are batch-invariant, so a request's samples
//      are bit-identical whatever else is decoded with them.
// The executor keeps, per request, the frames' codes (a recomputation after
// preemption rebuilds the talker's rows from them), the codec decoder's
// carried state and the streaming-text rows; release() drops them when the
// request ends. A request's draws all come from its own generator. A request
// that asks for logprobs gets the talker's raw logprobs of each frame's first
// code (and its top ones).
//
// Batch invariance (issue 13: "the same seed gives bit-identical audio
// whatever else is batched"): drawing from the same generator is not enough,
// the logits drawn from must be the same bits too, and the fastest kernels
// round differently by row count (GEMV for one row, register blocks for
// 2..16, GEMM beyond; decode attention split over the context). So the
// talker, its text projection and the code predictor run through
// CpuOps::set_batch_invariant (kernels::cpu::matmul_group_batch_invariant,
// attention with split_decode off): each row's bits depend only on its own
// inputs and its sequence's K/V — not on the other requests of the step,
// their number, the order of sequences, how the token budget cuts a prompt
// into chunks, or a recomputation after preemption. The codec decoder is
// batch-invariant by its own matmuls. Decode steps (up to 16 rows a matmul)
// keep the register-blocked GEMV, a single row included; steps of more rows
// (prompts) give up the GEMM (docs/tts.md, "Batch invariance"). No kernel on these paths
// splits one sum across threads, so the thread count does not change the
// bits either. Tested bit for bit by qwen3_tts_engine_test ("a seeded
// request is bit-identical alone and batched with 1, 3 or 7 others", and the
// code predictor's logits). Qwen3TtsCpuExecutorConfig::batch_invariant turns
// it off, to measure its cost.
//
// Satisfies ExecutorFor<Qwen3TtsCpuExecutor, K> for caches in host or unified
// memory, with the optional abilities eos_token_ids (codec EOS),
// max_model_len, vocab_size (the packed id space), release and preempted.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "izwi/concepts/executor.hpp"
#include "izwi/concepts/kv_cache.hpp"
#include "izwi/concepts/memory_space.hpp"
#include "izwi/core/step.hpp"
#include "izwi/executor/detail/cpu_ops.hpp"
#include "izwi/executor/sampler.hpp"
#include "izwi/kernels/cpu/thread_pool.hpp"
#include "izwi/models/qwen3_tts.hpp"
#include "izwi/models/qwen3_tts_request.hpp"

namespace izwi {

struct Qwen3TtsCpuExecutorConfig {
  /// Worker threads, the caller included; 0 uses every hardware thread.
  std::size_t num_threads = 0;
  /// On (the default, what the stock engines run): every row of the talker
  /// and the code predictor is computed the same way whatever shares its
  /// step, so a seeded request's codes and audio are bit-identical however
  /// it is batched (see the class comment). Off: the row-count-dependent
  /// fastest kernels (the GEMM for prefill, decode attention split over the
  /// context), a request's last bits then depend on the batch; for measuring
  /// what the guarantee costs (izwi-qwen3-tts-bench --batch-variant).
  bool batch_invariant = true;
};

class Qwen3TtsCpuExecutor {
 public:
  using policy_category = executor_tag;
  using execution_space = cpu_execution;
  using model_type = Qwen3Tts;

  explicit Qwen3TtsCpuExecutor(Qwen3Tts model, Qwen3TtsCpuExecutorConfig config = {});

  /// The talker's K/V, f32.
  KVCacheShape kv_cache_shape() const;
  std::span<const TokenId> eos_token_ids() const noexcept { return {&eos_, 1}; }
  /// The talker's context (prompt rows plus frames); 0 when the checkpoint does not say.
  std::size_t max_model_len() const noexcept { return model_->config().talker.max_position_embeddings; }
  /// Ids at or past it are refused at submission (qwen3_tts_token_space).
  std::size_t vocab_size() const noexcept { return qwen3_tts_token_space(model_->config()); }
  const Qwen3Tts& model() const noexcept { return *model_; }
  std::uint32_t sample_rate() const noexcept { return model_->codec().config().output_sample_rate; }
  std::size_t num_threads() const noexcept { return pool_->size(); }
  /// Requests whose codes and codec state are kept (tests check none leak).
  std::size_t num_streams() const noexcept { return streams_.size(); }

  /// The request ended: drop its codes and codec state.
  void release(RequestId id) noexcept { streams_.erase(id); }
  /// Preempted: keep everything; recomputation reads the frames' codes.
  void preempted(RequestId) noexcept {}

  template <KVCachePolicy K>
  void execute(const StepPlan& plan, K& kv, StepResult& result);

 private:
  /// What one request keeps between steps.
  struct Stream {
    std::vector<std::int32_t> codes;  ///< [frames][num_code_groups]
    std::size_t frames_decoded = 0;
    Qwen3TtsCodecState codec;
    std::vector<float> trailing_rows;  ///< text rows of SpeechConditioning::trailing_text, [n][hidden]
    SamplingParams sub_code_sampling;
    std::uint32_t next_window = 2, window = 8;  ///< the next window's frames; the largest
  };
  /// What a sampling request produced this step, committed once the step has no failure left.
  struct Spoken {
    const ScheduledSequence* seq = nullptr;
    Stream* stream = nullptr;
    TokenId token = -1;
    bool ends = false;  ///< EOS, max_tokens or the context limit: decode every frame left
    std::size_t frame_row = 0;
    float logprob = 0.0f;  ///< of `token` under the talker's raw logits, when the request asked for logprobs
    std::size_t top_begin = 0, top_count = 0;  ///< its top logprobs in StepResult::top_logprobs
  };

  Stream& stream_for(const ScheduledSequence& seq);
  void input_rows(const StepPlan& plan, float* x);
  void sample_first_codes(const StepPlan& plan, StepResult& result);
  void decode_audio(StepResult& result);

  std::unique_ptr<const Qwen3Tts> model_;  // compute_ points at it; it stays put when the executor moves
  std::unique_ptr<detail::ThreadPool> pool_;
  detail::Qwen3TtsCompute compute_;
  Sampler sampler_;
  TokenId eos_;
  std::unordered_map<RequestId, Stream> streams_;
  // Per-step scratch.
  std::vector<std::int64_t> positions_;
  std::vector<std::uint32_t> logit_rows_;
  std::vector<detail::CpuOps::attention_sequence> sequences_;
  std::vector<TokenId> texts_;
  std::vector<std::size_t> text_targets_;
  std::vector<std::pair<std::size_t, const float*>> frame_texts_;  // generated rows and the text row they add
  std::vector<float> text_out_, hidden_, logits_;
  std::vector<Spoken> spoken_;
  std::vector<std::int32_t> frames_;
  std::vector<detail::Qwen3TtsFrameJob> jobs_;
  std::vector<std::vector<float>> pcm_;
  std::vector<Qwen3TtsCodecStream> windows_;
  std::vector<std::size_t> window_of_;  // spoken_ index -> windows_ index (-1: none this step)
};

}  // namespace izwi

#include "izwi/executor/impl/qwen3_tts_cpu.hpp"
#if !defined(IZWI_SEPARATE_COMPILATION)
#include "izwi/executor/impl/qwen3_tts_cpu.ipp"
#endif
