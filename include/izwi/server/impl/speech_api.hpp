#pragma once
// Bodies of izwi/server/speech_api.hpp.

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <exception>
#include <fstream>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <system_error>

#include <boost/json/array.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "izwi/audio/time_stretch.hpp"
#include "izwi/core/detail/utf8.hpp"
#include "izwi/server/detail/json_fields.hpp"

namespace izwi::server::openai {

namespace detail {

inline std::string_view speech_trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

inline std::string lower_ascii(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Qwen3-TTS CustomVoice's published speakers, women first and men second, so
// that OpenAI's lighter voices map to women's and the deeper ones to men's.
inline constexpr std::array<std::string_view, 4> female_speakers{"vivian", "serena", "ono_anna", "sohee"};
inline constexpr std::array<std::string_view, 4> female_speakers_b{"serena", "vivian", "sohee", "ono_anna"};
inline constexpr std::array<std::string_view, 5> male_speakers{"ryan", "aiden", "eric", "dylan", "uncle_fu"};
inline constexpr std::array<std::string_view, 5> male_speakers_b{"aiden", "ryan", "dylan", "eric", "uncle_fu"};

inline constexpr std::array<SpeechVoiceAlias, 13> voice_aliases{{
    {"alloy", female_speakers},  {"ash", male_speakers},      {"ballad", male_speakers_b},
    {"coral", female_speakers_b}, {"echo", male_speakers},    {"fable", male_speakers_b},
    {"onyx", male_speakers},     {"nova", female_speakers},   {"sage", female_speakers_b},
    {"shimmer", female_speakers}, {"verse", male_speakers_b}, {"marin", female_speakers_b},
    {"cedar", male_speakers},
}};

inline audio::AudioFormat speech_format_field(const boost::json::value& v) {
  const std::string name = izwi::server::detail::read_string(v, "response_format");
  if (const auto format = audio::parse_audio_format(lower_ascii(name))) return *format;
  throw ApiError::bad_request("'response_format' must be one of " + speech_formats_list() + "; got '" +
                                  sanitize_utf8(name.substr(0, 40)) + "'.",
                              "response_format");
}

inline SpeechStreamFormat stream_format_field(const boost::json::value& v) {
  const std::string name = lower_ascii(izwi::server::detail::read_string(v, "stream_format"));
  if (name == "audio") return SpeechStreamFormat::audio;
  if (name == "sse") return SpeechStreamFormat::sse;
  throw ApiError::bad_request("'stream_format' must be \"audio\" or \"sse\"; got '" +
                                  sanitize_utf8(name.substr(0, 40)) + "'.",
                              "stream_format");
}

/// "voice": a name, or {"id": "..."} (a saved voice).
inline void voice_field(const boost::json::value& v, SpeechRequest& r) {
  using namespace izwi::server::detail;
  if (v.is_object()) {
    const auto* id = find_field(v.get_object(), "id");
    if (!id) throw_invalid("voice.id", "'voice' as an object needs an 'id' (a saved voice's id)");
    r.voice = read_string(*id, "voice.id");
    r.voice_is_saved_id = true;
  } else {
    r.voice = std::string(speech_trimmed(read_string(v, "voice")));
  }
  if (r.voice.empty()) throw_invalid("voice", "'voice' must not be empty");
}

/// "reference_audio": base64, or a data: URL ("data:audio/wav;base64,...").
inline std::string reference_audio_field(const boost::json::value& v) {
  std::string text = izwi::server::detail::read_string(v, "reference_audio");
  std::string_view payload = text;
  if (payload.substr(0, 5) == "data:") {
    const std::size_t comma = payload.find(',');
    if (comma == std::string_view::npos || payload.substr(0, comma).find(";base64") == std::string_view::npos)
      throw ApiError::bad_request("'reference_audio' as a data: URL must be base64 (data:audio/wav;base64,...).",
                                  "reference_audio");
    payload.remove_prefix(comma + 1);
  }
  std::optional<std::string> bytes = base64_decode(payload);
  if (!bytes) throw ApiError::bad_request("'reference_audio' is not valid base64.", "reference_audio");
  if (bytes->empty()) throw ApiError::bad_request("'reference_audio' is empty.", "reference_audio");
  return std::move(*bytes);
}

inline void read_input(const boost::json::object& body, SpeechRequest& r) {
  using namespace izwi::server::detail;
  const auto* input = find_field(body, "input");
  if (!input) throw_invalid("input", "'input' is required: the text to speak");
  r.input = read_string(*input, "input");
  const std::size_t characters = izwi::detail::count_code_points(r.input);
  if (speech_trimmed(r.input).empty()) throw_invalid("input", "'input' must not be empty");
  if (characters > max_speech_input_characters)
    throw_invalid("input", "'input' is " + std::to_string(characters) + " characters long; the maximum is " +
                               std::to_string(max_speech_input_characters));
}

/// Kokoro-FastAPI's NormalizationOptions: each key a boolean, absent keys at
/// Kokoro-FastAPI's defaults (text::SpeechTextOptions{}), unknown keys ignored.
inline text::SpeechTextOptions normalization_options_field(const boost::json::value& value) {
  using namespace izwi::server::detail;
  const boost::json::object& object = read_object(value, "normalization_options");
  text::SpeechTextOptions o;
  const std::pair<std::string_view, bool text::SpeechTextOptions::*> fields[] = {
      {"normalize", &text::SpeechTextOptions::normalize},
      {"unit_normalization", &text::SpeechTextOptions::unit_normalization},
      {"url_normalization", &text::SpeechTextOptions::url_normalization},
      {"email_normalization", &text::SpeechTextOptions::email_normalization},
      {"optional_pluralization_normalization", &text::SpeechTextOptions::optional_pluralization_normalization},
      {"phone_normalization", &text::SpeechTextOptions::phone_normalization},
      {"replace_remaining_symbols", &text::SpeechTextOptions::replace_remaining_symbols},
  };
  for (const auto& [key, member] : fields)
    if (const auto* v = find_field(object, key)) o.*member = read_bool(*v, json_path("normalization_options", key));
  return o;
}

inline void read_extensions(const boost::json::object& body, SpeechRequest& r) {
  using namespace izwi::server::detail;
  if (const auto* v = find_field(body, "language")) {
    r.language = lower_ascii(speech_trimmed(read_string(*v, "language")));
    if (r.language.empty()) r.language = "auto";
  }
  if (const auto* v = find_field(body, "seed"))
    r.seed = static_cast<std::uint64_t>(read_integer(*v, "seed", 0, std::numeric_limits<std::int64_t>::max()));
  if (const auto* v = find_field(body, "temperature")) {
    const double t = read_number(*v, "temperature");
    if (!(t >= 0 && t <= 2)) throw_invalid("temperature", "'temperature' must be in [0, 2]");
    r.temperature = static_cast<float>(t);
  }
  if (const auto* v = find_field(body, "top_k")) {
    const std::int64_t k = read_integer(*v, "top_k", -1, 1 << 20);
    if (k == 0) throw_invalid("top_k", "'top_k' must be -1 (no limit) or at least 1");
    r.top_k = static_cast<std::int32_t>(k);
  }
  if (const auto* v = find_field(body, "max_tokens"))
    r.max_frames = static_cast<std::uint32_t>(read_integer(*v, "max_tokens", 1, 1 << 20));
  if (const auto* v = find_field(body, "reference_audio")) r.reference_audio = reference_audio_field(*v);
  if (const auto* v = find_field(body, "reference_text")) r.reference_text = read_string(*v, "reference_text");
  if (const auto* v = find_field(body, "normalization_options"))
    r.normalization = normalization_options_field(*v);
  if (!r.reference_text.empty() && r.reference_audio.empty())
    throw_invalid("reference_audio", "'reference_text' is the transcript of 'reference_audio', which is missing");
}

}  // namespace detail

inline SpeechRequest parse_speech_request(std::string_view body) { return parse_speech_request(parse_json_object(body)); }

inline SpeechRequest parse_speech_request(const boost::json::object& body) {
  using namespace izwi::server::detail;
  SpeechRequest r;
  if (const auto* v = find_field(body, "model")) r.model = std::string(detail::speech_trimmed(read_string(*v, "model")));
  detail::read_input(body, r);
  if (const auto* v = find_field(body, "voice")) detail::voice_field(*v, r);
  if (const auto* v = find_field(body, "instructions")) r.instructions = read_string(*v, "instructions");
  if (const auto* v = find_field(body, "response_format")) r.response_format = detail::speech_format_field(*v);
  if (const auto* v = find_field(body, "speed")) {
    r.speed = read_number(*v, "speed");
    if (!(r.speed >= audio::min_speed && r.speed <= audio::max_speed))
      throw_invalid("speed", "'speed' must be in [0.25, 4.0]");
  }
  if (const auto* v = find_field(body, "stream")) {
    if (read_bool(*v, "stream")) r.stream_format = SpeechStreamFormat::audio;
  }
  if (const auto* v = find_field(body, "stream_format")) r.stream_format = detail::stream_format_field(*v);
  detail::read_extensions(body, r);
  // OpenAI requires a voice; a reference recording is a voice too.
  if (r.voice.empty() && r.reference_audio.empty())
    throw_invalid("voice", "'voice' is required: a speaker of the model, an OpenAI voice name "
                           "(alloy, ash, ...) or {\"id\": a saved voice}");
  return r;
}

inline std::span<const SpeechVoiceAlias> speech_voice_aliases() noexcept { return detail::voice_aliases; }

inline std::optional<std::string> resolve_speaker(std::string_view voice, const SpeechVoices& voices) {
  if (voices.speakers.empty()) return std::nullopt;
  const std::string name = detail::lower_ascii(voice);
  for (const std::string& s : voices.speakers)
    if (s == name) return s;
  for (const SpeechVoiceAlias& alias : speech_voice_aliases()) {
    if (alias.name != name) continue;
    for (std::string_view wanted : alias.speakers)
      for (const std::string& s : voices.speakers)
        if (s == wanted) return s;
    return voices.speakers.front();
  }
  return std::nullopt;
}

inline std::string speech_formats_list() { return "mp3, opus, aac, flac, wav, pcm"; }

inline boost::json::object speech_audio_delta_event(std::span<const std::byte> bytes) {
  return {{"type", "speech.audio.delta"}, {"audio", base64_encode(bytes)}};
}

inline boost::json::object speech_audio_done_event(std::uint64_t input_tokens, std::uint64_t output_tokens) {
  return {{"type", "speech.audio.done"},
          {"usage",
           {{"input_tokens", input_tokens}, {"output_tokens", output_tokens}, {"total_tokens", input_tokens + output_tokens}}}};
}

inline std::string base64_encode(std::span<const std::byte> bytes) {
  static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const auto v = (std::to_integer<std::uint32_t>(bytes[i]) << 16) | (std::to_integer<std::uint32_t>(bytes[i + 1]) << 8) |
                   std::to_integer<std::uint32_t>(bytes[i + 2]);
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += alphabet[(v >> 6) & 63];
    out += alphabet[v & 63];
  }
  if (const std::size_t left = bytes.size() - i; left > 0) {
    std::uint32_t v = std::to_integer<std::uint32_t>(bytes[i]) << 16;
    if (left == 2) v |= std::to_integer<std::uint32_t>(bytes[i + 1]) << 8;
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += left == 2 ? alphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

inline std::optional<std::string> base64_decode(std::string_view text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
  };
  std::string out;
  out.reserve(text.size() / 4 * 3);
  std::uint32_t bits = 0;
  int count = 0;
  std::size_t padding = 0;
  for (const char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    if (c == '=') {
      ++padding;
      continue;
    }
    const int v = value(c);
    if (v < 0 || padding > 0) return std::nullopt;  // a stray character, or data after padding
    bits = (bits << 6) | static_cast<std::uint32_t>(v);
    if (++count == 4) {
      out += static_cast<char>((bits >> 16) & 0xFF);
      out += static_cast<char>((bits >> 8) & 0xFF);
      out += static_cast<char>(bits & 0xFF);
      bits = 0;
      count = 0;
    }
  }
  if (count == 1 || padding > 2) return std::nullopt;
  if (count == 2) out += static_cast<char>((bits >> 4) & 0xFF);
  if (count == 3) {
    out += static_cast<char>((bits >> 10) & 0xFF);
    out += static_cast<char>((bits >> 2) & 0xFF);
  }
  return out;
}

// --- saved voices -----------------------------------------------------------------

namespace detail {

/// A saved voice's id as make_response_id writes it: "voice_" and letters or
/// digits. Anything else in a voices directory is not ours (and could not be
/// a safe file name).
inline bool is_saved_voice_id(std::string_view id) {
  if (id.size() <= 6 || id.size() > 64 || id.substr(0, 6) != "voice_") return false;
  return std::all_of(id.begin() + 6, id.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)); });
}

