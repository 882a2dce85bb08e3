#pragma once
// Qwen3-TTS's prompt and its talker / code-predictor loop on the CPU.
// Inline in header-only builds; compiled once, in <izwi/src.hpp>, under
// IZWI_SEPARATE_COMPILATION (see izwi/config.hpp).

#include "izwi/config.hpp"
#include "izwi/models/qwen3_tts.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "izwi/core/error.hpp"
#include "izwi/models/impl/qwen3.hpp"

namespace izwi {

namespace detail {

template <class Map>
std::string known_names(const Map& names) {
  std::string out;
  for (const auto& [name, id] : names) out += (out.empty() ? "" : ", ") + name;
  return out.empty() ? "(none)" : out;
}

}  // namespace detail

IZWI_DECL std::vector<float> Qwen3Tts::speaker_embedding(std::span<const float> pcm, std::uint32_t sample_rate,
                                                      detail::ThreadPool& pool) const {
  if (!speaker_encoder_)
    throw invalid_argument("reference_audio", "this model (" + description_ +
                                                  ") has no speaker encoder: only Qwen3-TTS Base checkpoints "
                                                  "clone a voice from reference audio");
  return speaker_encoder_->embed(pcm, sample_rate, pool);
}

IZWI_DECL std::vector<float> Qwen3Tts::speaker_embedding(std::span<const float> pcm, std::uint32_t sample_rate) const {
  detail::ThreadPool pool(1);  // the caller's thread alone
  return speaker_embedding(pcm, sample_rate, pool);
}

IZWI_DECL std::vector<std::int32_t> Qwen3Tts::reference_codes(std::span<const float> pcm, std::uint32_t sample_rate,
                                                            detail::ThreadPool& pool) const {
  if (!speech_encoder_)
    throw invalid_argument("reference_audio", "this model (" + description_ +
                                                  ") has no speech tokenizer encoder: in-context cloning needs a "
                                                  "Qwen3-TTS Base checkpoint in the Hugging Face layout whose "
                                                  "speech_tokenizer/config.json has encoder_config");
  return speech_encoder_->encode(pcm, sample_rate, pool);
}

IZWI_DECL std::vector<std::int32_t> Qwen3Tts::reference_codes(std::span<const float> pcm, std::uint32_t sample_rate) const {
  detail::ThreadPool pool(1);
  return reference_codes(pcm, sample_rate, pool);
}

IZWI_DECL Qwen3TtsPrompt qwen3_tts_prompt(const Qwen3TtsConfig& c, std::span<const TokenId> text,
                                       std::string_view language, std::string_view speaker,
                                       std::span<const TokenId> instruction, Qwen3TtsTextMode mode,
                                       bool speaker_embedding) {
  if (mode == Qwen3TtsTextMode::streaming && text.empty())
    throw invalid_argument("input", "the streaming text mode needs at least one text token");
  if (speaker_embedding && !speaker.empty())
    throw invalid_argument("voice", "a request speaks either a named speaker ('" + std::string(speaker) +
                                        "') or a cloned voice's speaker embedding, not both");
  const std::string lang = detail::lower_case(language), spk = detail::lower_case(speaker);
  std::optional<TokenId> language_id;
  if (lang != "auto") {
    const auto found = c.languages.find(lang);
    if (found == c.languages.end())
      throw invalid_argument("language", "unknown language '" + std::string(language) +
                                             "'; this model knows auto, " + detail::known_names(c.languages));
    language_id = found->second;
  }
  std::optional<TokenId> speaker_id;
  if (!spk.empty()) {
    const auto found = c.speakers.find(spk);
    if (found == c.speakers.end())
      throw invalid_argument("voice", "unknown speaker '" + std::string(speaker) +
                                          "'; this model's speakers are " + detail::known_names(c.speakers));
    speaker_id = found->second;
    // A dialect speaker speaks the dialect when asked for Chinese or for nothing in particular.
    if (const auto dialect = c.speaker_dialects.find(spk);
        dialect != c.speaker_dialects.end() && (lang == "chinese" || lang == "auto")) {
      const auto id = c.languages.find(dialect->second);
      if (id == c.languages.end())
        throw invalid_argument("voice", "speaker '" + spk + "' speaks '" + dialect->second +
                                            "', which codec_language_id does not list");
      language_id = id->second;
    }
  }
  std::vector<TokenId> codec;
  if (language_id) codec = {c.codec_think_id, c.codec_think_bos_id, *language_id, c.codec_think_eos_id};
  else codec = {c.codec_nothink_id, c.codec_think_bos_id, c.codec_think_eos_id};
  if (speaker_id) codec.push_back(*speaker_id);
  const std::size_t speaker_at = codec.size();  // the x-vector's row, counted in `codec`
  if (speaker_embedding) codec.push_back(-1);
  codec.push_back(c.codec_pad_id);

  Qwen3TtsPrompt prompt;
  std::vector<Qwen3TtsPromptRow>& rows = prompt.rows;
  if (!instruction.empty()) {
    rows = {{c.im_start_id, -1}, {c.user_id, -1}, {c.newline_id, -1}};
    for (TokenId t : instruction) rows.push_back({t, -1});
    rows.push_back({c.im_end_id, -1});
    rows.push_back({c.newline_id, -1});
  }
  for (TokenId t : {c.im_start_id, c.assistant_id, c.newline_id}) rows.push_back({t, -1});
  if (speaker_embedding) prompt.speaker_embedding_row = rows.size() + speaker_at;
  for (std::size_t i = 0; i < codec.size(); ++i)
    rows.push_back({i + 1 < codec.size() ? c.tts_pad_id : c.tts_bos_id, codec[i]});
  if (mode == Qwen3TtsTextMode::streaming) {
    rows.push_back({text[0], c.codec_bos_id});
    prompt.trailing_text.assign(text.begin() + 1, text.end());
    prompt.trailing_text.push_back(c.tts_eos_id);
  } else {
    for (TokenId t : text) rows.push_back({t, c.codec_pad_id});
    rows.push_back({c.tts_eos_id, c.codec_pad_id});
    rows.push_back({c.tts_pad_id, c.codec_bos_id});
  }
  return prompt;
}

IZWI_DECL Qwen3TtsPrompt qwen3_tts_icl_prompt(const Qwen3TtsConfig& c, std::span<const TokenId> text,
                                           std::span<const TokenId> reference_text, std::size_t reference_frames,
                                           std::string_view language, std::span<const TokenId> instruction,
                                           Qwen3TtsTextMode mode) {
  if (text.empty()) throw invalid_argument("input", "the text to speak is empty");
  if (reference_text.empty())
    throw invalid_argument("reference_text", "in-context cloning needs the reference audio's transcript");
  if (reference_frames == 0) throw invalid_argument("reference_audio", "in-context cloning needs reference codes");
  // The head: the non-streaming prompt of an x-vector voice without its text tail.
  Qwen3TtsPrompt prompt = qwen3_tts_prompt(c, text, language, "", instruction, Qwen3TtsTextMode::non_streaming, true);
  prompt.rows.resize(prompt.rows.size() - (text.size() + 2));
  std::vector<TokenId> t(reference_text.begin(), reference_text.end());
  t.insert(t.end(), text.begin(), text.end());
  t.push_back(c.tts_eos_id);
  const std::size_t codec_rows = reference_frames + 1;  // codec_bos, then the frames
  std::vector<Qwen3TtsPromptRow>& rows = prompt.rows;
  if (mode == Qwen3TtsTextMode::non_streaming) {
    for (TokenId id : t) rows.push_back({id, c.codec_pad_id});
    rows.push_back({c.tts_pad_id, c.codec_bos_id});
    prompt.reference_frame_row = rows.size();
    rows.insert(rows.end(), reference_frames, {c.tts_pad_id, -1});
  } else {
    for (std::size_t j = 0; j < codec_rows; ++j) {
      if (j == 1) prompt.reference_frame_row = rows.size();
      rows.push_back({j < t.size() ? t[j] : c.tts_pad_id, j == 0 ? c.codec_bos_id : -1});
    }
    if (t.size() > codec_rows) prompt.trailing_text.assign(t.begin() + static_cast<std::ptrdiff_t>(codec_rows), t.end());
  }
  prompt.reference_frames = reference_frames;
  return prompt;
}


struct Qwen3TtsGenerator::Active {
  const Qwen3TtsRequest* request = nullptr;
  Qwen3TtsCodes* out = nullptr;
  RequestId id = 0;
  Qwen3TtsPrompt prompt;
  std::vector<float> trailing_rows;  ///< text_projection of prompt.trailing_text, [n][hidden]
  std::size_t computed = 0;  ///< talker positions in the KV cache
  std::size_t pending = 0;   ///< talker rows of this step
  std::vector<TokenId> first_codes;
  std::vector<std::int32_t> frame;
  std::vector<float> hidden;  ///< the talker's last hidden state, after its final norm
  SamplingParams predictor_sampling;
  SequenceRng rng;
};

IZWI_DECL TokenId Qwen3TtsGenerator::sample_first_code(const Qwen3TtsConfig& c, std::span<float> logits,
                                                    std::span<const TokenId> previous, const Qwen3TtsSampling& s,
                                                    SequenceRng& rng, Sampler& sampler) {
  SamplingParams p;
  p.temperature = s.temperature;
  p.top_k = s.top_k;
  p.top_p = s.top_p;
  p.repetition_penalty = s.repetition_penalty;
  p.min_tokens = s.min_frames;
  const SampledToken t = detail::Qwen3TtsCompute::sample_first_code(c, logits, previous, p, rng, sampler);
  if (!t.ok()) throw error("Qwen3-TTS talker: " + std::string(describe(t.error)));
  return t.token;
}

IZWI_DECL void Qwen3TtsGenerator::embed_prompts(std::span<Active* const> active, std::vector<float>& x) {
  const std::size_t h = compute_.hidden();
  std::vector<TokenId> texts;
  std::size_t rows = 0;
  for (const Active* a : active) {
    rows += a->prompt.rows.size();
    for (const Qwen3TtsPromptRow& r : a->prompt.rows)
      if (r.text >= 0) texts.push_back(r.text);
  }
  std::vector<float> text(texts.size() * h);
  compute_.text_rows(texts, text.data());
  x.assign(rows * h, 0.0f);
  std::size_t row = 0, next_text = 0;
  for (const Active* a : active) {
    const std::size_t first = row;
    for (const Qwen3TtsPromptRow& r : a->prompt.rows) {
      float* out = x.data() + row++ * h;
      if (r.text >= 0) std::copy_n(text.data() + next_text++ * h, h, out);
      if (r.codec >= 0) compute_.add_codec_row(r.codec, out);
    }
    // A cloned voice: the x-vector stands where a speaker's codec row would.
    if (const auto at = a->prompt.speaker_embedding_row) {
      float* out = x.data() + (first + *at) * h;
      const std::vector<float>& e = a->request->speaker_embedding;
      for (std::size_t i = 0; i < h; ++i) out[i] += e[i];
    }
    // In-context cloning: each reference frame's row adds the sum of its 16
    // code embeddings (summed apart first, as the engine's request carries it).
    if (const auto at = a->prompt.reference_frame_row) {
      const std::size_t groups = compute_.model().config().num_code_groups;
      std::vector<float> frame(h);
      for (std::size_t f = 0; f < a->prompt.reference_frames; ++f) {
        std::fill(frame.begin(), frame.end(), 0.0f);
        compute_.add_frame_row(std::span(a->request->reference_codes).subspan(f * groups, groups), frame.data());
        float* out = x.data() + (first + *at + f) * h;
        for (std::size_t i = 0; i < h; ++i) out[i] += frame[i];
      }
    }
  }
}

namespace detail {

/// izwi::invalid_argument("speaker_embedding") unless `e` is empty or a
/// finite vector of the talker's width.
/// The prompt of request r: in-context cloning when it carries reference
/// codes (which must be whole frames of codes in the codebooks, with an
/// x-vector and a transcript), qwen3_tts_prompt otherwise.
IZWI_DECL Qwen3TtsPrompt qwen3_tts_request_prompt(const Qwen3TtsConfig& c, const Qwen3TtsRequest& r) {
  if (r.reference_codes.empty()) {
    if (!r.reference_text_tokens.empty())
      throw invalid_argument("reference_text", "a reference transcript needs reference audio (in-context cloning)");
    return qwen3_tts_prompt(c, r.text_tokens, r.language, r.speaker, r.instruction_tokens, r.text_mode,
                            !r.speaker_embedding.empty());
  }
  const std::size_t groups = c.num_code_groups;
  if (r.reference_codes.size() % groups != 0)
    throw invalid_argument("reference_audio", "the reference codes hold " + std::to_string(r.reference_codes.size()) +
                                                  " values, not whole frames of " + std::to_string(groups));
  for (std::size_t i = 0; i < r.reference_codes.size(); ++i)
    if (r.reference_codes[i] < 0 || static_cast<std::uint32_t>(r.reference_codes[i]) >= c.predictor.vocab_size)
      throw invalid_argument("reference_audio", "reference code " + std::to_string(r.reference_codes[i]) +
                                                    " (frame " + std::to_string(i / groups) + ", codebook " +
                                                    std::to_string(i % groups) + ") is outside the codebooks");
  if (r.speaker_embedding.empty())
    throw invalid_argument("reference_audio", "in-context cloning needs the reference's x-vector too "
                                              "(speaker_embedding), as upstream's icl mode uses it");
  if (!r.speaker.empty())
    throw invalid_argument("voice", "a cloned voice cannot also name a speaker ('" + r.speaker + "')");
  return qwen3_tts_icl_prompt(c, r.text_tokens, r.reference_text_tokens, r.reference_codes.size() / groups, r.language,
                              r.instruction_tokens, r.text_mode);
}

IZWI_DECL void check_qwen3_tts_speaker_embedding(const Qwen3TtsConfig& c, std::span<const float> e) {
  if (e.empty()) return;
  if (e.size() != c.talker.hidden_size)
    throw invalid_argument("speaker_embedding", "the speaker embedding has " + std::to_string(e.size()) +
                                                    " values; this model's x-vector has " +
                                                    std::to_string(c.talker.hidden_size));
  for (std::size_t i = 0; i < e.size(); ++i)
    if (!std::isfinite(e[i]))
      throw invalid_argument("speaker_embedding", "value " + std::to_string(i) + " of the speaker embedding is not finite");
}

}  // namespace detail

}  // namespace izwi

#include "izwi/models/impl/qwen3_tts_generate.ipp"
