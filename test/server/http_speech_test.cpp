// The audio endpoints over HTTP (http_test_support.hpp): the answer while no
// audio model is loaded, and speech synthesis (issue 13) over the toy engine.

#include "server/http_test_support.hpp"

TEST_CASE("http: audio endpoints answer a clear error while no audio model is loaded", "[server][http]") {
  Harness h;
  auto r = post(h.port, "/v1/audio/speech", R"({"model": "toy", "input": "hi", "voice": "x"})");
  CHECK(r.status == 400);
  CHECK(std::string(error_of(r).at("message").as_string()).find("speech") != std::string::npos);
  r = post(h.port, "/v1/audio/speech", R"({"model": "tts-1", "input": "hi", "voice": "x"})");
  CHECK(r.status == 404);
  CHECK(error_of(r).at("code") == "model_not_found");
  r = post(h.port, "/v1/audio/transcriptions", "x");
  CHECK(r.status == 400);
  CHECK(std::string(error_of(r).at("message").as_string()).find("transcription") != std::string::npos);
  r = post(h.port, "/v1/audio/translations", "x");
  CHECK(r.status == 400);
}

// --- speech synthesis (issue 13) over the toy engine -------------------------------
//
// The toy model "speaks" one 1920-sample frame at 24 kHz per token, at a
// constant level: what the server does around a speech model (parsing,
// voices, encoding, streaming, speed, hang-ups) without one.

namespace {

FakeEngineOptions speech_options() {
  FakeEngineOptions o;
  o.tasks = {izwi::Task::tts};
  o.speech_frames = 12;
  return o;
}

std::string speech_body(std::string extra = {}) {
  return R"({"model": "toy", "input": "Hello there.", "voice": "vivian", "seed": 7)" + extra + "}";
}

izwi::audio::DecodedAudio decode_speech(const std::string& bytes, izwi::audio::AudioFormat format) {
  if (format == izwi::audio::AudioFormat::pcm) {
    izwi::audio::DecodedAudio out;
    out.audio.sample_rate = 24000;
    for (std::size_t i = 0; i + 1 < bytes.size(); i += 2) {
      const auto v = static_cast<std::int16_t>(static_cast<unsigned char>(bytes[i]) |
                                               (static_cast<unsigned char>(bytes[i + 1]) << 8));
      out.audio.samples.push_back(static_cast<float>(v) / 32768.0f);
    }
    return out;
  }
  return izwi::audio::decode(bytes);
}

}  // namespace

namespace {

/// usage.input_tokens of an SSE speech answer: the toy engine's prompt has
/// one token per byte of the text it was given.
std::int64_t speech_input_tokens(int port, const std::string& input, const std::string& extra = {}) {
  const HttpResult sse = post(port, "/v1/audio/speech",
                              R"({"model": "toy", "input": ")" + input + R"(", "voice": "vivian", "seed": 7,
                                  "stream_format": "sse")" + extra + "}");
  REQUIRE(sse.status == 200);
  const std::vector<std::string> events = sse_events(sse.body);
  REQUIRE_FALSE(events.empty());
  return json::parse(events.back()).as_object().at("usage").as_object().at("input_tokens").as_int64();
}

}  // namespace

TEST_CASE("http: --normalize-speech-text reads the input out unless the request says otherwise", "[server][http][speech]") {
  ServerConfig config = test_config();
  config.normalize_speech_text = true;
  Harness h(config, speech_options());
  const std::int64_t written_out = speech_input_tokens(h.port, "It is five dollars.");
  CHECK(speech_input_tokens(h.port, "It is $5.") == written_out);
  CHECK(speech_input_tokens(h.port, "It is $5.", R"(, "normalization_options": {"normalize": false})") ==
        written_out - static_cast<std::int64_t>(std::string("five dollars").size() - std::string("$5").size()));
  Harness plain(test_config(), speech_options());
  CHECK(speech_input_tokens(plain.port, "It is $5.") < written_out);
  CHECK(speech_input_tokens(plain.port, "It is $5.", R"(, "normalization_options": {})") == written_out);
  CHECK(h.wait_idle());
  CHECK(plain.wait_idle());
}

