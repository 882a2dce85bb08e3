#pragma once
// Whisper requests for the engine: one 30-s window of audio as a Request that
// a WhisperCpuExecutor engine (stock_engines.hpp: WhisperCpuEngine) serves.
//
//   Request probe = izwi::make_whisper_language_probe(model, window);   // optional
//   Request r = izwi::make_whisper_request(model, window, {.language = "en"}, sampling);
//   RequestOutput out = engine.generate(std::move(r));
//
// The prompt is the audio's placeholder positions (model.audio_positions(),
// where the cache keeps the window's cross-attention K/V) followed by the
// decoder prompt: [<|startofprev|> previous text…] <|startoftranscript|>
// [<|lang|> <|task|>] [<|notimestamps|>]. The audio carries its log-mel,
// computed here, on the caller's thread, not in the engine's step loop.
// Requests with the same audio share the encoder's K/V through the prefix
// cache, so a probe followed by the transcription, or a retry at another
// temperature, runs the encoder once.

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "izwi/core/request.hpp"
#include "izwi/core/sampling_params.hpp"
#include "izwi/models/whisper.hpp"

namespace izwi {

struct WhisperPromptOptions {
  /// Language code ("en", "de", …). Required by multilingual models (detect
  /// it first with a language probe); ignored by .en models.
  std::optional<std::string> language;
  bool translate = false;
  /// false adds <|notimestamps|>: text only, no segment times.
  bool timestamps = true;
  /// Tokens of the previous window (text and timestamps, as openai-whisper
  /// keeps them) or the user's prompt, placed after <|startofprev|>; the last
  /// n_text_ctx/2 − 1 (223) are kept, as openai-whisper does.
  std::vector<TokenId> previous_tokens;
};

/// Samples of one window: 16 kHz mono, at most 30 s (shorter is zero-padded).
inline constexpr std::size_t whisper_window_samples = 480000;
inline constexpr unsigned whisper_sample_rate = 16000;

/// The decoder prompt alone (no audio placeholders).
std::vector<TokenId> whisper_decoder_prompt(const Whisper& model, const WhisperPromptOptions& options);

/// openai-whisper's sampling defaults: greedy at temperature 0, at most 224
/// tokens (n_text_ctx / 2), logprobs of each token (its avg_logprob needs them).
SamplingParams whisper_sampling(float temperature = 0.0f);

/// One window as a request (Task::asr, or Task::translation when
/// options.translate). `sampling.max_tokens` unset, or above what the
/// decoder can still hold after the prompt, is capped there. Throws
/// izwi::invalid_argument naming the field: audio over 30 s, a missing or
/// unknown language (the message lists the model's codes).
Request make_whisper_request(const Whisper& model, std::span<const float> samples_16k,
                             const WhisperPromptOptions& options, SamplingParams sampling = whisper_sampling());

/// The audio input of one window (its samples, content hash and log-mel),
/// to share among requests over the same window: a probe, a decode, the
/// rounds of a beam search — the log-mel and the hash are then computed once.
std::shared_ptr<const AudioInput> make_whisper_window_audio(const Whisper& model, std::span<const float> samples_16k);

/// make_whisper_request over a window's audio made by make_whisper_window_audio.
Request make_whisper_request(const Whisper& model, std::shared_ptr<const AudioInput> window,
                             const WhisperPromptOptions& options, SamplingParams sampling = whisper_sampling());
/// make_whisper_language_probe over a window's audio made by make_whisper_window_audio.
Request make_whisper_language_probe(const Whisper& model, std::shared_ptr<const AudioInput> window);

/// Language identification and the no-speech probability of one window: a
/// request that generates one token, the most probable language token. Its
/// logprobs[0]: token = that language, logprob = log P(language | languages),
/// top = the languages, most probable first (up to 20), then one last entry,
/// <|nospeech|> with its log-probability over the whole vocabulary at the
/// <|startoftranscript|> position (openai-whisper's no_speech_prob is its
/// exp). For .en models the "language" is always English.
Request make_whisper_language_probe(const Whisper& model, std::span<const float> samples_16k);

}  // namespace izwi

#include "izwi/models/impl/whisper_request.hpp"
