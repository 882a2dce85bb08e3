#pragma once
// Qwen3TtsCompute's bodies (after Qwen3Tts is complete), but talker<KV>
// (impl/qwen3_tts_compute.hpp).
// Inline in header-only builds; compiled once, in <izwi/src.hpp>, under
// IZWI_SEPARATE_COMPILATION (see izwi/config.hpp).

#include "izwi/config.hpp"
#include "izwi/models/qwen3_tts.hpp"

#include <numeric>

namespace izwi::detail {

IZWI_DECL Qwen3TtsCompute::Qwen3TtsCompute(const Qwen3Tts& model, ThreadPool& pool, bool batch_invariant)
    : model_(&model), ops_(pool), predictor_ops_(pool) {
  // A seeded request's codes must not depend on what else is batched (issue
  // 13): every row of the talker, the text projection and the predictor is
  // computed the same way whatever shares its step.
  ops_.set_batch_invariant(batch_invariant);
  predictor_ops_.set_batch_invariant(batch_invariant);
  const TokenId pad = model.config().tts_pad_id;
  pad_row_.resize(model.config().talker.hidden_size);
  text_rows(std::span(&pad, 1), pad_row_.data());
}

IZWI_DECL std::size_t Qwen3TtsCompute::hidden() const noexcept { return model_->config().talker.hidden_size; }

IZWI_DECL void Qwen3TtsCompute::text_rows(std::span<const TokenId> ids, float* out) {
  const Qwen3TtsTalkerWeights& w = model_->talker();
  const std::size_t n = ids.size(), th = model_->config().text_hidden_size, h = hidden();
  if (n == 0) return;
  if (w.folded_text_embedding) {  // llama.cpp's GGUF: the projection is in the table
    ops_.embed(*w.folded_text_embedding, ids, out);
    return;
  }
  float* e = ops_.buffer(11, n * th);
  float* mid = ops_.buffer(12, n * th);
  ops_.embed(w.text_embedding, ids, e);
  ops_.matmul(e, n, w.text_fc1, mid);
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t i = 0; i < th; ++i) {
      const float v = mid[r * th + i] + w.text_fc1_bias[i];
      mid[r * th + i] = v / (1.0f + std::exp(-v));
    }
  ops_.matmul(mid, n, w.text_fc2, out);
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t i = 0; i < h; ++i) out[r * h + i] += w.text_fc2_bias[i];
}

IZWI_DECL void Qwen3TtsCompute::add_codec_row(TokenId code, float* out) {
  const std::size_t h = hidden();
  embedding_.resize(h);
  ops_.embed(model_->talker().codec_embedding, std::span(&code, 1), embedding_.data());
  for (std::size_t i = 0; i < h; ++i) out[i] += embedding_[i];
}

IZWI_DECL void Qwen3TtsCompute::add_frame_row(std::span<const std::int32_t> frame, float* out) {
  const std::size_t h = hidden();
  embedding_.resize(h);
  for (std::size_t g = 0; g < frame.size(); ++g) {
    const TokenId code = frame[g];
    const auto& table = g == 0 ? model_->talker().codec_embedding : model_->predictor().codec_embeddings[g - 1];
    ops_.embed(table, std::span(&code, 1), embedding_.data());
    for (std::size_t i = 0; i < h; ++i) out[i] += embedding_[i];
  }
}

/// The predictor's cache holds every job's frame at once: G + 1 positions each.
IZWI_DECL void Qwen3TtsCompute::ensure_predictor_cache(std::size_t sequences) {
  if (predictor_kv_ && predictor_capacity_ >= sequences) return;
  const Qwen3TtsConfig& c = model_->config();
  predictor_capacity_ = std::max(sequences, 2 * predictor_capacity_);
  PagedKVCacheConfig config;
  config.num_blocks = predictor_capacity_ * ((c.num_code_groups + 16) / 16) + 1;
  config.enable_prefix_caching = false;
  predictor_kv_ = std::make_unique<PagedKVCache<>>(
      KVCacheShape{c.predictor.num_layers, c.predictor.num_kv_heads, c.predictor.head_dim, DType::f32}, config);
}