TEST_CASE("http: speech in every response_format, whole, chunked and as SSE, the same bytes", "[server][http][speech]") {
  Harness h(test_config(), speech_options());
  using izwi::audio::AudioFormat;
  for (AudioFormat format :
       {AudioFormat::mp3, AudioFormat::opus, AudioFormat::aac, AudioFormat::flac, AudioFormat::wav, AudioFormat::pcm}) {
    const std::string name(izwi::audio::to_string(format));
    INFO("response_format " << name);
    const std::string extra = R"(, "response_format": ")" + name + "\"";
    const HttpResult whole = post(h.port, "/v1/audio/speech", speech_body(extra));
    REQUIRE(whole.status == 200);
    CHECK(whole.header("Content-Type") == izwi::audio::content_type(format));
    const izwi::audio::DecodedAudio decoded = decode_speech(whole.body, format);
    // 12 frames of 1920 samples: 0.96 s (lossy codecs add their padding).
    CHECK(decoded.audio.duration_seconds() == Approx(0.96).margin(format == AudioFormat::aac ? 0.1 : 0.07));

    const HttpResult chunked = post(h.port, "/v1/audio/speech", speech_body(extra + R"(, "stream_format": "audio")"));
    REQUIRE(chunked.status == 200);
    CHECK(chunked.header("Transfer-Encoding") == "chunked");
    std::string streamed = chunked.body;
    if (format == AudioFormat::wav) {
      // A streamed WAV says "until the end" in both size fields; the whole file has the sizes.
      REQUIRE(streamed.size() == whole.body.size());
      CHECK(streamed.substr(4, 4) == std::string(4, '\xFF'));
      streamed.replace(4, 4, whole.body.substr(4, 4));
      streamed.replace(40, 4, whole.body.substr(40, 4));
    }
    CHECK(streamed == whole.body);

    const HttpResult sse = post(h.port, "/v1/audio/speech", speech_body(extra + R"(, "stream_format": "sse")"));
    REQUIRE(sse.status == 200);
    CHECK(sse.header("Content-Type") == "text/event-stream");
    const std::vector<std::string> events = sse_events(sse.body);
    REQUIRE(events.size() >= 2);
    std::string joined;
    for (std::size_t i = 0; i + 1 < events.size(); ++i) {
      const json::object e = json::parse(events[i]).as_object();
      CHECK(e.size() == 2);
      CHECK(e.at("type") == "speech.audio.delta");
      const auto bytes = izwi::server::openai::base64_decode(std::string(e.at("audio").as_string()));
      REQUIRE(bytes);
      joined += *bytes;
    }
    const json::object done = json::parse(events.back()).as_object();
    CHECK(done.at("type") == "speech.audio.done");
    const json::object usage = done.at("usage").as_object();
    CHECK(usage.at("output_tokens") == 12);
    CHECK(usage.at("input_tokens").as_int64() > 0);
    CHECK(usage.at("total_tokens").as_int64() == usage.at("input_tokens").as_int64() + 12);
    if (format == AudioFormat::wav) joined = joined.substr(44);
    CHECK(joined == (format == AudioFormat::wav ? whole.body.substr(44) : whole.body));
  }
  CHECK(h.wait_idle());
  // Each streamed answer (audio and sse, six formats each) timed its first audio.
  CHECK(h.server.http_metrics().prometheus_text().find("izwi_http_speech_time_to_first_audio_seconds_count 12\n") !=
        std::string::npos);
}