/// Writes `bytes` to `file` through a temporary name in the same directory,
/// so the file is either the old one or complete.
inline void write_file_atomically(const std::filesystem::path& file, std::string_view bytes) {
  std::filesystem::path temporary = file;
  temporary += ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) throw std::runtime_error("cannot write " + temporary.string());
  }
  std::error_code ec;
  std::filesystem::rename(temporary, file, ec);
  if (ec) {
    std::filesystem::remove(temporary, ec);
    throw std::runtime_error("cannot rename to " + file.string());
  }
}

inline std::string read_whole_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + file.filename().string());
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw std::runtime_error("cannot read " + file.filename().string());
  return bytes;
}

}  // namespace detail

inline std::vector<std::string> VoiceStore::persist_in(const std::filesystem::path& directory,
                                                       const RecordingDecoder& decode) {
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec || !std::filesystem::is_directory(directory))
    throw std::runtime_error("the voices directory " + directory.string() + " cannot be created: " +
                             (ec ? ec.message() : "it is not a directory"));
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {  // throws when unreadable
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> problems;
  std::lock_guard lock(mutex_);
  directory_ = directory;
  for (const auto& file : files) {
    if (voices_.size() >= max_voices_) {
      problems.push_back(file.filename().string() + ": skipped, the store holds its limit of " +
                         std::to_string(max_voices_) + " voices");
      continue;
    }
    if (std::optional<SavedVoice> voice = read_files(file, decode, problems)) voices_.emplace(voice->id, std::move(*voice));
  }
  return problems;
}

