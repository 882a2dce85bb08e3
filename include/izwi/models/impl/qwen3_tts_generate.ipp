#pragma once
// Qwen3TtsGenerator's step loop: talker forward passes over the paged KV
// cache, the code predictor batched across the speaking requests, and the
// next frame's input rows.
// Inline in header-only builds; compiled once, in <izwi/src.hpp>, under
// IZWI_SEPARATE_COMPILATION (see izwi/config.hpp).

#include "izwi/config.hpp"
#include "izwi/models/qwen3_tts.hpp"

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
IZWI_DECL void Qwen3TtsGenerator::talker_forward(std::span<Active* const> active, const std::vector<float>& x,
                                              PagedKVCache<>& kv, std::vector<float>& logits) {
  const Qwen3TtsConfig& c = compute_.model().config();
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
  float* xs = compute_.ops().buffer(0, x.size());
  std::copy(x.begin(), x.end(), xs);
  std::vector<float> hidden(n * h);
  logits.resize(n * c.talker.vocab_size);
  compute_.talker(xs, layout.batch(), layout.sequences, kv, DType::f32, hidden.data(), logits.data());
  for (std::size_t i = 0; i < n; ++i) {
    active[i]->hidden.assign(hidden.begin() + static_cast<std::ptrdiff_t>(i * h),
                             hidden.begin() + static_cast<std::ptrdiff_t>((i + 1) * h));
    active[i]->computed += active[i]->pending;
    active[i]->pending = 0;
  }
}

/// Codebooks 1..G-1 of every active request's frame (frame[0] already set).
IZWI_DECL void Qwen3TtsGenerator::predict_codes(std::span<Active* const> active) {
  std::vector<detail::Qwen3TtsFrameJob> jobs;
  for (Active* a : active) jobs.push_back({a->hidden.data(), a->frame.data(), &a->predictor_sampling, &a->rng});
  compute_.predict(jobs);
}

/// The talker's next input per request: Σ of the frame's 16 code embeddings + a text row.
IZWI_DECL void Qwen3TtsGenerator::next_inputs(std::span<Active* const> active, std::vector<float>& x) {
  const std::size_t h = compute_.hidden();
  x.assign(active.size() * h, 0.0f);
  for (std::size_t i = 0; i < active.size(); ++i) {
    float* out = x.data() + i * h;
    // Frame k adds text row k of the trailing text while there is one, tts_pad after.
    const std::size_t frame = active[i]->first_codes.size() - 1;
    const float* text = frame < active[i]->prompt.trailing_text.size()
                            ? active[i]->trailing_rows.data() + frame * h
                            : compute_.pad_row().data();
    compute_.add_frame_row(active[i]->frame, out);
    for (std::size_t k = 0; k < h; ++k) out[k] += text[k];
  }
}

IZWI_DECL std::vector<Qwen3TtsCodes> Qwen3TtsGenerator::generate(std::span<const Qwen3TtsRequest> requests) {
  const Qwen3TtsConfig& c = compute_.model().config();
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
    detail::check_qwen3_tts_speaker_embedding(c, r.speaker_embedding);
    Active& a = states[i];
    a.request = &r, a.out = &results[i], a.id = i + 1;
    a.prompt = detail::qwen3_tts_request_prompt(c, r);
    a.pending = a.prompt.rows.size();
    a.frame.assign(c.num_code_groups, 0);
    a.rng.reseed(r.sampling.seed);
    a.predictor_sampling.temperature = r.sampling.predictor_temperature;
    a.predictor_sampling.top_k = r.sampling.predictor_top_k;
    a.predictor_sampling.top_p = r.sampling.predictor_top_p;
    talker_blocks += (a.prompt.rows.size() + r.sampling.max_frames + 16) / 16;
  }
  if (requests.empty()) return results;
  PagedKVCacheConfig talker_config;
  talker_config.num_blocks = talker_blocks;
  talker_config.enable_prefix_caching = false;
  PagedKVCache<> talker_kv({c.talker.num_layers, c.talker.num_kv_heads, c.talker.head_dim, DType::f32}, talker_config);
  for (Active& a : states)
    if (!a.prompt.trailing_text.empty()) {
      a.trailing_rows.resize(a.prompt.trailing_text.size() * c.talker.hidden_size);
      compute_.text_rows(a.prompt.trailing_text, a.trailing_rows.data());
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
    predict_codes(speaking);
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
