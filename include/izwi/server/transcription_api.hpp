#pragma once
// OpenAI's /v1/audio/transcriptions and /v1/audio/translations protocol:
// the multipart form a client sends, and every response format.
//
//   form fields   file (required), model, language, prompt, response_format
//                 (json | text | srt | verbose_json | vtt), temperature (0..1),
//                 timestamp_granularities[] (segment, word; verbose_json only),
//                 stream ("true": SSE), chunking_strategy ("auto", or
//                 {"type": "server_vad", threshold, prefix_padding_ms,
//                 silence_duration_ms} as JSON text or as the SDK's
//                 chunking_strategy[type] fields), include[] (logprobs);
//                 izwi's extensions, named as whisper.cpp's server names them:
//                 beam_size (1..19: beam search at temperature 0; 1 greedy),
//                 best_of (1..16: sampled decodes per temperature above 0),
//                 temperature_inc (0..1, default 0.2: the fallback's step; 0
//                 turns the fallback off, one decode per window),
//                 no_timestamps ("true": decode after <|notimestamps|>, one
//                 segment per 30-s window).
//   responses     json          {"text", ["logprobs"], "usage": {"type": "duration", "seconds"}}
//                 text          the text and a newline (text/plain)
//                 srt, vtt      subtitles of the segments
//                 verbose_json  {"task", "language", "duration", "text", "segments": [...],
//                               ["words": [{"word", "start", "end"}]], "usage"}
//                 stream        data: {"type": "transcript.text.delta", "delta"[, "logprobs"]}
//                               ... data: {"type": "transcript.text.done", "text"[, "logprobs"], "usage"}
//                               (with response_format verbose_json, izwi adds verbose_json's
//                               "language", "duration" and "segments" to the done event)
//
// Pure like openai.hpp: Boost.JSON and the form parser, no Beast, no engine.
// Parse errors are ApiError 400 naming the field.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include "izwi/asr/chunking.hpp"
#include "izwi/asr/transcriber.hpp"
#include "izwi/server/multipart.hpp"
#include "izwi/server/openai.hpp"

namespace izwi::server::openai {

enum class TranscriptionFormat : std::uint8_t { json, text, srt, verbose_json, vtt };

/// A transcription or translation request, parsed and checked (the model's
/// own checks — language known, task served — come later).
/// timestamp_granularities[]: which timestamps verbose_json carries. None
/// given: segments only (OpenAI's default).
struct TimestampGranularities {
  bool segment = true;
  bool word = false;
};

struct TranscriptionRequest {
  /// The uploaded file's bytes: a view into the request body.
  std::string_view file;
  std::optional<std::string> filename;
  std::string model;
  /// Lower-case code; unset: detect (always unset for translations).
  std::optional<std::string> language;
  std::string prompt;
  TranscriptionFormat response_format = TranscriptionFormat::json;
  float temperature = 0.0f;
  /// Extensions (whisper.cpp's server, openai-whisper's CLI): beam width at
  /// temperature 0, sampled candidates above it.
  std::size_t beam_size = 1;
  std::size_t best_of = 1;
  /// The temperature fallback's step (whisper.cpp's server field); 0: none.
  float temperature_increment = 0.2f;
  /// no_timestamps (whisper.cpp's server field) inverted.
  bool timestamps = true;
  bool stream = false;
  bool logprobs = false;
  TimestampGranularities granularities;
  /// chunking_strategy given: the VAD fast path with these parameters.
  std::optional<asr::VadChunkingOptions> vad;
};

/// Reads the form. `translation`: the translations endpoint (no language,
/// stream, include[] or chunking_strategy fields are looked at there, as OpenAI's).
TranscriptionRequest parse_transcription_request(const multipart::FormData& form, bool translation);

/// "json", "text", ...
std::string_view to_string(TranscriptionFormat format) noexcept;
/// The Content-Type of a non-streamed response in that format.
std::string_view content_type(TranscriptionFormat format) noexcept;

/// "english" for "en" (openai-whisper's names, as verbose_json reports them); the code itself when unknown.
std::string_view language_name(std::string_view code) noexcept;

/// "HH:MM:SS,mmm" (marker ',') or "HH:MM:SS.mmm" ('.'); milliseconds rounded.
std::string format_timestamp(double seconds, char decimal_marker);

/// One entry per token: {"token", "logprob", "bytes"}.
boost::json::array transcription_logprobs_json(std::span<const TokenLogprob> tokens);

/// {"type": "duration", "seconds": N} (whole seconds, rounded up, as OpenAI bills).
boost::json::object duration_usage_json(double seconds);

/// What verbose_json carries besides the text.
struct VerboseContents {
  bool segments = true;
  /// The words (timestamp_granularities[]=word), or null: no "words" field.
  const std::vector<asr::Word>* words = nullptr;
};

/// The body of a non-streamed response. `logprobs`: json format only
/// (transcription_logprobs_json of the text tokens), or null.
std::string transcription_body(const asr::Transcription& result, TranscriptionFormat format, bool translation,
                               const boost::json::array* logprobs = nullptr, VerboseContents verbose = {});
/// verbose_json's object.
boost::json::object verbose_transcription_json(const asr::Transcription& result, bool translation,
                                               VerboseContents contents = {});
/// SubRip and WebVTT texts of the segments (empty segments left out).
std::string srt_text(const asr::Transcription& result);
std::string vtt_text(const asr::Transcription& result);

/// Streamed events (serialize and frame with sse::data).
boost::json::object transcript_delta_event(std::string_view delta, const boost::json::array* logprobs = nullptr);
boost::json::object transcript_done_event(std::string_view text, double seconds,
                                          const boost::json::array* logprobs = nullptr);

}  // namespace izwi::server::openai

#include "izwi/server/impl/transcription_api.hpp"