inline std::optional<SavedVoice> VoiceStore::read_files(const std::filesystem::path& json_file,
                                                        const RecordingDecoder& decode,
                                                        std::vector<std::string>& problems) const {
  const std::string name = json_file.filename().string();
  try {
    const std::string id = json_file.stem().string();
    if (!detail::is_saved_voice_id(id)) throw std::runtime_error("not a saved voice's file name");
    boost::system::error_code ec;
    const boost::json::value value = boost::json::parse(detail::read_whole_file(json_file), ec);
    if (ec || !value.is_object()) throw std::runtime_error("not a JSON object");
    const boost::json::object& object = value.get_object();
    const auto field = [&](std::string_view key) -> const boost::json::value& {
      const boost::json::value* v = server::detail::find_field(object, key);
      if (!v) throw std::runtime_error("no \"" + std::string(key) + "\"");
      return *v;
    };
    SavedVoice voice;
    voice.id = server::detail::read_string(field("id"), "id");
    if (voice.id != id) throw std::runtime_error("its \"id\" is " + voice.id + ", not the file's name");
    voice.name = server::detail::read_string(field("name"), "name");
    voice.created_at = server::detail::read_integer(field("created_at"), "created_at", 0,
                                                    std::numeric_limits<std::int64_t>::max());
    voice.reference_text = server::detail::read_string(field("reference_text"), "reference_text");
    voice.sample_rate =
        static_cast<std::uint32_t>(server::detail::read_integer(field("sample_rate"), "sample_rate", 1, 1'000'000));
    std::filesystem::path recording = json_file;
    recording.replace_extension(".recording");
    voice.samples = decode(detail::read_whole_file(recording));
    if (!voice.samples || voice.samples->empty()) throw std::runtime_error("its recording holds no audio");
    return voice;
  } catch (const std::exception& error) {
    problems.push_back(name + ": skipped, " + error.what());
    return std::nullopt;
  }
}

