// /v1/audio/speech's protocol pieces without a server (speech_api.hpp) and
// the time-stretcher behind `speed` (audio/time_stretch.hpp).

#include <catch2/catch.hpp>

#include <izwi/audio/time_stretch.hpp>
#include <izwi/server/speech_api.hpp>

#include <boost/json/parse.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <string>
#include <vector>

using namespace izwi::server;
using namespace izwi::server::openai;

namespace {

std::string param_of(const std::string& body) {
  try {
    parse_speech_request(body);
  } catch (const ApiError& e) {
    CHECK(e.status == 400);
    return e.param.value_or("");
  }
  FAIL("accepted: " << body);
  return {};
}

/// Sign changes per second of `x` at 24 kHz: twice the frequency of a sine.
double zero_crossings_per_second(const std::vector<float>& x, std::size_t from, std::size_t to) {
  std::size_t n = 0;
  for (std::size_t i = from + 1; i < to; ++i) n += (x[i - 1] < 0) != (x[i] < 0);
  return static_cast<double>(n) * 24000.0 / static_cast<double>(to - from);
}

/// A recording for the voice-store tests: raw float32 samples. The decoder
/// refuses "undecodable", as the audio decoder refuses a damaged file.
std::shared_ptr<const std::vector<float>> decode_raw_floats(std::string_view bytes) {
  if (bytes == "undecodable") throw std::runtime_error("the recording does not decode");
  auto samples = std::make_shared<std::vector<float>>(bytes.size() / sizeof(float));
  std::memcpy(samples->data(), bytes.data(), samples->size() * sizeof(float));
  return samples;
}

std::string raw_floats(const std::vector<float>& samples) {
  return std::string(reinterpret_cast<const char*>(samples.data()), samples.size() * sizeof(float));
}

/// A fresh, empty directory under the system's temporary one.
std::filesystem::path fresh_directory(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("izwi-" + name + "-" + make_response_id(""));
  std::filesystem::remove_all(dir);
  return dir;
}

void write_text(const std::filesystem::path& file, const std::string& text) {
  std::ofstream(file, std::ios::binary) << text;
}

}  // namespace

TEST_CASE("speech request: defaults, extensions and the voice forms", "[server][speech]") {
  SpeechRequest r = parse_speech_request(R"({"model": "m", "input": "Hi.", "voice": "alloy"})");
  CHECK(r.model == "m");
  CHECK(r.voice == "alloy");
  CHECK_FALSE(r.voice_is_saved_id);
  CHECK(r.response_format == izwi::audio::AudioFormat::mp3);
  CHECK(r.speed == 1.0);
  CHECK(r.stream_format == SpeechStreamFormat::none);
  CHECK(r.language == "auto");
  CHECK_FALSE(r.seed);
  r = parse_speech_request(R"({"input": "Hi.", "voice": {"id": "voice_abc"}, "response_format": "PCM",
      "speed": 0.25, "stream_format": "sse", "language": " English ", "seed": 5, "temperature": 0,
      "top_k": 1, "max_tokens": 30, "instructions": "Calm.", "stream": true})");
  CHECK(r.voice == "voice_abc");
  CHECK(r.voice_is_saved_id);
  CHECK(r.response_format == izwi::audio::AudioFormat::pcm);
  CHECK(r.speed == 0.25);
  CHECK(r.stream_format == SpeechStreamFormat::sse);  // stream_format wins over stream
  CHECK(r.language == "english");
  CHECK(r.seed == 5u);
  CHECK(r.temperature == 0.0f);
  CHECK(r.top_k == 1);
  CHECK(r.max_frames == 30u);
  CHECK(r.instructions == "Calm.");
  CHECK(parse_speech_request(R"({"input": "a", "voice": "v", "stream": true})").stream_format ==
        SpeechStreamFormat::audio);
  // A reference recording stands for the voice; a data: URL works too.
  r = parse_speech_request(R"({"input": "a", "reference_audio": "data:audio/wav;base64,UklGRg==",
                               "reference_text": "words"})");
  CHECK(r.reference_audio == "RIFF");
  CHECK(r.reference_text == "words");
  CHECK_FALSE(r.normalization);
}

