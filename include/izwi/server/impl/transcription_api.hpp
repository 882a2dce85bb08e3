#pragma once
// Bodies of include/izwi/server/transcription_api.hpp.

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <system_error>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "izwi/core/detail/utf8.hpp"
#include "izwi/core/sampling_params.hpp"
#include "izwi/server/detail/json_fields.hpp"

namespace izwi::server::openai {

namespace detail {

/// openai-whisper's language names, in tokenizer::whisper_languages' order.
inline constexpr std::array<std::string_view, 100> whisper_language_names = {
    "english", "chinese", "german", "spanish", "russian", "korean", "french", "japanese", "portuguese", "turkish",
    "polish", "catalan", "dutch", "arabic", "swedish", "italian", "indonesian", "hindi", "finnish", "vietnamese",
    "hebrew", "ukrainian", "greek", "malay", "czech", "romanian", "danish", "hungarian", "tamil", "norwegian",
    "thai", "urdu", "croatian", "bulgarian", "lithuanian", "latin", "maori", "malayalam", "welsh", "slovak",
    "telugu", "persian", "latvian", "bengali", "serbian", "azerbaijani", "slovenian", "kannada", "estonian",
    "macedonian", "breton", "basque", "icelandic", "armenian", "nepali", "mongolian", "bosnian", "kazakh",
    "albanian", "swahili", "galician", "marathi", "punjabi", "sinhala", "khmer", "shona", "yoruba", "somali",
    "afrikaans", "occitan", "georgian", "belarusian", "tajik", "sindhi", "gujarati", "amharic", "yiddish", "lao",
    "uzbek", "faroese", "haitian creole", "pashto", "turkmen", "nynorsk", "maltese", "sanskrit", "luxembourgish",
    "myanmar", "tibetan", "tagalog", "malagasy", "assamese", "tatar", "hawaiian", "lingala", "hausa", "bashkir",
    "javanese", "sundanese", "cantonese"};

inline std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

inline std::string_view trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

/// A text field (valid UTF-8; the file is the only binary part).
inline std::string text_field(const multipart::Part& part) {
  if (!izwi::detail::is_valid_utf8(part.body))
    throw ApiError::bad_request("'" + part.name + "' is not valid UTF-8 text.", part.name);
  return std::string(part.body);
}

inline std::vector<const multipart::Part*> list_field(const multipart::FormData& form, std::string_view name) {
  std::vector<const multipart::Part*> out = form.find_all(name);
  for (const auto* p : form.find_all(std::string(name) + "[]")) out.push_back(p);
  return out;
}

inline double number_field(const multipart::Part& part, std::string_view name) {
  const std::string text(trimmed(part.body));
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value))
    throw ApiError::bad_request("'" + std::string(name) + "' must be a number, got '" +
                                    openai::sanitize_utf8(text.substr(0, 40)) + "'.",
                                std::string(name));
  return value;
}

inline bool bool_field(const multipart::Part& part, std::string_view name) {
  const std::string v = lower(trimmed(part.body));
  if (v == "true" || v == "1") return true;
  if (v == "false" || v == "0" || v.empty()) return false;
  throw ApiError::bad_request("'" + std::string(name) + "' must be true or false.", std::string(name));
}

inline std::string language_code(std::string_view given) {
  const std::string wanted = lower(trimmed(given));
  for (std::size_t i = 0; i < tokenizer::whisper_languages.size(); ++i)
    if (wanted == tokenizer::whisper_languages[i] || wanted == whisper_language_names[i])
      return std::string(tokenizer::whisper_languages[i]);
  std::string valid;
  for (std::string_view code : tokenizer::whisper_languages) valid += (valid.empty() ? "" : ", ") + std::string(code);
  throw ApiError::bad_request("Unknown language '" + openai::sanitize_utf8(wanted.substr(0, 40)) +
                                  "'; valid codes: " + valid + ".",
                              "language");
}

inline void read_vad_number(const boost::json::object& o, std::string_view key, double& out) {
  if (const auto* v = find_field(o, key)) out = read_number(*v, "chunking_strategy." + std::string(key));
}