inline void VoiceStore::write_files(const SavedVoice& voice, std::string_view recording) const {
  const std::filesystem::path base = *directory_ / voice.id;
  const boost::json::object metadata{{"id", voice.id},
                                     {"name", voice.name},
                                     {"created_at", voice.created_at},
                                     {"reference_text", voice.reference_text},
                                     {"sample_rate", voice.sample_rate}};
  std::filesystem::path recording_file = base, json_file = base;
  recording_file += ".recording";
  json_file += ".json";
  try {
    detail::write_file_atomically(recording_file, recording);
    detail::write_file_atomically(json_file, boost::json::serialize(metadata));
  } catch (const std::exception& error) {
    std::error_code ignored;
    std::filesystem::remove(recording_file, ignored);
    throw ApiError(500, "server_error", std::string("The voice could not be saved: ") + error.what() + ".");
  }
}

inline SavedVoice VoiceStore::add(std::string name, std::shared_ptr<const std::vector<float>> samples,
                                  std::uint32_t sample_rate, std::string reference_text, std::string_view recording) {
  SavedVoice voice;
  voice.id = make_response_id("voice_");
  voice.name = std::move(name);
  voice.created_at = unix_time_now();
  voice.samples = std::move(samples);
  voice.sample_rate = sample_rate;
  voice.reference_text = std::move(reference_text);
  std::lock_guard lock(mutex_);
  if (voices_.size() >= max_voices_)
    throw ApiError::bad_request("The server holds " + std::to_string(voices_.size()) +
                                    " saved voices, its limit; delete one first (DELETE /v1/audio/voices/{id}).",
                                "file");
  if (directory_) write_files(voice, recording);
  voices_.emplace(voice.id, voice);
  return voice;
}