TEST_CASE("http: speech speed time-stretches, voices and OpenAI's names resolve", "[server][http][speech]") {
  Harness h(test_config(), speech_options());
  const auto samples = [&](const std::string& extra) {
    const HttpResult r = post(h.port, "/v1/audio/speech", speech_body(R"(, "response_format": "wav")" + extra));
    REQUIRE(r.status == 200);
    return izwi::audio::decode(r.body).audio.samples.size();
  };
  CHECK(samples("") == 12 * 1920);
  CHECK(samples(R"(, "speed": 2.0)") == 12 * 1920 / 2);
  CHECK(samples(R"(, "speed": 0.5)") == 12 * 1920 * 2);
  CHECK(samples(R"(, "speed": 2.0, "stream_format": "audio")") == 12 * 1920 / 2);
  CHECK(samples(R"(, "max_tokens": 3)") == 3 * 1920);
  for (const char* voice : {"alloy", "ONYX", "Ryan"}) {
    INFO(voice);
    CHECK(post(h.port, "/v1/audio/speech", R"({"model": "toy", "input": "hi", "voice": ")" + std::string(voice) + "\"}")
              .status == 200);
  }
  const HttpResult voices = get(h.port, "/v1/audio/voices");
  REQUIRE(voices.status == 200);
  std::map<std::string, std::string> listed;  // id -> type
  const json::value voices_json = voices.json();
  for (const auto& v : voices_json.at("data").as_array())
    listed[std::string(v.at("id").as_string())] = std::string(v.at("type").as_string());
  CHECK(listed["vivian"] == "speaker");
  CHECK(listed["ryan"] == "speaker");
  CHECK(listed["alloy"] == "alias");
  CHECK(listed["onyx"] == "alias");
  CHECK(listed.size() == 2 + izwi::server::openai::speech_voice_aliases().size());
}

TEST_CASE("http: speech requests a model cannot serve answer 400 naming the field", "[server][http][speech]") {
  Harness h(test_config(), speech_options());
  const auto check = [&](const std::string& body, const std::string& param, const std::string& words = {}) {
    INFO(body);
    const HttpResult r = post(h.port, "/v1/audio/speech", body);
    CHECK(r.status == 400);
    const json::object e = error_of(r);
    CHECK(std::string(e.at("param").as_string()) == param);
    if (!words.empty()) CHECK(std::string(e.at("message").as_string()).find(words) != std::string::npos);
  };
  check(R"({"model": "toy", "input": "", "voice": "vivian"})", "input");
  check(R"({"model": "toy", "voice": "vivian"})", "input");
  check(R"({"model": "toy", "input": ")" + std::string(4097, 'a') + R"(", "voice": "vivian"})", "input", "4097");
  check(R"({"model": "toy", "input": "hi"})", "voice");
  check(R"({"model": "toy", "input": "hi", "voice": "nobody"})", "voice", "vivian, ryan");
  check(R"({"model": "toy", "input": "hi", "voice": {"id": "voice_nope"}})", "voice");
  check(speech_body(R"(, "speed": 4.5)"), "speed");
  check(speech_body(R"(, "speed": 0.2)"), "speed");
  check(speech_body(R"(, "response_format": "ogg")"), "response_format", "mp3, opus, aac, flac, wav, pcm");
  check(speech_body(R"(, "stream_format": "video")"), "stream_format");
  check(speech_body(R"(, "language": "klingon")"), "language");
  check(speech_body(R"(, "reference_audio": "%%%")"), "reference_audio", "base64");
  check(speech_body(R"(, "reference_text": "words")"), "reference_audio");
  check(speech_body(R"(, "max_tokens": 0)"), "max_tokens");
  check(speech_body(R"(, "temperature": -1)"), "temperature");
  // A 4096-character input (multibyte characters count once) is fine.
  std::string long_input;
  for (int i = 0; i < 4096; ++i) long_input += "\xC3\xA9";  // é
  CHECK(post(h.port, "/v1/audio/speech",
             R"({"model": "toy", "voice": "vivian", "max_tokens": 1, "input": ")" + long_input + "\"}")
            .status == 200);
}