TEST_CASE("speech request: Kokoro-FastAPI's normalization_options, its defaults for keys left out", "[server][speech]") {
  CHECK_FALSE(parse_speech_request(R"({"input": "a", "voice": "v", "normalization_options": null})").normalization);
  SpeechRequest r = parse_speech_request(R"({"input": "a", "voice": "v", "normalization_options": {}})");
  REQUIRE(r.normalization);
  CHECK(r.normalization->normalize);
  CHECK_FALSE(r.normalization->unit_normalization);
  CHECK(r.normalization->url_normalization);
  CHECK(r.normalization->phone_normalization);
  r = parse_speech_request(R"({"input": "a", "voice": "v", "normalization_options": {"unit_normalization": true,
      "url_normalization": false, "email_normalization": false, "optional_pluralization_normalization": false,
      "phone_normalization": false, "replace_remaining_symbols": false, "normalize": false, "future_option": 3}})");
  REQUIRE(r.normalization);
  CHECK_FALSE(r.normalization->normalize);
  CHECK(r.normalization->unit_normalization);
  CHECK_FALSE(r.normalization->url_normalization);
  CHECK_FALSE(r.normalization->email_normalization);
  CHECK_FALSE(r.normalization->optional_pluralization_normalization);
  CHECK_FALSE(r.normalization->phone_normalization);
  CHECK_FALSE(r.normalization->replace_remaining_symbols);
  CHECK(param_of(R"({"input": "a", "voice": "v", "normalization_options": true})") == "normalization_options");
  CHECK(param_of(R"({"input": "a", "voice": "v", "normalization_options": {"normalize": "yes"}})") ==
        "normalization_options.normalize");
}

TEST_CASE("speech request: every refusal names its field", "[server][speech]") {
  CHECK(param_of(R"({"voice": "v"})") == "input");
  CHECK(param_of(R"({"input": "  ", "voice": "v"})") == "input");
  CHECK(param_of(R"({"input": 3, "voice": "v"})") == "input");
  CHECK(param_of(R"({"input": ")" + std::string(4097, 'x') + R"(", "voice": "v"})") == "input");
  CHECK_NOTHROW(parse_speech_request(R"({"input": ")" + std::string(4096, 'x') + R"(", "voice": "v"})"));
  CHECK(param_of(R"({"input": "a"})") == "voice");
  CHECK(param_of(R"({"input": "a", "voice": ""})") == "voice");
  CHECK(param_of(R"({"input": "a", "voice": {"name": "x"}})") == "voice.id");
  CHECK(param_of(R"({"input": "a", "voice": "v", "speed": 4.01})") == "speed");
  CHECK(param_of(R"({"input": "a", "voice": "v", "speed": "fast"})") == "speed");
  CHECK(param_of(R"({"input": "a", "voice": "v", "response_format": "m4a"})") == "response_format");
  CHECK(param_of(R"({"input": "a", "voice": "v", "stream_format": "json"})") == "stream_format");
  CHECK(param_of(R"({"input": "a", "voice": "v", "seed": -1})") == "seed");
  CHECK(param_of(R"({"input": "a", "voice": "v", "top_k": 0})") == "top_k");
  CHECK(param_of(R"({"input": "a", "voice": "v", "temperature": 3})") == "temperature");
  CHECK(param_of(R"({"input": "a", "voice": "v", "max_tokens": 0})") == "max_tokens");
  CHECK(param_of(R"({"input": "a", "voice": "v", "reference_audio": "!!"})") == "reference_audio");
  CHECK(param_of(R"({"input": "a", "voice": "v", "reference_audio": "data:audio/wav,RIFF"})") == "reference_audio");
  CHECK(param_of(R"({"input": "a", "voice": "v", "reference_text": "t"})") == "reference_audio");
}

TEST_CASE("speech voices: speakers in any case, OpenAI's names by preference", "[server][speech]") {
  SpeechVoices custom{{"aiden", "eric", "ryan", "serena", "vivian"}, {"english"}, "custom_voice", "", 24000};
  CHECK(resolve_speaker("Vivian", custom) == "vivian");
  CHECK(resolve_speaker("alloy", custom) == "vivian");
  CHECK(resolve_speaker("coral", custom) == "serena");
  CHECK(resolve_speaker("ONYX", custom) == "ryan");
  CHECK(resolve_speaker("ballad", custom) == "aiden");
  CHECK_FALSE(resolve_speaker("nobody", custom));
  // A model without the preferred speakers: the first it has.
  SpeechVoices few{{"eric", "ryan"}, {}, "custom_voice", "", 24000};
  CHECK(resolve_speaker("nova", few) == "eric");
  CHECK(resolve_speaker("echo", few) == "ryan");
  SpeechVoices design{{}, {}, "voice_design", "", 24000};
  CHECK_FALSE(resolve_speaker("alloy", design));
  const boost::json::array listed = model_voices_json("m", few);
  CHECK(listed.size() == 2 + speech_voice_aliases().size());
  CHECK(listed[0].at("type") == "speaker");
  CHECK(listed[2].at("type") == "alias");
}