/// "auto", a JSON object, or the SDK's chunking_strategy[key] fields.
inline std::optional<asr::VadChunkingOptions> chunking_field(const multipart::FormData& form) {
  asr::VadChunkingOptions vad;
  boost::json::object object;
  if (const auto* p = form.single("chunking_strategy")) {
    const std::string text(trimmed(p->body));
    if (text.empty() || text == "null") return std::nullopt;
    if (text == "auto") return vad;
    boost::system::error_code ec;
    boost::json::value parsed = boost::json::parse(text, ec);
    if (ec || !parsed.is_object())
      throw ApiError::bad_request("'chunking_strategy' must be \"auto\" or an object {\"type\": \"server_vad\", ...}.",
                                  "chunking_strategy");
    object = std::move(parsed.get_object());
  } else {
    bool any = false;
    for (const multipart::Part& part : form.parts) {
      constexpr std::string_view prefix = "chunking_strategy[";
      if (part.name.size() <= prefix.size() + 1 || part.name.compare(0, prefix.size(), prefix) != 0 ||
          part.name.back() != ']')
        continue;
      const std::string key = part.name.substr(prefix.size(), part.name.size() - prefix.size() - 1);
      any = true;
      if (object.contains(key))
        throw ApiError::bad_request("'" + part.name + "' is given more than once; send it once.",
                                    "chunking_strategy." + key);
      if (key == "type") object[key] = text_field(part);
      else object[key] = number_field(part, "chunking_strategy." + key);
    }
    if (!any) return std::nullopt;
  }
  const auto* type = find_field(object, "type");
  if (!type || !type->is_string() || type->get_string() != "server_vad")
    throw ApiError::bad_request("'chunking_strategy.type' must be \"server_vad\".", "chunking_strategy.type");
  double threshold = vad.threshold;
  read_vad_number(object, "threshold", threshold);
  read_vad_number(object, "prefix_padding_ms", vad.prefix_padding_ms);
  read_vad_number(object, "silence_duration_ms", vad.silence_duration_ms);
  if (!(threshold >= 0 && threshold <= 1))
    throw ApiError::bad_request("'chunking_strategy.threshold' must be in [0, 1].", "chunking_strategy.threshold");
  if (vad.prefix_padding_ms < 0 || vad.silence_duration_ms < 0)
    throw ApiError::bad_request("chunking_strategy durations must not be negative.", "chunking_strategy");
  vad.threshold = static_cast<float>(threshold);
  return vad;
}

inline TranscriptionFormat format_field(const multipart::Part& part) {
  const std::string v(trimmed(part.body));
  if (v == "json" || v.empty()) return TranscriptionFormat::json;
  if (v == "text") return TranscriptionFormat::text;
  if (v == "srt") return TranscriptionFormat::srt;
  if (v == "verbose_json") return TranscriptionFormat::verbose_json;
  if (v == "vtt") return TranscriptionFormat::vtt;
  throw ApiError::bad_request("'response_format' must be one of json, text, srt, verbose_json, vtt; got '" +
                                  openai::sanitize_utf8(v.substr(0, 40)) + "'.",
                              "response_format");
}

/// A number in [0, 1] (temperatures and their step).
inline float unit_interval_field(const multipart::Part& p, std::string_view name) {
  const double v = number_field(p, name);
  if (!(v >= 0 && v <= 1))
    throw ApiError::bad_request("'" + std::string(name) + "' must be in [0, 1].", std::string(name));
  return static_cast<float>(v);
}

/// Candidates a best_of may ask for: each is a whole decode in the engine.
inline constexpr std::size_t max_best_of = 16;

/// A whole number in [1, max]; 1 when the field is absent.
inline std::size_t count_field(const multipart::FormData& form, std::string_view name, std::size_t max) {
  const multipart::Part* p = form.single(name);
  if (!p) return 1;
  const double v = number_field(*p, name);
  if (!(v >= 1 && v <= static_cast<double>(max)) || v != std::floor(v))
    throw ApiError::bad_request("'" + std::string(name) + "' must be a whole number in [1, " + std::to_string(max) +
                                    "].",
                                std::string(name));
  return static_cast<std::size_t>(v);
}

}  // namespace detail

