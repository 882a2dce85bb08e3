#pragma once
// Bodies of izwi/models/whisper_request.hpp.

#include <algorithm>
#include <memory>
#include <string>

#include "izwi/audio/mel.hpp"
#include "izwi/core/error.hpp"

namespace izwi {

namespace detail::whisper {

/// The log-mel of one window, with one WhisperLogMel per thread and mel
/// count (its FFT plan and filterbank are built once, not per request).
inline std::vector<float> window_log_mel(std::uint32_t n_mels, std::span<const float> samples_16k) {
  thread_local std::unique_ptr<audio::WhisperLogMel> mel;
  if (!mel || mel->n_mels() != n_mels) mel = std::make_unique<audio::WhisperLogMel>(n_mels);
  std::vector<float> out(std::size_t{n_mels} * audio::WhisperLogMel::frame_count(samples_16k.size(), audio::WhisperPadding::pad_or_trim_30s));
  mel->compute_into(samples_16k, audio::WhisperPadding::pad_or_trim_30s, out);
  return out;
}

inline std::shared_ptr<AudioInput> window_audio(const Whisper& model, std::span<const float> samples_16k) {
  if (samples_16k.size() > whisper_window_samples)
    throw invalid_argument("audio", "a Whisper window holds at most 30 s (480000 samples at 16 kHz), got " +
                                        std::to_string(samples_16k.size()) + " samples");
  auto audio = std::make_shared<AudioInput>();
  audio->samples.assign(samples_16k.begin(), samples_16k.end());
  audio->sample_rate = whisper_sample_rate;
  audio->placeholder_offset = 0;
  audio->placeholder_length = static_cast<std::uint32_t>(model.audio_positions());
  audio->content_hash = audio_content_hash(audio->samples);  // here, so the engine need not copy the audio
  audio->features = window_log_mel(model.config().n_mels, samples_16k);
  return audio;
}

inline Request window_request(const Whisper& model, std::shared_ptr<const AudioInput> audio,
                              std::span<const TokenId> decoder_prompt) {
  if (!audio || audio->placeholder_length != model.audio_positions())
    throw invalid_argument("audio", "the window's audio was not made for this model (make_whisper_window_audio)");
  Request request;
  request.audio = std::move(audio);
  request.prompt_tokens.assign(model.audio_positions(), model.special_tokens().eot);  // placeholders
  request.prompt_tokens.insert(request.prompt_tokens.end(), decoder_prompt.begin(), decoder_prompt.end());
  return request;
}

}  // namespace detail::whisper

inline std::vector<TokenId> whisper_decoder_prompt(const Whisper& model, const WhisperPromptOptions& options) {
  const tokenizer::WhisperSpecialTokens& s = model.special_tokens();
  std::vector<TokenId> prompt;
  if (!options.previous_tokens.empty()) {
    const std::size_t keep = std::min<std::size_t>(options.previous_tokens.size(), model.config().n_text_ctx / 2 - 1);
    prompt.push_back(s.sot_prev);
    prompt.insert(prompt.end(), options.previous_tokens.end() - static_cast<std::ptrdiff_t>(keep),
                  options.previous_tokens.end());
    for (TokenId t : prompt)
      if (t != s.sot_prev && (t < 0 || t >= s.eot) && !s.is_timestamp(t))
        throw invalid_argument("prompt", "previous_tokens must be text or timestamp tokens, got " + std::to_string(t));
  }
  prompt.push_back(s.sot);
  if (s.multilingual) {
    if (!options.language)
      throw invalid_argument("language", "a multilingual Whisper needs a language; detect it with a language probe");
    const std::optional<TokenId> language = s.language_token(*options.language);
    if (!language)
      throw invalid_argument("language", "unknown language '" + *options.language + "'; valid codes: " + s.language_list());
    prompt.push_back(*language);
    prompt.push_back(options.translate ? s.translate : s.transcribe);
  }
  if (!options.timestamps) prompt.push_back(s.no_timestamps);
  return prompt;
}

inline SamplingParams whisper_sampling(float temperature) {
  SamplingParams sampling;
  sampling.temperature = temperature;
  sampling.max_tokens = 224;
  sampling.logprobs = 0;
  return sampling;
}

inline std::shared_ptr<const AudioInput> make_whisper_window_audio(const Whisper& model,
                                                                   std::span<const float> samples_16k) {
  return detail::whisper::window_audio(model, samples_16k);
}

inline Request make_whisper_request(const Whisper& model, std::span<const float> samples_16k,
                                    const WhisperPromptOptions& options, SamplingParams sampling) {
  return make_whisper_request(model, detail::whisper::window_audio(model, samples_16k), options, std::move(sampling));
}

inline Request make_whisper_request(const Whisper& model, std::shared_ptr<const AudioInput> window,
                                    const WhisperPromptOptions& options, SamplingParams sampling) {
  const std::vector<TokenId> decoder_prompt = whisper_decoder_prompt(model, options);
  Request request = detail::whisper::window_request(model, std::move(window), decoder_prompt);
  request.task = options.translate ? Task::translation : Task::asr;
  const std::size_t room = model.config().n_text_ctx - decoder_prompt.size();
  sampling.max_tokens = static_cast<std::uint32_t>(std::min<std::size_t>(sampling.max_tokens.value_or(room), room));
  request.sampling = std::move(sampling);
  return request;
}

inline Request make_whisper_language_probe(const Whisper& model, std::span<const float> samples_16k) {
  return make_whisper_language_probe(model, detail::whisper::window_audio(model, samples_16k));
}

inline Request make_whisper_language_probe(const Whisper& model, std::shared_ptr<const AudioInput> window) {
  const TokenId sot = model.special_tokens().sot;
  Request request = detail::whisper::window_request(model, std::move(window), std::span(&sot, 1));
  request.task = Task::asr;
  request.sampling.temperature = 0.0f;
  request.sampling.max_tokens = 1;
  request.sampling.logprobs = SamplingParams::max_logprobs;
  return request;
}

}  // namespace izwi
