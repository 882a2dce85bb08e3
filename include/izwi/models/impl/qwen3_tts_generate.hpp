#pragma once
// Qwen3TtsGenerator's step loop: talker forward passes over the paged KV
// cache, the code predictor batched across the speaking requests, and the
// next frame's input rows.

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "izwi/core/error.hpp"

namespace izwi {

namespace detail {

/// Positions, slots and attention sequences of one forward pass in which
/// sequence i contributes rows[i] new rows after computed[i] cached ones.
struct Qwen3TtsStepLayout {
  std::vector<std::int64_t> positions, slots;
  std::vector<std::uint32_t> last_rows;
  std::vector<CpuOps::attention_sequence> sequences;

  template <class KV>
  void build(KV& kv, std::span<const RequestId> ids, std::span<const std::size_t> computed,
             std::span<const std::size_t> rows, std::span<const TokenId> placeholder) {
    positions.clear(), slots.clear(), last_rows.clear(), sequences.clear();
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const std::size_t total = computed[i] + rows[i];
      if (total > placeholder.size() || !kv.allocate_slots(SequenceView{ids[i], placeholder.first(total)}, computed[i], rows[i]))
        throw error("Qwen3-TTS: the KV cache has no room for " + std::to_string(total) + " positions of sequence " +
                    std::to_string(ids[i]));
      const auto table = kv.block_table(ids[i]);
      sequences.push_back({computed[i], rows[i], table, positions.size()});
      for (std::size_t p = computed[i]; p < total; ++p) {
        positions.push_back(static_cast<std::int64_t>(p));
        slots.push_back(static_cast<std::int64_t>(table[p / kv.block_size()] * kv.block_size() + p % kv.block_size()));
      }
      last_rows.push_back(static_cast<std::uint32_t>(positions.size() - 1));
    }
  }
  ForwardBatch batch() const { return {{}, positions, slots, last_rows}; }
};

}  // namespace detail

/// One talker pass: x holds each active request's pending rows in order;
/// leaves each request's last hidden state (after the final norm) in
/// a->hidden and its codec logits in `logits` ([n][vocab]).
inline void Qwen3TtsGenerator::talker_forward(std::span<Active* const> active, const std::vector<float>& x,
                                              PagedKVCache<>& kv, std::vector<float>& logits) {
  const Qwen3TtsConfig& c = model_->config();
  const Qwen3TtsTalkerWeights& w = model_->talker();
  const std::size_t h = c.talker.hidden_size, n = active.size();
  std::vector<RequestId> ids;
  std::vector<std::size_t> computed, rows;
  std::size_t longest = 0;
  for (const Active* a : active) {
    ids.push_back(a->id), computed.push_back(a->computed), rows.push_back(a->pending);
    longest = std::max(longest, a->computed + a->pending);
  }
  placeholder_.resize(std::max(placeholder_.size(), longest), 0);
  detail::Qwen3TtsStepLayout layout;
  layout.build(kv, ids, computed, rows, placeholder_);
  float* xs = ops_.buffer(0, x.size());
  std::copy(x.begin(), x.end(), xs);
  detail::qwen3_decoder_layers(ops_, c.talker, std::span<const Qwen3LayerWeights>(w.layers), DType::f32,
                               layout.batch(), layout.sequences, kv, xs);
  float* last = ops_.buffer(8, n * h);
  ops_.gather_rows(xs, h, layout.last_rows, last);
  ops_.rms_norm(last, n, h, w.final_norm.data(), static_cast<float>(c.talker.rms_norm_eps), last);
  for (std::size_t i = 0; i < n; ++i) {
    active[i]->hidden.assign(last + i * h, last + (i + 1) * h);
    active[i]->computed += active[i]->pending;
    active[i]->pending = 0;
  }
  logits.resize(n * c.talker.vocab_size);
  ops_.matmul(last, n, w.codec_head, logits.data());
}