TEST_CASE("speech events and base64", "[server][speech]") {
  const std::string bytes = "any carnal pleas";
  const auto span = std::as_bytes(std::span(bytes.data(), bytes.size()));
  const boost::json::object delta = speech_audio_delta_event(span);
  CHECK(delta.size() == 2);
  CHECK(delta.at("type") == "speech.audio.delta");
  CHECK(delta.at("audio") == "YW55IGNhcm5hbCBwbGVhcw==");
  const boost::json::object done = speech_audio_done_event(7, 30);
  CHECK(boost::json::serialize(done) ==
        R"({"type":"speech.audio.done","usage":{"input_tokens":7,"output_tokens":30,"total_tokens":37}})");
  for (std::size_t n = 0; n <= bytes.size(); ++n) {
    const std::string part = bytes.substr(0, n);
    CHECK(base64_decode(base64_encode(std::as_bytes(std::span(part.data(), part.size())))) == part);
  }
  CHECK(base64_decode("YW55\nIGNh") == "any ca");
  CHECK(base64_decode("-_8") == std::string("\xFB\xFF", 2));  // URL-safe, unpadded
  CHECK_FALSE(base64_decode("YW5*"));
  CHECK_FALSE(base64_decode("Y"));
  CHECK_FALSE(base64_decode("YW==YW"));
}

TEST_CASE("TimeStretcher: exact length, pitch kept, reproducible", "[audio][speech]") {
  std::vector<float> tone(48000);  // 2 s of 300 Hz
  for (std::size_t i = 0; i < tone.size(); ++i)
    tone[i] = 0.5f * static_cast<float>(std::sin(2 * std::numbers::pi * 300.0 * static_cast<double>(i) / 24000.0));
  const auto stretch = [&](double speed) {
    izwi::audio::TimeStretcher s(24000, speed);
    std::vector<float> out;
    for (std::size_t at = 0; at < tone.size(); at += 3840) {  // pieces of two frames, as a model's windows
      const auto piece = s.push(std::span(tone).subspan(at, std::min<std::size_t>(3840, tone.size() - at)));
      out.insert(out.end(), piece.begin(), piece.end());
    }
    const auto tail = s.finish();
    out.insert(out.end(), tail.begin(), tail.end());
    CHECK(s.finish().empty());
    return out;
  };
  const double input_rate = zero_crossings_per_second(tone, 0, tone.size());
  for (double speed : {0.25, 0.5, 1.0, 2.0, 4.0}) {
    INFO("speed " << speed);
    const std::vector<float> out = stretch(speed);
    CHECK(out.size() == static_cast<std::size_t>(std::llround(48000 / speed)));
    // The middle (away from the edges' ramps) keeps the tone's frequency.
    CHECK(zero_crossings_per_second(out, out.size() / 4, out.size() * 3 / 4) == Approx(input_rate).epsilon(0.03));
    CHECK(stretch(speed) == out);
  }
  CHECK_THROWS_AS(izwi::audio::TimeStretcher(24000, 4.5), izwi::invalid_argument);
  CHECK_THROWS_AS(izwi::audio::TimeStretcher(24000, 0.2), izwi::invalid_argument);
}

