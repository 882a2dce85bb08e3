#pragma once
// OpenAI's /v1/audio/speech protocol and izwi's saved voices
// (/v1/audio/voices): the JSON a client sends, the voice names, the events.
//
//   request    {"model", "input" (1..4096 characters), "voice" (a speaker
//              name, an OpenAI voice name, or {"id": saved voice}),
//              "instructions", "response_format" (mp3 | opus | aac | flac |
//              wav | pcm; default mp3), "speed" (0.25..4, default 1),
//              "stream_format" (audio | sse)} and izwi's extensions, as vLLM's
//              and Izwi's servers name them: "language", "seed",
//              "temperature", "top_k", "max_tokens" (frames), "stream"
//              (true: as stream_format audio), "reference_audio" (base64 or a
//              data: URL) with "reference_text" (voice cloning, Base models),
//              and Kokoro-FastAPI's "normalization_options" ({"normalize",
//              "unit_normalization", "url_normalization",
//              "email_normalization", "optional_pluralization_normalization",
//              "phone_normalization", "replace_remaining_symbols"}: booleans,
//              Kokoro-FastAPI's defaults for those left out; other keys are
//              ignored, as Kokoro-FastAPI ignores them).
//   responses  no stream_format: the whole file (Content-Length);
//              audio: the same bytes with chunked transfer, as frames decode;
//              sse:   data: {"type": "speech.audio.delta", "audio": base64}
//                     ... data: {"type": "speech.audio.done", "usage":
//                     {"input_tokens", "output_tokens", "total_tokens"}}
//              (OpenAI's event shapes; the deltas' bytes joined are the file).
//
// OpenAI's voice names (alloy, ash, ballad, coral, echo, fable, onyx, nova,
// sage, shimmer, verse, marin, cedar) stand for speakers of the model
// (speech_voice_aliases: a list of preferences, the first the model has
// wins). Pure like openai.hpp: Boost.JSON, no Beast, no engine. Errors are
// ApiError 400 naming the field.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "izwi/audio/encode.hpp"
#include "izwi/server/any_engine.hpp"
#include "izwi/server/openai.hpp"
#include "izwi/text/speech_normalizer.hpp"

namespace izwi::server::openai {

/// How the answer travels: whole, as chunked audio bytes, or as SSE events.
enum class SpeechStreamFormat : std::uint8_t { none, audio, sse };

/// The longest input OpenAI accepts, in characters (code points).
inline constexpr std::size_t max_speech_input_characters = 4096;

struct SpeechRequest {
  std::string model;
  std::string input;
  /// A speaker or OpenAI voice name (as given), or a saved voice's id.
  std::string voice;
  bool voice_is_saved_id = false;
  std::string instructions;
  audio::AudioFormat response_format = audio::AudioFormat::mp3;
  double speed = 1.0;
  SpeechStreamFormat stream_format = SpeechStreamFormat::none;
  /// Lower case; "auto": the model decides.
  std::string language = "auto";
  /// Unset: a fresh random seed per request.
  std::optional<std::uint64_t> seed;
  std::optional<float> temperature;
  std::optional<std::int32_t> top_k;
  std::optional<std::uint32_t> max_frames;
  /// The reference audio file's bytes (base64-decoded), for cloning.
  std::string reference_audio;
  std::string reference_text;
  /// The text normalisation the client asked for (izwi/text/speech_normalizer.hpp);
  /// unset: the server's default (ServerConfig::normalize_speech_text).
  std::optional<text::SpeechTextOptions> normalization;
};

/// Parses and checks a /v1/audio/speech body (throws ApiError 400 naming the field).
SpeechRequest parse_speech_request(std::string_view body);
SpeechRequest parse_speech_request(const boost::json::object& body);

/// OpenAI's voice names and the speakers each stands for, in order of preference.
struct SpeechVoiceAlias {
  std::string_view name;
  std::span<const std::string_view> speakers;
};
std::span<const SpeechVoiceAlias> speech_voice_aliases() noexcept;

/// The model speaker `voice` names: one of `voices.speakers` (any case), or
/// an OpenAI voice name mapped to the first of its speakers the model has
/// (else the model's first speaker). nullopt when the model has no named
/// speakers or the name is neither.
std::optional<std::string> resolve_speaker(std::string_view voice, const SpeechVoices& voices);

/// "mp3", "opus", ... as response_format names them, joined with ", ".
std::string speech_formats_list();

/// {"type": "speech.audio.delta", "audio": base64(bytes)}.
boost::json::object speech_audio_delta_event(std::span<const std::byte> bytes);
/// {"type": "speech.audio.done", "usage": {"input_tokens", "output_tokens", "total_tokens"}}.
boost::json::object speech_audio_done_event(std::uint64_t input_tokens, std::uint64_t output_tokens);

/// Standard base64 (RFC 4648, with padding).
std::string base64_encode(std::span<const std::byte> bytes);
/// Decodes standard or URL-safe base64 (padding optional, whitespace
/// ignored); nullopt for anything else.
std::optional<std::string> base64_decode(std::string_view text);

// ---------------------------------------------------------------------------
// Saved voices (POST /v1/audio/voices)
// ---------------------------------------------------------------------------

/// A voice a client uploaded: its reference audio and transcript.
struct SavedVoice {
  std::string id;    ///< "voice_" + 29 alphanumerics (make_response_id)
  std::string name;  ///< as the client named it
  std::int64_t created_at = 0;
  /// Mono, at `sample_rate`.
  std::shared_ptr<const std::vector<float>> samples;
  std::uint32_t sample_rate = 24000;
  std::string reference_text;