/// Codebooks 1..G-1 of every active request's frame (frame[0] already set):
/// one predictor pass per codebook, all requests in each pass.
inline void Qwen3TtsGenerator::predict_codes(std::span<Active* const> active, PagedKVCache<>& kv) {
  const Qwen3TtsConfig& c = model_->config();
  const Qwen3TtsPredictorWeights& w = model_->predictor();
  const std::size_t n = active.size(), th = c.talker.hidden_size, ph = c.predictor.hidden_size;
  std::vector<RequestId> ids;
  for (const Active* a : active) ids.push_back(a->id);
  std::vector<std::size_t> computed(n, 0), rows(n, 2);
  std::vector<float> input, logits(n * c.predictor.vocab_size);
  placeholder_.resize(std::max<std::size_t>(placeholder_.size(), c.num_code_groups + 1), 0);
  for (std::uint32_t g = 0; g + 1 < c.num_code_groups; ++g) {
    // Inputs at the talker's width: [talker hidden, codec_embedding[c₀]] first, then the predictor's c_g.
    input.assign(std::accumulate(rows.begin(), rows.end(), std::size_t{0}) * th, 0.0f);
    std::size_t row = 0;
    for (const Active* a : active) {
      if (g == 0) {
        std::copy(a->hidden.begin(), a->hidden.end(), input.begin() + static_cast<std::ptrdiff_t>(row++ * th));
        const TokenId c0 = a->frame[0];
        predictor_ops_.embed(model_->talker().codec_embedding, std::span(&c0, 1), input.data() + row++ * th);
      } else {
        const TokenId code = a->frame[g];
        predictor_ops_.embed(w.codec_embeddings[g - 1], std::span(&code, 1), input.data() + row++ * th);
      }
    }
    detail::Qwen3TtsStepLayout layout;
    layout.build(kv, ids, computed, rows, placeholder_);
    float* x = predictor_ops_.buffer(0, row * ph);
    if (w.projection) {
      predictor_ops_.matmul(input.data(), row, *w.projection, x);
      for (std::size_t r = 0; r < row; ++r)
        for (std::size_t i = 0; i < ph; ++i) x[r * ph + i] += w.projection_bias[i];
    } else {
      std::copy(input.begin(), input.end(), x);
    }
    detail::qwen3_decoder_layers(predictor_ops_, c.predictor, std::span<const Qwen3LayerWeights>(w.layers), DType::f32,
                                 layout.batch(), layout.sequences, kv, x);
    float* last = predictor_ops_.buffer(8, n * ph);
    predictor_ops_.gather_rows(x, ph, layout.last_rows, last);
    predictor_ops_.rms_norm(last, n, ph, w.final_norm.data(), static_cast<float>(c.predictor.rms_norm_eps), last);
    predictor_ops_.matmul(last, n, w.heads[g], logits.data());
    for (std::size_t i = 0; i < n; ++i) {
      const Qwen3TtsSampling& s = active[i]->request->sampling;
      SamplingParams p;
      p.temperature = s.predictor_temperature;
      p.top_k = s.predictor_top_k;
      p.top_p = s.predictor_top_p;
      const std::span<float> row_logits(logits.data() + i * c.predictor.vocab_size, c.predictor.vocab_size);
      const SampledToken t = sampler_.sample(row_logits, {&p, {}, {}, {}, &active[i]->rng});
      if (!t.ok()) throw error("Qwen3-TTS code predictor: " + std::string(describe(t.error)));
      active[i]->frame[g + 1] = t.token;
      computed[i] += rows[i];
      rows[i] = 1;
    }
  }
  for (RequestId id : ids) kv.free(id);
}

/// The talker's next input per request: Σ of the frame's 16 code embeddings + a text row.
inline void Qwen3TtsGenerator::next_inputs(std::span<Active* const> active, std::vector<float>& x) {
  const Qwen3TtsConfig& c = model_->config();
  const std::size_t h = c.talker.hidden_size;
  x.assign(active.size() * h, 0.0f);
  std::vector<float> e(h);
  for (std::size_t i = 0; i < active.size(); ++i) {
    float* out = x.data() + i * h;
    for (std::uint32_t g = 0; g < c.num_code_groups; ++g) {
      const TokenId code = active[i]->frame[g];
      const auto& table = g == 0 ? model_->talker().codec_embedding : model_->predictor().codec_embeddings[g - 1];
      ops_.embed(table, std::span(&code, 1), e.data());
      for (std::size_t k = 0; k < h; ++k) out[k] += e[k];
    }
    // Frame k adds text row k of the trailing text while there is one, tts_pad after.
    const std::size_t frame = active[i]->first_codes.size() - 1;
    const float* text = frame < active[i]->prompt.trailing_text.size()
                            ? active[i]->trailing_rows.data() + frame * h
                            : pad_row_.data();
    for (std::size_t k = 0; k < h; ++k) out[k] += text[k];
  }
}