TEST_CASE("VoiceStore in a directory: saved voices survive a restart, deleted ones do not", "[server][speech]") {
  const auto dir = fresh_directory("voices");
  const std::vector<float> tone{0.25f, -0.5f, 0.125f, 1.0f / 3.0f}, hum{0.1f, 0.2f};
  std::string tone_id, hum_id;
  {
    VoiceStore store;
    CHECK(store.persist_in(dir, decode_raw_floats).empty());  // created, nothing to load
    REQUIRE(std::filesystem::is_directory(dir));
    tone_id = store.add("tone", std::make_shared<std::vector<float>>(tone), 24000, "A tone.", raw_floats(tone)).id;
    hum_id = store.add("hum", std::make_shared<std::vector<float>>(hum), 24000, "", raw_floats(hum)).id;
    CHECK(std::filesystem::is_regular_file(dir / (tone_id + ".json")));
    CHECK(std::filesystem::is_regular_file(dir / (tone_id + ".recording")));
  }
  {
    VoiceStore restarted;
    CHECK(restarted.persist_in(dir, decode_raw_floats).empty());
    const auto voice = restarted.find(tone_id);
    REQUIRE(voice);
    CHECK(voice->name == "tone");
    CHECK(voice->reference_text == "A tone.");
    CHECK(voice->sample_rate == 24000);
    CHECK(*voice->samples == tone);  // bit for bit
    CHECK(restarted.list().size() == 2);
    CHECK(restarted.remove(hum_id));
    CHECK_FALSE(std::filesystem::exists(dir / (hum_id + ".json")));
    CHECK_FALSE(std::filesystem::exists(dir / (hum_id + ".recording")));
  }
  VoiceStore again;
  CHECK(again.persist_in(dir, decode_raw_floats).empty());
  CHECK(again.find(tone_id));
  CHECK_FALSE(again.find(hum_id));
  std::filesystem::remove_all(dir);
}

TEST_CASE("VoiceStore in a directory: unreadable voices are skipped and named, the rest load", "[server][speech]") {
  const auto dir = fresh_directory("voices-damaged");
  const std::vector<float> tone{0.5f, -0.5f};
  std::string good_id;
  {
    VoiceStore store;
    store.persist_in(dir, decode_raw_floats);
    good_id = store.add("good", std::make_shared<std::vector<float>>(tone), 24000, "", raw_floats(tone)).id;
  }
  const std::string metadata_tail = R"(, "name": "x", "created_at": 1, "reference_text": "", "sample_rate": 24000})";
  write_text(dir / "voice_truncated.json", R"({"id": "voice_truncated", "na)");
  write_text(dir / "voice_renamed.json", R"({"id": "voice_other")" + metadata_tail);
  write_text(dir / "voice_norecording.json", R"({"id": "voice_norecording")" + metadata_tail);
  write_text(dir / "voice_undecodable.json", R"({"id": "voice_undecodable")" + metadata_tail);
  write_text(dir / "voice_undecodable.recording", "undecodable");
  write_text(dir / "voice_norate.json", R"({"id": "voice_norate", "name": "x", "created_at": 1, "reference_text": ""})");
  write_text(dir / "voice_norate.recording", raw_floats(tone));
  write_text(dir / "settings.json", "{}");
  write_text(dir / "voice_orphan.recording", raw_floats(tone));  // no .json: not a voice
  VoiceStore store;
  const std::vector<std::string> problems = store.persist_in(dir, decode_raw_floats);
  const auto named = [&](const std::string& file, const std::string& words) {
    for (const std::string& p : problems)
      if (p.rfind(file + ": skipped, ", 0) == 0 && p.find(words) != std::string::npos) return true;
    return false;
  };
  CHECK(problems.size() == 6);
  CHECK(named("voice_truncated.json", "not a JSON object"));
  CHECK(named("voice_renamed.json", "not the file's name"));
  CHECK(named("voice_norecording.json", "cannot open voice_norecording.recording"));
  CHECK(named("voice_undecodable.json", "does not decode"));
  CHECK(named("voice_norate.json", "sample_rate"));
  CHECK(named("settings.json", "not a saved voice"));
  REQUIRE(store.list().size() == 1);
  CHECK(store.list()[0].id == good_id);
  std::filesystem::remove_all(dir);
}

TEST_CASE("VoiceStore in a directory: a voice that cannot be written is not saved", "[server][speech]") {
  const auto dir = fresh_directory("voices-unwritable");
  VoiceStore store;
  store.persist_in(dir, decode_raw_floats);
  // The directory is replaced by a file: every write into it fails (also as root).
  std::filesystem::remove_all(dir);
  write_text(dir, "not a directory");
  const std::vector<float> tone{0.5f};
  try {
    store.add("tone", std::make_shared<std::vector<float>>(tone), 24000, "", raw_floats(tone));
    FAIL("a voice was saved into a directory that is a file");
  } catch (const ApiError& e) {
    CHECK(e.status == 500);
    CHECK(std::string(e.what()).find("could not be saved") != std::string::npos);
  }
  CHECK(store.list().empty());
  VoiceStore elsewhere;
  CHECK_THROWS_WITH(elsewhere.persist_in(dir, decode_raw_floats), Catch::Contains("cannot be created"));
  std::filesystem::remove(dir);
}