inline TranscriptionRequest parse_transcription_request(const multipart::FormData& form, bool translation) {
  using namespace detail;
  TranscriptionRequest r;
  const multipart::Part* file = form.single("file");
  if (!file) throw ApiError::bad_request("You must provide a 'file' field holding the audio.", "file");
  r.file = file->body;
  r.filename = file->filename;
  if (const auto* p = form.single("model")) r.model = std::string(trimmed(text_field(*p)));
  if (const auto* p = form.single("prompt")) r.prompt = text_field(*p);
  if (const auto* p = form.single("response_format")) r.response_format = format_field(*p);
  if (const auto* p = form.single("temperature")) r.temperature = unit_interval_field(*p, "temperature");
  if (const auto* p = form.single("temperature_inc")) r.temperature_increment = unit_interval_field(*p, "temperature_inc");
  if (const auto* p = form.single("no_timestamps")) r.timestamps = !bool_field(*p, "no_timestamps");
  r.beam_size = count_field(form, "beam_size", SamplingParams::max_logprobs - 1);
  r.best_of = count_field(form, "best_of", max_best_of);
  if (const auto granularities = list_field(form, "timestamp_granularities"); !granularities.empty()) {
    r.granularities = {false, false};
    for (const auto* p : granularities) {
      const std::string v(trimmed(p->body));
      if (v == "word")
        r.granularities.word = true;
      else if (v == "segment")
        r.granularities.segment = true;
      else
        throw ApiError::bad_request("timestamp_granularities holds 'word' or 'segment'.", "timestamp_granularities");
    }
    if (r.response_format != TranscriptionFormat::verbose_json)
      throw ApiError::bad_request("timestamp_granularities needs response_format 'verbose_json'.",
                                  "timestamp_granularities");
  }
  if (translation) return r;
  if (const auto* p = form.single("language"); p && !trimmed(p->body).empty())
    r.language = language_code(text_field(*p));
  if (const auto* p = form.single("stream")) r.stream = bool_field(*p, "stream");
  for (const auto* p : list_field(form, "include")) {
    const std::string v(trimmed(p->body));
    if (v != "logprobs") throw ApiError::bad_request("include[] accepts 'logprobs' only.", "include");
    r.logprobs = true;
  }
  r.vad = chunking_field(form);
  return r;
}

inline std::string_view to_string(TranscriptionFormat format) noexcept {
  switch (format) {
    case TranscriptionFormat::json: return "json";
    case TranscriptionFormat::text: return "text";
    case TranscriptionFormat::srt: return "srt";
    case TranscriptionFormat::verbose_json: return "verbose_json";
    case TranscriptionFormat::vtt: return "vtt";
  }
  return "json";
}

inline std::string_view content_type(TranscriptionFormat format) noexcept {
  switch (format) {
    case TranscriptionFormat::json:
    case TranscriptionFormat::verbose_json: return "application/json";
    case TranscriptionFormat::vtt: return "text/vtt; charset=utf-8";
    default: return "text/plain; charset=utf-8";
  }
}

inline std::string_view language_name(std::string_view code) noexcept {
  for (std::size_t i = 0; i < tokenizer::whisper_languages.size(); ++i)
    if (tokenizer::whisper_languages[i] == code) return detail::whisper_language_names[i];
  return code;
}

inline std::string format_timestamp(double seconds, char decimal_marker) {
  if (!(seconds > 0)) seconds = 0;
  auto ms = static_cast<long long>(std::llround(seconds * 1000.0));
  const long long hours = ms / 3'600'000;
  ms -= hours * 3'600'000;
  const long long minutes = ms / 60'000;
  ms -= minutes * 60'000;
  const long long secs = ms / 1000;
  ms -= secs * 1000;
  char buf[96];
  std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld%c%03lld", hours, minutes, secs, decimal_marker, ms);
  return buf;
}

inline boost::json::array transcription_logprobs_json(std::span<const TokenLogprob> tokens) {
  boost::json::array out;
  out.reserve(tokens.size());
  for (const TokenLogprob& t : tokens) {
    boost::json::object entry;
    entry["token"] = sanitize_utf8(t.token);
    entry["logprob"] = std::isfinite(t.logprob) ? static_cast<double>(t.logprob) : -9999.0;
    boost::json::array bytes;
    for (char c : t.token) bytes.emplace_back(static_cast<std::int64_t>(static_cast<unsigned char>(c)));
    entry["bytes"] = std::move(bytes);
    out.emplace_back(std::move(entry));
  }
  return out;
}

inline boost::json::object duration_usage_json(double seconds) {
  boost::json::object usage;
  usage["type"] = "duration";
  usage["seconds"] = static_cast<std::int64_t>(std::ceil(seconds > 0 ? seconds - 1e-9 : 0));
  return usage;
}