inline std::vector<Qwen3TtsCodes> Qwen3TtsGenerator::generate(std::span<const Qwen3TtsRequest> requests) {
  const Qwen3TtsConfig& c = model_->config();
  std::vector<Qwen3TtsCodes> results(requests.size());
  std::vector<Active> states(requests.size());
  std::size_t talker_blocks = 1;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const Qwen3TtsRequest& r = requests[i];
    for (const auto* tokens : {&r.text_tokens, &r.instruction_tokens})
      for (TokenId t : *tokens)
        if (t < 0 || static_cast<std::uint32_t>(t) >= c.text_vocab_size)
          throw invalid_argument(tokens == &r.text_tokens ? "input" : "instructions",
                                 "request " + std::to_string(i) + ": text token " + std::to_string(t) +
                                     " is outside the text vocabulary (" + std::to_string(c.text_vocab_size) + ")");
    if (r.sampling.max_frames == 0)
      throw invalid_argument("max_tokens", "request " + std::to_string(i) + ": max_frames must be at least 1");
    Active& a = states[i];
    a.request = &r, a.out = &results[i], a.id = i + 1;
    a.prompt = qwen3_tts_prompt(c, r.text_tokens, r.language, r.speaker, r.instruction_tokens, r.text_mode);
    a.pending = a.prompt.rows.size();
    a.frame.assign(c.num_code_groups, 0);
    a.rng.reseed(r.sampling.seed);
    talker_blocks += (a.prompt.rows.size() + r.sampling.max_frames + 16) / 16;
  }
  if (requests.empty()) return results;
  PagedKVCacheConfig talker_config, predictor_config;
  talker_config.num_blocks = talker_blocks;
  talker_config.enable_prefix_caching = false;
  predictor_config.num_blocks = requests.size() * ((c.num_code_groups + 16) / 16) + 1;
  predictor_config.enable_prefix_caching = false;
  PagedKVCache<> talker_kv({c.talker.num_layers, c.talker.num_kv_heads, c.talker.head_dim, DType::f32}, talker_config);
  PagedKVCache<> predictor_kv({c.predictor.num_layers, c.predictor.num_kv_heads, c.predictor.head_dim, DType::f32},
                              predictor_config);
  pad_row_.resize(c.talker.hidden_size);
  const TokenId pad = c.tts_pad_id;
  text_rows(std::span(&pad, 1), pad_row_.data());
  for (Active& a : states)
    if (!a.prompt.trailing_text.empty()) {
      a.trailing_rows.resize(a.prompt.trailing_text.size() * c.talker.hidden_size);
      text_rows(a.prompt.trailing_text, a.trailing_rows.data());
    }

  std::vector<Active*> running;
  for (Active& a : states) running.push_back(&a);
  std::vector<float> x, logits;
  embed_prompts(running, x);
  while (!running.empty()) {
    talker_forward(running, x, talker_kv, logits);
    std::vector<Active*> speaking;
    for (std::size_t i = 0; i < running.size(); ++i) {
      Active& a = *running[i];
      const std::span<float> row(logits.data() + i * c.talker.vocab_size, c.talker.vocab_size);
      const TokenId c0 = sample_first_code(c, row, a.first_codes, a.request->sampling, a.rng, sampler_);
      if (c0 == c.codec_eos_id) {
        a.out->finished_by_eos = true;
        talker_kv.free(a.id);
        continue;
      }
      a.first_codes.push_back(c0);
      a.frame[0] = c0;
      speaking.push_back(&a);
    }
    if (speaking.empty()) break;
    predict_codes(speaking, predictor_kv);
    running.clear();
    for (Active* a : speaking) {
      a->out->codes.insert(a->out->codes.end(), a->frame.begin(), a->frame.end());
      ++a->out->frames;
      if (a->first_codes.size() < a->request->sampling.max_frames) {
        a->pending = 1;
        running.push_back(a);
      } else {
        talker_kv.free(a->id);
      }
    }
    if (!running.empty()) next_inputs(running, x);
  }
  return results;
}

}  // namespace izwi
