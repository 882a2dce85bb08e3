#pragma once
// make_qwen3_tts_request and the prompt-row packing.
// Inline in header-only builds; compiled once, in <izwi/src.hpp>, under
// IZWI_SEPARATE_COMPILATION (see izwi/config.hpp).

#include "izwi/config.hpp"
#include "izwi/models/qwen3_tts_request.hpp"

#include <string>
#include <utility>

#include "izwi/core/error.hpp"
#include "izwi/core/hash.hpp"
#include "izwi/kernels/cpu/elementwise.hpp"

namespace izwi {

IZWI_DECL std::size_t qwen3_tts_token_space(const Qwen3TtsConfig& c) noexcept {
  const std::size_t codecs = c.talker.vocab_size;
  return codecs + (std::size_t{c.text_vocab_size} + 1) * (codecs + 1);
}

IZWI_DECL TokenId qwen3_tts_pack_row(const Qwen3TtsConfig& c, Qwen3TtsPromptRow row) noexcept {
  const std::int64_t codecs = c.talker.vocab_size;
  return static_cast<TokenId>(codecs + (std::int64_t{row.text} + 1) * (codecs + 1) + (row.codec + 1));
}

IZWI_DECL Qwen3TtsPromptRow qwen3_tts_unpack_row(const Qwen3TtsConfig& c, TokenId id) noexcept {
  const std::int64_t codecs = c.talker.vocab_size, packed = std::int64_t{id} - codecs;
  return {static_cast<TokenId>(packed / (codecs + 1) - 1), static_cast<TokenId>(packed % (codecs + 1) - 1)};
}

namespace detail {

/// In-context cloning: the audio input grows from the x-vector's row to the
/// last reference frame's row; the frames' rows carry the sum of their 16 code
/// embeddings (summed from zero in codebook order, as the generator sums them),
/// the rows between carry zeros. The hash covers the x-vector and the codes,
/// so two references never share prefix-cache blocks.
IZWI_DECL void add_qwen3_tts_reference_rows(const Qwen3Tts& model, const Qwen3TtsRequest& r, const Qwen3TtsPrompt& prompt,
                                         AudioInput& voice) {
  const Qwen3TtsConfig& c = model.config();
  const std::size_t h = c.talker.hidden_size, groups = c.num_code_groups, first = *prompt.speaker_embedding_row,
                    frames_at = *prompt.reference_frame_row - first, length = frames_at + prompt.reference_frames;
  std::vector<float> features(length * h, 0.0f), embedding(h);
  std::copy(r.speaker_embedding.begin(), r.speaker_embedding.end(), features.begin());
  for (std::size_t f = 0; f < prompt.reference_frames; ++f) {
    float* out = features.data() + (frames_at + f) * h;
    for (std::size_t g = 0; g < groups; ++g) {
      const TokenId code = r.reference_codes[f * groups + g];
      const auto& table = g == 0 ? model.talker().codec_embedding : model.predictor().codec_embeddings[g - 1];
      kernels::cpu::embedding_gather(table, std::span(&code, 1), embedding.data(), h);
      for (std::size_t i = 0; i < h; ++i) out[i] += embedding[i];
    }
  }
  voice.features = std::move(features);
  voice.placeholder_length = static_cast<std::uint32_t>(length);
  voice.content_hash = hash64(std::span<const std::int32_t>(r.reference_codes), voice.content_hash) | 1u;
}

}  // namespace detail

IZWI_DECL Request make_qwen3_tts_request(const Qwen3Tts& model, const Qwen3TtsRequest& r, Qwen3TtsStreaming streaming) {
  const Qwen3TtsConfig& c = model.config();
  static_assert(sizeof(TokenId) == 4);
  for (const auto* tokens : {&r.text_tokens, &r.instruction_tokens})
    for (TokenId t : *tokens)
      if (t < 0 || static_cast<std::uint32_t>(t) >= c.text_vocab_size)
        throw invalid_argument(tokens == &r.text_tokens ? "input" : "instructions",
                               "text token " + std::to_string(t) + " is outside the text vocabulary (" +
                                   std::to_string(c.text_vocab_size) + ")");
  if (r.text_tokens.empty()) throw invalid_argument("input", "the text to speak is empty");
  if (r.sampling.max_frames == 0) throw invalid_argument("max_tokens", "max_frames must be at least 1");
  if (streaming.first_window_frames == 0 || streaming.window_frames == 0)
    throw invalid_argument("stream", "audio windows must hold at least one frame");
  detail::check_qwen3_tts_speaker_embedding(c, r.speaker_embedding);
  const Qwen3TtsPrompt prompt = detail::qwen3_tts_request_prompt(c, r);
  Request request;
  request.task = Task::tts;
  request.prompt_tokens.reserve(prompt.rows.size());
  for (const Qwen3TtsPromptRow& row : prompt.rows) request.prompt_tokens.push_back(qwen3_tts_pack_row(c, row));
  request.voice = detail::lower_case(r.speaker);
  if (prompt.speaker_embedding_row) {
    // The x-vector rides as the request's audio input: its row's packed token
    // has no codec half and the executor adds `features` there; the hash of
    // the x-vector keys the prefix cache, so only the same voice shares blocks.
    auto voice = std::make_shared<AudioInput>();
    voice->features = r.speaker_embedding;
    voice->sample_rate = c.speaker_encoder ? c.speaker_encoder->sample_rate : 24000;
    voice->placeholder_offset = static_cast<std::uint32_t>(*prompt.speaker_embedding_row);
    voice->placeholder_length = 1;
    voice->content_hash = audio_content_hash(r.speaker_embedding);
    if (prompt.reference_frame_row) detail::add_qwen3_tts_reference_rows(model, r, prompt, *voice);
    request.audio = std::move(voice);
  }

  const Qwen3TtsSampling& s = r.sampling;
  SamplingParams& p = request.sampling;
  p.temperature = s.temperature;
  p.top_k = s.top_k;
  p.top_p = s.top_p;
  p.repetition_penalty = s.repetition_penalty;
  p.seed = s.seed;
  p.max_tokens = s.max_frames;
  p.min_tokens = s.min_frames;
  const bool stochastic = s.temperature > 0.0f || s.predictor_temperature > 0.0f;
  if (stochastic) request.cache_salt = "qwen3-tts seed " + std::to_string(s.seed);

  auto speech = std::make_shared<SpeechConditioning>();
  speech->trailing_text = prompt.trailing_text;
  speech->sub_code_temperature = s.predictor_temperature;
  speech->sub_code_top_k = s.predictor_top_k;
  speech->sub_code_top_p = s.predictor_top_p;
  speech->first_window_frames = streaming.first_window_frames;
  speech->window_frames = streaming.window_frames;
  speech->codec_prefix = r.reference_codes;
  request.speech = std::move(speech);
  return request;
}

}  // namespace izwi
