#pragma once
// The arithmetic of one Qwen3-TTS step on the CPU, shared by the engine's
// Qwen3TtsCpuExecutor and the model-side Qwen3TtsGenerator: input rows (text
// projection, codec embeddings, a frame's 16 embeddings), the talker's layers
// over any KV cache, and the code predictor batched across frames. Who owns
// the talker's KV cache and the per-request state is the caller's business.
//
// Scratch buffers of the talker's CpuOps: 0 the input rows, 1..7 the layers,
// 8 the last rows, 11..12 the text projection.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "izwi/core/error.hpp"
#include "izwi/core/random.hpp"
#include "izwi/core/sampling_params.hpp"
#include "izwi/executor/detail/cpu_ops.hpp"
#include "izwi/executor/sampler.hpp"
#include "izwi/kernels/cpu/thread_pool.hpp"
#include "izwi/kv_cache/paged.hpp"
#include "izwi/models/forward_batch.hpp"
#include "izwi/models/qwen3.hpp"
#include "izwi/models/qwen3_tts_config.hpp"

namespace izwi {
class Qwen3Tts;
}

namespace izwi::detail {

/// One frame the code predictor completes: frame[0] (codebook 0) is set,
/// frame[1..G) are filled, each drawn with `sampling` from `rng`.
struct Qwen3TtsFrameJob {
  const float* hidden = nullptr;  ///< the talker's last hidden state, after its final norm
  std::int32_t* frame = nullptr;  ///< [num_code_groups]
  const SamplingParams* sampling = nullptr;
  SequenceRng* rng = nullptr;
  /// Where set, each codebook's logits as the predictor computed them (before
  /// sampling), [G-1][predictor vocab]: what the batch-invariance tests
  /// compare bit for bit, since a sampled code hides a last-bit difference.
  float* logits = nullptr;
};

/// Defined after Qwen3Tts (models/impl/qwen3_tts_compute.hpp, .ipp); holds a
/// pointer to the model, which must stay put while this lives.
class Qwen3TtsCompute {
 public:
  /// `batch_invariant`: every row computed the same way whatever shares its
  /// step (CpuOps::set_batch_invariant), so a request's logits, hence its
  /// seeded draws, do not depend on the batch; off only to measure its cost.
  Qwen3TtsCompute(const Qwen3Tts& model, ThreadPool& pool, bool batch_invariant = true);

  const Qwen3Tts& model() const noexcept { return *model_; }
  CpuOps& ops() noexcept { return ops_; }
  std::size_t hidden() const noexcept;
  /// text_projection(tts_pad): the text half of every frame past the text.
  std::span<const float> pad_row() const noexcept { return pad_row_; }

  /// out[n][hidden] = fc2(SiLU(fc1(text_embedding[ids]) + b1)) + b2.
  void text_rows(std::span<const TokenId> ids, float* out);
  /// out += the talker's codec_embedding[code].
  void add_codec_row(TokenId code, float* out);
  /// out += Σ over codebooks of the frame's code embeddings (the talker's
  /// table for codebook 0, the predictor's for the others).
  void add_frame_row(std::span<const std::int32_t> frame, float* out);

  /// The talker's layers over x ([rows][hidden]), then, for each of
  /// batch.logit_rows, its final-normed hidden state into hidden_out and its
  /// codec logits into logits_out ([n][codec vocab]).
  template <class KV>
  void talker(float* x, const ForwardBatch& batch, std::span<const CpuOps::attention_sequence> sequences, KV& kv,
              DType kv_dtype, float* hidden_out, float* logits_out);

  /// Codebooks 1..G-1 of every job's frame: one predictor pass per codebook,
  /// every job in each pass, in a KV cache of the predictor's own. Throws
  /// izwi::error when a draw fails (non-finite logits).
  void predict(std::span<const Qwen3TtsFrameJob> jobs);

  /// Codebook 0 from a row of the talker's logits (modified in place):
  /// control ids other than EOS suppressed, then the sampler (repetition
  /// penalty over `previous`, EOS masked until p.min_tokens frames exist).
  static SampledToken sample_first_code(const Qwen3TtsConfig& c, std::span<float> logits,
                                        std::span<const TokenId> previous, const SamplingParams& p,
                                        SequenceRng& rng, Sampler& sampler,
                                        std::vector<TokenLogprob>* top_logprobs = nullptr) {
    for (std::size_t id = c.first_control_id(); id < logits.size(); ++id)
      if (static_cast<TokenId>(id) != c.codec_eos_id) logits[id] = -std::numeric_limits<float>::infinity();
    const TokenId eos[] = {c.codec_eos_id};
    return sampler.sample(logits, {&p, {}, previous, eos, &rng}, top_logprobs);
  }

 private:
  void ensure_predictor_cache(std::size_t sequences);

  const Qwen3Tts* model_;
  CpuOps ops_;            // the talker's (and the text projection's)
  CpuOps predictor_ops_;  // its own scratch and rotary table (another head_dim or θ)
  Sampler sampler_;
  std::vector<float> pad_row_;
  std::unique_ptr<PagedKVCache<>> predictor_kv_;
  std::size_t predictor_capacity_ = 0;
  // Per-call scratch.
  std::vector<float> input_, logits_, embedding_;
  std::vector<TokenId> placeholder_;
  std::vector<std::int64_t> positions_, slots_;
  std::vector<std::uint32_t> last_rows_;
  std::vector<CpuOps::attention_sequence> sequences_;
};

}  // namespace izwi::detail