inline std::optional<SavedVoice> VoiceStore::find(std::string_view id) const {
  std::lock_guard lock(mutex_);
  const auto it = voices_.find(id);
  if (it == voices_.end()) return std::nullopt;
  return it->second;
}

inline std::vector<SavedVoice> VoiceStore::list() const {
  std::lock_guard lock(mutex_);
  std::vector<SavedVoice> out;
  for (const auto& [id, voice] : voices_) out.push_back(voice);
  std::sort(out.begin(), out.end(), [](const SavedVoice& a, const SavedVoice& b) {
    return a.created_at != b.created_at ? a.created_at < b.created_at : a.id < b.id;
  });
  return out;
}

inline bool VoiceStore::remove(std::string_view id) {
  std::lock_guard lock(mutex_);
  const auto it = voices_.find(id);
  if (it == voices_.end()) return false;
  if (directory_) {
    // The .json first: without it the voice is gone even if the recording
    // stays behind (a recording alone is ignored at the next start). A .json
    // that cannot be removed keeps the voice, here as on disk.
    std::filesystem::path json_file = *directory_ / it->first, recording_file = json_file;
    json_file += ".json";
    recording_file += ".recording";
    std::error_code ec;
    std::filesystem::remove(json_file, ec);
    if (ec) throw ApiError(500, "server_error", "The voice could not be deleted: " + ec.message() + ".");
    std::filesystem::remove(recording_file, ec);
  }
  voices_.erase(it);
  return true;
}

inline boost::json::object saved_voice_json(const SavedVoice& voice) {
  return {{"id", voice.id},
          {"object", "audio.voice"},
          {"type", "saved"},
          {"name", sanitize_utf8(voice.name)},
          {"created_at", voice.created_at},
          {"duration", voice.duration_seconds()},
          {"reference_text", voice.reference_text}};
}

inline boost::json::array model_voices_json(std::string_view model, const SpeechVoices& voices) {
  boost::json::array out;
  for (const std::string& s : voices.speakers)
    out.push_back({{"id", s}, {"object", "audio.voice"}, {"type", "speaker"}, {"model", model}});
  for (const SpeechVoiceAlias& alias : speech_voice_aliases())
    if (const auto speaker = resolve_speaker(alias.name, voices))
      out.push_back(
          {{"id", alias.name}, {"object", "audio.voice"}, {"type", "alias"}, {"model", model}, {"speaker", *speaker}});
  return out;
}

}  // namespace izwi::server::openai