IZWI_DECL void Qwen3TtsCompute::predict(std::span<const Qwen3TtsFrameJob> jobs) {
  const Qwen3TtsConfig& c = model_->config();
  const Qwen3TtsPredictorWeights& w = model_->predictor();
  const std::size_t n = jobs.size(), th = c.talker.hidden_size, ph = c.predictor.hidden_size;
  if (n == 0) return;
  ensure_predictor_cache(n);
  PagedKVCache<>& kv = *predictor_kv_;
  placeholder_.assign(c.num_code_groups + 1, 0);
  logits_.resize(n * c.predictor.vocab_size);
  struct FreeAll {  // whatever happens, the next call finds the cache empty
    PagedKVCache<>& kv;
    std::size_t n;
    ~FreeAll() {
      for (std::size_t i = 0; i < n; ++i) kv.free(i + 1);
    }
  } free_all{kv, n};
  // Sequence i is request i + 1 of this cache; every pass adds 2 rows (the
  // first: hidden state and codebook 0) or 1 row (codebook g) to each.
  for (std::uint32_t g = 0; g + 1 < c.num_code_groups; ++g) {
    const std::size_t rows_each = g == 0 ? 2 : 1, rows = n * rows_each, computed = g == 0 ? 0 : g + 1;
    input_.assign(rows * th, 0.0f);
    positions_.clear(), slots_.clear(), last_rows_.clear(), sequences_.clear();
    for (std::size_t i = 0; i < n; ++i) {
      float* in = input_.data() + i * rows_each * th;
      if (g == 0) {
        std::copy_n(jobs[i].hidden, th, in);
        const TokenId c0 = jobs[i].frame[0];
        predictor_ops_.embed(model_->talker().codec_embedding, std::span(&c0, 1), in + th);
      } else {
        const TokenId code = jobs[i].frame[g];
        predictor_ops_.embed(w.codec_embeddings[g - 1], std::span(&code, 1), in);
      }
      const RequestId id = i + 1;
      if (!kv.allocate_slots(SequenceView{id, std::span<const TokenId>(placeholder_).first(computed + rows_each)},
                             computed, rows_each))
        throw error("Qwen3-TTS code predictor: its KV cache has no room for frame " + std::to_string(i));
      const auto table = kv.block_table(id);
      sequences_.push_back({computed, rows_each, table, positions_.size()});
      for (std::size_t p = computed; p < computed + rows_each; ++p) {
        positions_.push_back(static_cast<std::int64_t>(p));
        slots_.push_back(static_cast<std::int64_t>(table[p / kv.block_size()] * kv.block_size() + p % kv.block_size()));
      }
      last_rows_.push_back(static_cast<std::uint32_t>(positions_.size() - 1));
    }
    float* x = predictor_ops_.buffer(0, rows * ph);
    if (w.projection) {
      predictor_ops_.matmul(input_.data(), rows, *w.projection, x);
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t i = 0; i < ph; ++i) x[r * ph + i] += w.projection_bias[i];
    } else {
      std::copy(input_.begin(), input_.end(), x);
    }
    const ForwardBatch batch{{}, positions_, slots_, last_rows_};
    qwen3_decoder_layers(predictor_ops_, c.predictor, std::span<const Qwen3LayerWeights>(w.layers), DType::f32, batch,
                         std::span<const CpuOps::attention_sequence>(sequences_), kv, x);
    float* last = predictor_ops_.buffer(8, n * ph);
    predictor_ops_.gather_rows(x, ph, last_rows_, last);
    predictor_ops_.rms_norm(last, n, ph, w.final_norm.data(), static_cast<float>(c.predictor.rms_norm_eps), last);
    predictor_ops_.matmul(last, n, w.heads[g], logits_.data());
    for (std::size_t i = 0; i < n; ++i) {
      const std::span<float> row(logits_.data() + i * c.predictor.vocab_size, c.predictor.vocab_size);
      if (jobs[i].logits) std::copy(row.begin(), row.end(), jobs[i].logits + g * row.size());
      const SampledToken t = sampler_.sample(row, {jobs[i].sampling, {}, {}, {}, jobs[i].rng});
      if (!t.ok()) throw error("Qwen3-TTS code predictor: " + std::string(describe(t.error)));
      jobs[i].frame[g + 1] = t.token;
    }
  }
}

}  // namespace izwi::detail