TEST_CASE("http: saved voices are stored, listed and deleted, and cloning needs a Base model", "[server][http][speech]") {
  Harness h(test_config(), speech_options());
  std::vector<float> tone(24000);
  for (std::size_t i = 0; i < tone.size(); ++i) tone[i] = 0.3f * std::sin(0.05f * static_cast<float>(i));
  const auto wav = izwi::audio::encode(tone, 24000, 1, izwi::audio::AudioFormat::wav);
  const std::string boundary = "izwiVoiceBoundary";
  std::string form = "--" + boundary + "\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nmy voice\r\n--" +
                     boundary + "\r\nContent-Disposition: form-data; name=\"reference_text\"\r\n\r\nHello.\r\n--" +
                     boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"v.wav\"\r\n\r\n" +
                     std::string(reinterpret_cast<const char*>(wav.data()), wav.size()) + "\r\n--" + boundary + "--\r\n";
  const auto multipart = std::vector<std::pair<std::string, std::string>>{
      {"Content-Type", "multipart/form-data; boundary=" + boundary}};
  HttpResult r = http_request(h.port, bhttp::verb::post, "/v1/audio/voices", form, multipart);
  INFO(r.body);
  REQUIRE(r.status == 200);
  const json::object saved = r.json().as_object();
  const std::string id(saved.at("id").as_string());
  CHECK(id.rfind("voice_", 0) == 0);
  CHECK(saved.at("name") == "my voice");
  CHECK(saved.at("reference_text") == "Hello.");
  CHECK(saved.at("duration").as_double() == Approx(1.0).margin(0.01));
  bool listed = false;
  const json::value voices_json = get(h.port, "/v1/audio/voices").json();
  for (const auto& v : voices_json.at("data").as_array()) listed |= std::string(v.at("id").as_string()) == id;
  CHECK(listed);
  // This model cannot clone: 400 naming the voice, and what is missing.
  r = post(h.port, "/v1/audio/speech", R"({"model": "toy", "input": "hi", "voice": {"id": ")" + id + "\"}}");
  CHECK(r.status == 400);
  CHECK(error_of(r).at("param") == "voice");
  CHECK(std::string(error_of(r).at("message").as_string()).find("Base model") != std::string::npos);
  const std::string b64 = izwi::server::openai::base64_encode(wav);
  r = post(h.port, "/v1/audio/speech", speech_body(R"(, "reference_audio": ")" + b64 + "\""));
  CHECK(r.status == 400);
  CHECK(error_of(r).at("param") == "reference_audio");
  // Not audio, no file: 400 naming the field.
  r = http_request(h.port, bhttp::verb::post, "/v1/audio/voices",
                   "--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x\"\r\n\r\nnot audio\r\n--" +
                       boundary + "--\r\n",
                   multipart);
  CHECK(r.status == 400);
  CHECK(error_of(r).at("param") == "file");
  // A name sent twice: 400 naming it, nothing stored.
  const std::string twice = "--" + boundary + "\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nother\r\n" + form;
  r = http_request(h.port, bhttp::verb::post, "/v1/audio/voices", twice, multipart);
  CHECK(r.status == 400);
  CHECK(error_of(r).at("param") == "name");
  CHECK(get(h.port, "/v1/audio/voices").json().at("data").as_array().size() == voices_json.at("data").as_array().size());
  CHECK(http_request(h.port, bhttp::verb::delete_, "/v1/audio/voices/" + id).status == 200);
  CHECK(http_request(h.port, bhttp::verb::delete_, "/v1/audio/voices/" + id).status == 404);
}

TEST_CASE("http: a speech client that disconnects mid-stream frees its KV blocks", "[server][http][threads][speech]") {
  FakeEngineOptions options = speech_options();
  options.step_delay = 2ms;
  Harness h(test_config(), options);
  for (const char* stream_format : {"audio", "sse"}) {
    INFO(stream_format);
    RawSocket s(h.port);
    const std::string body = speech_body(std::string(R"(, "max_tokens": 5000, "response_format": "pcm", )") +
                                         R"("stream_format": ")" + stream_format + "\"");
    REQUIRE(s.send(raw_post("/v1/audio/speech", body)));
    std::string out;
    while (out.size() < 64 * 1024 && s.read_some(out) > 0) {
    }
    CHECK(out.size() >= 64 * 1024);
    CHECK(h.engine_status().num_running == 1);
    s.close();
    CHECK(h.wait_idle());
  }
  // The server still speaks.
  CHECK(post(h.port, "/v1/audio/speech", speech_body(R"(, "max_tokens": 2)")).status == 200);
}