inline boost::json::object verbose_transcription_json(const asr::Transcription& result, bool translation,
                                                      VerboseContents contents) {
  boost::json::object out;
  out["task"] = translation ? "translate" : "transcribe";
  out["language"] = language_name(result.language);
  out["duration"] = result.duration;
  out["text"] = sanitize_utf8(result.text);
  boost::json::array segments;
  for (const asr::Segment& s : result.segments) {
    boost::json::object o;
    o["id"] = s.id;
    o["seek"] = s.seek;
    // Milliseconds: offsets plus 0.02-s steps carry binary noise (24.720000000000002).
    o["start"] = std::round(s.start * 1000.0) / 1000.0;
    o["end"] = std::round(s.end * 1000.0) / 1000.0;
    o["text"] = sanitize_utf8(s.text);
    boost::json::array tokens;
    for (TokenId t : s.tokens) tokens.emplace_back(static_cast<std::int64_t>(t));
    o["tokens"] = std::move(tokens);
    o["temperature"] = static_cast<double>(s.temperature);
    o["avg_logprob"] = s.avg_logprob;
    o["compression_ratio"] = s.compression_ratio;
    o["no_speech_prob"] = s.no_speech_prob;
    segments.emplace_back(std::move(o));
  }
  if (contents.segments) out["segments"] = std::move(segments);
  if (contents.words) {
    boost::json::array words;
    for (const asr::Word& w : *contents.words)
      words.emplace_back(boost::json::object{{"word", sanitize_utf8(w.word)},
                                             {"start", std::round(w.start * 1000.0) / 1000.0},
                                             {"end", std::round(w.end * 1000.0) / 1000.0}});
    out["words"] = std::move(words);
  }
  out["usage"] = duration_usage_json(result.duration);
  return out;
}

namespace detail {

inline std::string subtitles(const asr::Transcription& result, bool vtt) {
  std::string out = vtt ? "WEBVTT\n\n" : "";
  std::size_t index = 0;
  for (const asr::Segment& s : result.segments) {
    const std::string_view spoken = trimmed(s.text);
    if (spoken.empty()) continue;
    // "-->" inside a cue would read as a timing line: written "->".
    std::string text;
    for (std::size_t i = 0; i < spoken.size(); ++i) {
      if (spoken.compare(i, 3, "-->") == 0) {
        text += "->";
        i += 2;
      } else {
        text += spoken[i];
      }
    }
    text = sanitize_utf8(text);
    if (!vtt) out += std::to_string(++index) + "\n";
    const char marker = vtt ? '.' : ',';
    out += format_timestamp(s.start, marker) + " --> " + format_timestamp(s.end, marker) + "\n" + text + "\n\n";
  }
  return out;
}

}  // namespace detail

inline std::string srt_text(const asr::Transcription& result) { return detail::subtitles(result, false); }
inline std::string vtt_text(const asr::Transcription& result) { return detail::subtitles(result, true); }

inline std::string transcription_body(const asr::Transcription& result, TranscriptionFormat format, bool translation,
                                      const boost::json::array* logprobs, VerboseContents verbose) {
  switch (format) {
    case TranscriptionFormat::text: return sanitize_utf8(result.text) + "\n";
    case TranscriptionFormat::srt: return srt_text(result);
    case TranscriptionFormat::vtt: return vtt_text(result);
    case TranscriptionFormat::verbose_json:
      return boost::json::serialize(verbose_transcription_json(result, translation, verbose));
    case TranscriptionFormat::json: break;
  }
  boost::json::object out;
  out["text"] = sanitize_utf8(result.text);
  if (logprobs) out["logprobs"] = *logprobs;
  out["usage"] = duration_usage_json(result.duration);
  return boost::json::serialize(out);
}

inline boost::json::object transcript_delta_event(std::string_view delta, const boost::json::array* logprobs) {
  boost::json::object out;
  out["type"] = "transcript.text.delta";
  out["delta"] = sanitize_utf8(delta);
  if (logprobs) out["logprobs"] = *logprobs;
  return out;
}

inline boost::json::object transcript_done_event(std::string_view text, double seconds,
                                                 const boost::json::array* logprobs) {
  boost::json::object out;
  out["type"] = "transcript.text.done";
  out["text"] = sanitize_utf8(text);
  if (logprobs) out["logprobs"] = *logprobs;
  out["usage"] = duration_usage_json(seconds);
  return out;
}

}  // namespace izwi::server::openai