  double duration_seconds() const noexcept {
    return sample_rate && samples ? static_cast<double>(samples->size()) / sample_rate : 0.0;
  }
};

/// The server's saved voices. Thread-safe. In memory only, unless persist_in()
/// gave it a directory: then every voice is also written there when it is
/// saved, removed from there when it is deleted, and read back at the next
/// start, so a client's voice ids survive restarts. Each voice is two files:
///   <id>.recording  the bytes the client uploaded, as they came (decoded
///                   again at start-up, by the same decoder, so a voice
///                   speaks after a restart exactly as before);
///   <id>.json       {"id", "name", "created_at", "reference_text",
///                    "sample_rate"}, written last: a voice exists once its
///                   .json does. Both are written to a temporary name and
///                   renamed, so a crash never leaves half a voice.
class VoiceStore {
 public:
  /// At most this many voices; more answers 400 until some are deleted.
  explicit VoiceStore(std::size_t max_voices = 256) : max_voices_(max_voices) {}

  /// The uploaded bytes as mono samples at the store's rate; throws (any
  /// exception, its what() names the problem) for what it cannot decode.
  using RecordingDecoder = std::function<std::shared_ptr<const std::vector<float>>(std::string_view recording)>;

  /// Keeps voices in `directory` (created when missing) from now on and
  /// loads the voices already there. A voice that cannot be read (a damaged
  /// or foreign file, a recording that no longer decodes) is skipped and
  /// named in the returned lines; the rest load. Throws std::runtime_error
  /// when the directory cannot be created or read.
  std::vector<std::string> persist_in(const std::filesystem::path& directory, const RecordingDecoder& decode);

  /// Stores the voice under a fresh id (returned in the copy); `recording`
  /// (the uploaded bytes) is what a persistent store writes to disk. A
  /// voice that cannot be written is not stored (ApiError 500 naming why).
  SavedVoice add(std::string name, std::shared_ptr<const std::vector<float>> samples, std::uint32_t sample_rate,
                 std::string reference_text, std::string_view recording = {});
  std::optional<SavedVoice> find(std::string_view id) const;
  std::vector<SavedVoice> list() const;
  bool remove(std::string_view id);

 private:
  void write_files(const SavedVoice& voice, std::string_view recording) const;
  std::optional<SavedVoice> read_files(const std::filesystem::path& json_file, const RecordingDecoder& decode,
                                       std::vector<std::string>& problems) const;

  mutable std::mutex mutex_;
  std::map<std::string, SavedVoice, std::less<>> voices_;
  std::size_t max_voices_;
  std::optional<std::filesystem::path> directory_;
};

/// {"id", "object": "audio.voice", "name", "created_at", "type": "saved",
/// "duration", "reference_text"}.
boost::json::object saved_voice_json(const SavedVoice& voice);
/// One model's voices: {"id", "object": "audio.voice", "type": "speaker" |
/// "alias", "model"[, "speaker"]} for each speaker and each OpenAI name.
boost::json::array model_voices_json(std::string_view model, const SpeechVoices& voices);

}  // namespace izwi::server::openai

#include "izwi/server/impl/speech_api.hpp"
