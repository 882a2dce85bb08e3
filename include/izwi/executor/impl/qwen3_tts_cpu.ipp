#pragma once
// Qwen3TtsCpuExecutor's bodies but execute<K> (impl/qwen3_tts_cpu.hpp): input
// rows, codebook 0, predictor, codec.
// Inline in header-only builds; compiled once, in <izwi/src.hpp>, under
// IZWI_SEPARATE_COMPILATION (see izwi/config.hpp).

#include "izwi/config.hpp"
#include "izwi/executor/qwen3_tts_cpu.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "izwi/core/error.hpp"

namespace izwi {

IZWI_DECL Qwen3TtsCpuExecutor::Qwen3TtsCpuExecutor(Qwen3Tts model, Qwen3TtsCpuExecutorConfig config)
    : model_(std::make_unique<const Qwen3Tts>(std::move(model))),
      pool_(std::make_unique<detail::ThreadPool>(config.num_threads)),
      compute_(*model_, *pool_, config.batch_invariant),
      eos_(model_->config().codec_eos_id) {}

IZWI_DECL KVCacheShape Qwen3TtsCpuExecutor::kv_cache_shape() const {
  const Qwen3Config& t = model_->config().talker;
  return {t.num_layers, t.num_kv_heads, t.head_dim, DType::f32};
}

IZWI_DECL Qwen3TtsCpuExecutor::Stream& Qwen3TtsCpuExecutor::stream_for(const ScheduledSequence& seq) {
  auto [it, created] = streams_.try_emplace(seq.id);
  Stream& s = it->second;
  if (!created) return s;
  s.codec = model_->codec().new_stream();
  const SpeechConditioning defaults;
  const SpeechConditioning& speech = seq.speech ? *seq.speech : defaults;
  if (!speech.trailing_text.empty()) {
    for (TokenId t : speech.trailing_text)
      if (t < 0 || static_cast<std::uint32_t>(t) >= model_->config().text_vocab_size) {
        streams_.erase(it);
        throw invalid_argument("input", "trailing text token " + std::to_string(t) + " is outside the text vocabulary");
      }
    s.trailing_rows.resize(speech.trailing_text.size() * compute_.hidden());
    compute_.text_rows(speech.trailing_text, s.trailing_rows.data());
  }
  s.sub_code_sampling.temperature = speech.sub_code_temperature;
  s.sub_code_sampling.top_k = speech.sub_code_top_k;
  s.sub_code_sampling.top_p = speech.sub_code_top_p;
  if (!speech.codec_prefix.empty()) {
    // In-context cloning: the codec continues from the reference's codes, as
    // upstream decodes them before the generated ones; their audio is dropped.
    std::vector<float> reference_audio;
    try {
      model_->codec().decode(*pool_, s.codec, speech.codec_prefix, reference_audio);
    } catch (...) {
      streams_.erase(it);
      throw;
    }
  }
  s.window = std::max<std::uint32_t>(speech.window_frames, 1);
  s.next_window = std::clamp<std::uint32_t>(speech.first_window_frames, 1, s.window);
  return s;
}

/// x[rows][hidden]: a prompt position's row is its text row + its codec
/// embedding (+ the request's speaker features at their placeholder); a
/// generated position's is the sum of its frame's 16 code embeddings, then
/// its text row (the streaming text, or tts_pad), added last as the
/// model-side generator adds it.
IZWI_DECL void Qwen3TtsCpuExecutor::input_rows(const StepPlan& plan, float* x) {
  const Qwen3TtsConfig& c = model_->config();
  const std::size_t h = compute_.hidden(), groups = c.num_code_groups;
  texts_.clear(), text_targets_.clear(), frame_texts_.clear();
  std::size_t row = 0;
  for (const ScheduledSequence& seq : plan.sequences) {
    Stream& s = stream_for(seq);
    for (std::size_t i = 0; i < seq.num_tokens; ++i, ++row) {
      const std::size_t p = seq.num_computed_tokens + i;
      float* out = x + row * h;
      std::fill_n(out, h, 0.0f);
      const TokenId t = seq.tokens[p];
      if (p >= seq.num_prompt_tokens) {
        const std::size_t k = p - seq.num_prompt_tokens;
        if (s.codes.size() < (k + 1) * groups)
          throw error("Qwen3-TTS: request " + std::to_string(seq.id) + " has no codes for frame " + std::to_string(k));
        compute_.add_frame_row(std::span(s.codes).subspan(k * groups, groups), out);
        frame_texts_.emplace_back(row, k < s.trailing_rows.size() / h ? s.trailing_rows.data() + k * h
                                                                     : compute_.pad_row().data());
        continue;
      }
      if (t < static_cast<TokenId>(c.talker.vocab_size))
        throw invalid_argument("prompt", "prompt token " + std::to_string(t) +
                                             " is a codec code, not a packed Qwen3-TTS prompt row "
                                             "(make_qwen3_tts_request builds them)");
      const Qwen3TtsPromptRow r = qwen3_tts_unpack_row(c, t);
      if (r.text >= 0) texts_.push_back(r.text), text_targets_.push_back(row);
      if (r.codec >= 0) compute_.add_codec_row(r.codec, out);
      if (const AudioInput* a = seq.audio;
          a && !a->features.empty() && p >= a->placeholder_offset && p < a->placeholder_offset + a->placeholder_length) {
        if (a->features.size() != std::size_t{a->placeholder_length} * h)
          throw invalid_argument("voice", "the speaker embedding has " + std::to_string(a->features.size()) +
                                              " values; this model needs " + std::to_string(h) + " per row");
        const float* f = a->features.data() + (p - a->placeholder_offset) * h;
        for (std::size_t k = 0; k < h; ++k) out[k] += f[k];
      }
    }
  }
  text_out_.resize(texts_.size() * h);
  compute_.text_rows(texts_, text_out_.data());
  for (std::size_t j = 0; j < texts_.size(); ++j)
    for (std::size_t k = 0; k < h; ++k) x[text_targets_[j] * h + k] += text_out_[j * h + k];
  for (const auto& [target, text] : frame_texts_)
    for (std::size_t k = 0; k < h; ++k) x[target * h + k] += text[k];
}

/// Codebook 0 of every sampling sequence, and the predictor's jobs for those
/// that did not choose EOS. A failed draw fails that sequence alone.
IZWI_DECL void Qwen3TtsCpuExecutor::sample_first_codes(const StepPlan& plan, StepResult& result) {
  const Qwen3TtsConfig& c = model_->config();
  const std::size_t vocab = c.talker.vocab_size, groups = c.num_code_groups, h = compute_.hidden();
  spoken_.clear(), jobs_.clear();
  std::size_t row = 0, frames = 0;
  for (const ScheduledSequence& seq : plan.sequences) {
    if (!seq.samples) continue;
    const std::size_t logit_row = row++;
    Stream& stream = streams_.at(seq.id);
    const std::size_t done = stream.codes.size() / groups;
    if (done != seq.output_tokens().size()) {
      result.failures.push_back({seq.id, "Qwen3-TTS: the request has " + std::to_string(seq.output_tokens().size()) +
                                             " frames but the executor kept codes for " + std::to_string(done)});
      continue;
    }
    const std::span<float> logits(logits_.data() + logit_row * vocab, vocab);
    const std::size_t top_begin = result.top_logprobs.size();
    const SampledToken t = detail::Qwen3TtsCompute::sample_first_code(c, logits, seq.output_tokens(), *seq.sampling,
                                                                      *seq.rng, sampler_, &result.top_logprobs);
    if (!t.ok()) {
      result.failures.push_back({seq.id, "Qwen3-TTS talker: " + std::string(describe(t.error))});
      continue;
    }
    Spoken s{&seq, &stream, t.token, t.token == eos_, 0, t.logprob, top_begin,
             result.top_logprobs.size() - top_begin};
    if (!s.ends) {
      const std::size_t limit = seq.sampling->max_tokens.value_or(0);
      const std::size_t context = max_model_len();
      s.ends = (limit != 0 && done + 1 >= limit) || (context != 0 && seq.tokens.size() + 1 >= context);
      s.frame_row = frames++;
      jobs_.push_back({hidden_.data() + logit_row * h, nullptr, &stream.sub_code_sampling, seq.rng});
    }
    spoken_.push_back(s);
  }
  frames_.assign(frames * groups, 0);
  std::size_t job = 0;
  for (const Spoken& s : spoken_)
    if (s.token != eos_) {
      frames_[s.frame_row * groups] = s.token;
      jobs_[job++].frame = frames_.data() + s.frame_row * groups;
    }
}

/// The codec decoder over every stream whose window is ready (or that ends
/// this step), all in one batch; then one output per spoken sequence.
IZWI_DECL void Qwen3TtsCpuExecutor::decode_audio(StepResult& result) {
  const std::size_t groups = model_->config().num_code_groups;
  windows_.clear();
  pcm_.resize(std::max(pcm_.size(), spoken_.size()));
  window_of_.assign(spoken_.size(), static_cast<std::size_t>(-1));
  for (std::size_t i = 0; i < spoken_.size(); ++i) {
    Stream& s = *spoken_[i].stream;
    const std::size_t frames = s.codes.size() / groups, pending = frames - s.frames_decoded;
    if (pending == 0 || (pending < s.next_window && !spoken_[i].ends)) continue;
    s.next_window = std::min(2 * s.next_window, s.window);
    pcm_[i].clear();
    window_of_[i] = windows_.size();
    windows_.push_back({&s.codec, std::span(s.codes).subspan(s.frames_decoded * groups), &pcm_[i]});
    s.frames_decoded = frames;
  }
  if (!windows_.empty()) model_->codec().decode_batch(*pool_, windows_);
  result.audio_sample_rate = sample_rate();
  for (std::size_t i = 0; i < spoken_.size(); ++i) {
    SequenceOutput out;
    out.id = spoken_[i].seq->id;
    out.token = spoken_[i].token;
    out.logprob = spoken_[i].logprob;
    out.top_logprobs_begin = static_cast<std::uint32_t>(spoken_[i].top_begin);
    out.top_logprobs_count = static_cast<std::uint32_t>(spoken_[i].top_count);
    if (window_of_[i] != static_cast<std::size_t>(-1)) {
      out.audio_begin = static_cast<std::uint32_t>(result.audio.size());
      out.audio_count = static_cast<std::uint32_t>(pcm_[i].size());
      result.audio.insert(result.audio.end(), pcm_[i].begin(), pcm_[i].end());
    }
    result.outputs.push_back(out);
  }
}

}  // namespace izwi
