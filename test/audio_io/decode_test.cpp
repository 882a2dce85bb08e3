// Decoding: fixtures against an independent reader and against each other,
// every WAV sample format against hand-built files, and every kind of bad
// input against the error it must produce.

#include <catch2/catch.hpp>
#include <sndfile.h>

#include <cmath>
#include <string>

#include "audio_io/audio_test_support.hpp"
#include "izwi/audio/decode.hpp"
#include "izwi/audio/encode.hpp"
#include "izwi/audio/resample.hpp"

using namespace izwi::audio;
using namespace izwi::audio::test;

namespace {

std::vector<std::byte> to_bytes(const std::vector<std::uint8_t>& v) {
  std::vector<std::byte> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = static_cast<std::byte>(v[i]);
  return out;
}

}  // namespace

TEST_CASE("jfk.wav decodes to the same samples as a hand-written WAV reader", "[audio_io][decode]") {
  IZWI_SKIP_WITHOUT_FIXTURES();
  const auto bytes = read_bytes(fixture("jfk.wav"));
  const simple_wav reference = read_simple_wav(bytes);
  REQUIRE(reference.rate == 16000);
  REQUIRE(reference.samples.size() == 176000);

  const DecodedAudio d = decode(bytes);
  CHECK(d.info.format == "wav");
  CHECK(d.info.encoding == "pcm_16");
  CHECK(d.info.sample_rate == 16000);
  CHECK(d.info.channels == 1);
  CHECK(d.info.frames == 176000);
  CHECK(d.info.duration_seconds == Approx(11.0));
  CHECK(d.audio.sample_rate == 16000);
  CHECK(d.audio.channels == 1);
  REQUIRE(d.audio.samples.size() == reference.samples.size());
  CHECK(d.audio.samples == reference.samples);  // exact: both are s16 / 32768

  // The same through a string_view body and from the file.
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  CHECK(decode(text).audio.samples == reference.samples);
  CHECK(decode_file(fixture("jfk.wav")).audio.samples == reference.samples);
}

TEST_CASE("jfk.flac (44.1 kHz stereo 24-bit) and jfk.mp3 match jfk.wav after mono + resampling",
          "[audio_io][decode]") {
  IZWI_SKIP_WITHOUT_FIXTURES();
  const auto wav = decode_file(fixture("jfk.wav")).audio.samples;

  const DecodedAudio flac = decode_file(fixture("jfk.flac"), {.mono = true, .target_sample_rate = 16000});
  CHECK(flac.info.format == "flac");
  CHECK(flac.info.encoding == "pcm_24");
  CHECK(flac.info.sample_rate == 44100);
  CHECK(flac.info.channels == 2);
  CHECK(flac.info.frames == 485100);
  CHECK(flac.info.duration_seconds == Approx(11.0));
  CHECK(flac.audio.sample_rate == 16000);
  CHECK(flac.audio.channels == 1);
  CHECK(flac.audio.frames() == resampled_frames(485100, 44100, 16000));
  // Decoding resamples block by block as it reads; that must equal resampling
  // the whole decoded signal afterwards.
  const auto native = decode_file(fixture("jfk.flac"), {.mono = true}).audio;
  CHECK(flac.audio.samples == resample(native.samples, 44100, 16000));
  const alignment a = best_alignment(wav, flac.audio.samples, -200, 200);
  INFO("flac vs wav: lag " << a.lag << ", correlation " << a.correlation);
  CHECK(a.correlation > 0.99);

  const DecodedAudio mp3 = decode_file(fixture("jfk.mp3"));
  CHECK(mp3.info.format == "mp3");
  CHECK(mp3.info.sample_rate == 16000);
  CHECK(mp3.info.frames == 176000);
  const alignment m = best_alignment(wav, mp3.audio.samples, -2000, 2000);
  INFO("mp3 vs wav: lag " << m.lag << ", correlation " << m.correlation);
  CHECK(m.correlation > 0.95);
}

TEST_CASE("stereo is kept interleaved, or mixed to the channel average", "[audio_io][decode]") {
  IZWI_SKIP_WITHOUT_FIXTURES();
  const DecodedAudio stereo = decode_file(fixture("jfk.flac"), {.mono = false});
  const DecodedAudio mono = decode_file(fixture("jfk.flac"), {.mono = true});
  REQUIRE(stereo.audio.channels == 2);
  REQUIRE(stereo.audio.frames() == 485100);
  REQUIRE(mono.audio.frames() == 485100);
  for (std::size_t i = 0; i < 485100; i += 997)
    REQUIRE(mono.audio.samples[i] ==
            Approx((stereo.audio.samples[2 * i] + stereo.audio.samples[2 * i + 1]) / 2).margin(1e-7));
  CHECK(mix_to_mono(stereo.audio).samples == mono.audio.samples);
}

TEST_CASE("every WAV sample format decodes to its exact value", "[audio_io][decode]") {
  // Codes spanning each format's range; expected floats per libsndfile's
  // normalisation (divide by 2^(bits-1); 8-bit WAV is unsigned, offset 128).
  SECTION("8-bit unsigned") {
    const auto data = to_bytes({0, 64, 128, 192, 255, 128});
    const auto d = decode(make_wav(8000, 1, 8, false, data));
    CHECK(d.info.encoding == "pcm_u8");
    const std::vector<float> want{-1.0f, -0.5f, 0.0f, 0.5f, 127 / 128.0f, 0.0f};
    CHECK(d.audio.samples == want);
  }
  SECTION("16-bit stereo, mixed and not") {
    std::vector<std::int16_t> codes{-32768, 32767, 1000, -1000, 0, 16384};
    std::vector<std::byte> data(codes.size() * 2);
    std::memcpy(data.data(), codes.data(), data.size());
    const auto bytes = make_wav(22050, 2, 16, false, data);
    const auto keep = decode(bytes, {.mono = false});
    REQUIRE(keep.audio.samples.size() == 6);
    for (std::size_t i = 0; i < 6; ++i) CHECK(keep.audio.samples[i] == codes[i] / 32768.0f);
    const auto mono = decode(bytes);
    REQUIRE(mono.audio.samples.size() == 3);
    CHECK(mono.audio.samples[0] == Approx((-32768 + 32767) / 65536.0).margin(1e-7));
    CHECK(mono.audio.samples[1] == Approx(0.0).margin(1e-7));
    CHECK(mono.audio.samples[2] == Approx(16384 / 65536.0).margin(1e-7));
  }
  SECTION("24-bit") {
    const std::vector<std::int32_t> codes{-8388608, 8388607, 1, -1, 4194304};
    std::vector<std::byte> data;
    for (std::int32_t c : codes)
      for (int b = 0; b < 3; ++b) data.push_back(static_cast<std::byte>((c >> (8 * b)) & 0xFF));
    const auto d = decode(make_wav(48000, 1, 24, false, data));
    CHECK(d.info.encoding == "pcm_24");
    REQUIRE(d.audio.samples.size() == codes.size());
    for (std::size_t i = 0; i < codes.size(); ++i)
      CHECK(d.audio.samples[i] == Approx(codes[i] / 8388608.0).margin(1e-7));
  }
  SECTION("32-bit integer") {
    const std::vector<std::int32_t> codes{INT32_MIN, INT32_MAX, 1 << 30, -(1 << 29), 0};
    std::vector<std::byte> data(codes.size() * 4);
    std::memcpy(data.data(), codes.data(), data.size());
    const auto d = decode(make_wav(16000, 1, 32, false, data));
    CHECK(d.info.encoding == "pcm_32");
    REQUIRE(d.audio.samples.size() == codes.size());
    for (std::size_t i = 0; i < codes.size(); ++i)
      CHECK(d.audio.samples[i] == Approx(codes[i] / 2147483648.0).margin(1e-7));
  }
  SECTION("32-bit float") {
    const std::vector<float> values{0.25f, -0.75f, 1.0f, -1.0f, 0.123456f};
    std::vector<std::byte> data(values.size() * 4);
    std::memcpy(data.data(), values.data(), data.size());
    const auto d = decode(make_wav(16000, 1, 32, true, data));
    CHECK(d.info.encoding == "float");
    CHECK(d.audio.samples == values);
  }
}

TEST_CASE("Ogg Vorbis written by libsndfile decodes, detected from the bytes", "[audio_io][decode]") {
  // libsndfile writes Vorbis through libvorbis; izwi only reads it.
  const auto x = chirp(16000, 16000, 200, 3000);
  detail::memory_sink sink;
  SF_INFO info{};
  info.samplerate = 16000;
  info.channels = 1;
  info.format = SF_FORMAT_OGG | SF_FORMAT_VORBIS;
  SNDFILE* f = sf_open_virtual(detail::memory_sink::io(), SFM_WRITE, &info, &sink);
  REQUIRE(f);
  REQUIRE(sf_writef_float(f, x.data(), 16000) == 16000);
  sf_close(f);
  const auto d = decode(sink.pending());
  CHECK(d.info.format == "ogg/vorbis");
  CHECK(d.info.frames == 16000);
  const alignment a = best_alignment(x, d.audio.samples, -100, 100);
  INFO("vorbis: lag " << a.lag << ", correlation " << a.correlation);
  CHECK(a.lag == 0);
  CHECK(a.correlation > 0.99);
}

TEST_CASE("bad input gives a DecodeError that names the problem", "[audio_io][decode][errors]") {
  SECTION("empty body") {
    const auto e = expect_decode_error([] { decode(std::string_view{}); });
    CHECK(e.problem() == DecodeProblem::empty_input);
    CHECK_THAT(e.what(), Catch::Contains("empty audio body"));
  }
  SECTION("not audio: JSON, text, random bytes") {
    for (std::string body : {std::string(R"({"model":"whisper-1"})"), std::string("hello world, not audio"),
                             std::string("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c", 12)}) {
      const auto e = expect_decode_error([&] { decode(body); });
      CHECK(e.problem() == DecodeProblem::not_audio);
      CHECK_THAT(e.what(), Catch::StartsWith("not an audio file"));
    }
  }
  SECTION("a WAV whose data chunk claims more bytes than the body holds") {
    std::vector<std::byte> data(200);
    const auto e = expect_decode_error([&] { decode(make_wav(16000, 1, 16, false, data, 100000)); });
    CHECK(e.problem() == DecodeProblem::truncated);
    CHECK_THAT(e.what(), Catch::Contains("declares 100000 bytes") && Catch::Contains("holds 200"));
  }
  SECTION("a truncated upload of jfk.wav and jfk.flac") {
    IZWI_SKIP_WITHOUT_FIXTURES();
    auto wav = read_bytes(fixture("jfk.wav"));
    wav.resize(wav.size() / 2);
    CHECK(expect_decode_error([&] { decode(wav); }).problem() == DecodeProblem::truncated);
    auto flac = read_bytes(fixture("jfk.flac"));
    flac.resize(flac.size() / 3);
    const auto e = expect_decode_error([&] { decode(flac); });
    CHECK(e.problem() == DecodeProblem::truncated);
    CHECK_THAT(e.what(), Catch::StartsWith("truncated FLAC stream: the header declares 485100 frames"));
  }
  SECTION("a header alone: zero-length audio") {
    const auto e = expect_decode_error([] { decode(make_wav(16000, 1, 16, false, {})); });
    CHECK(e.problem() == DecodeProblem::no_samples);
  }
  SECTION("over the duration limit, known from the header: rejected before reading") {
    IZWI_SKIP_WITHOUT_FIXTURES();
    const auto e = expect_decode_error(
        [] { decode_file(fixture("jfk.wav"), {.max_duration_seconds = 5.0}); });
    CHECK(e.problem() == DecodeProblem::too_long);
    CHECK_THAT(e.what(), Catch::Contains("audio is 11.0 s long, over the 5.0 s limit"));
  }
  SECTION("an absurd frame count in a FLAC header: rejected before any allocation") {
    IZWI_SKIP_WITHOUT_FIXTURES();
    auto flac = read_bytes(fixture("jfk.flac"));
    REQUIRE(std::string(reinterpret_cast<const char*>(flac.data()), 4) == "fLaC");
    // STREAMINFO's 36-bit total-samples field: low nibble of byte 21, bytes 22-25.
    flac[21] |= std::byte{0x0F};
    for (int i = 22; i < 26; ++i) flac[i] = std::byte{0xFF};
    const auto e = expect_decode_error([&] { decode(flac); });
    CHECK(e.problem() == DecodeProblem::too_long);
    CHECK_THAT(e.what(), Catch::Contains("over the 3600.0 s limit"));
  }
  SECTION("a streamed WAV (sizes 0xFFFFFFFF) reads to the end, and its length is checked") {
    std::vector<std::byte> data(3 * 8000 * 2);
    auto bytes = make_wav(8000, 1, 16, false, data, 0xFFFFFFFFu);
    CHECK(decode(bytes).info.frames == 24000);
    const auto e = expect_decode_error([&] { decode(bytes, {.max_duration_seconds = 1.0}); });
    CHECK(e.problem() == DecodeProblem::too_long);
    CHECK_THAT(e.what(), Catch::Contains("audio is 3.0 s long, over the 1.0 s limit"));
  }
  SECTION("over the limit with no length in the header: reading stops at the limit") {
    // A streamed FLAC has total samples = 0 ("unknown") in STREAMINFO.
    StreamingEncoder enc(AudioFormat::flac, 8000);
    auto bytes = enc.push(sine(3 * 8000, 8000, 440));
    const auto tail = enc.finish();
    bytes.insert(bytes.end(), tail.begin(), tail.end());
    CHECK(decode(bytes).info.frames == 24000);
    const auto e = expect_decode_error([&] { decode(bytes, {.max_duration_seconds = 1.0}); });
    CHECK(e.problem() == DecodeProblem::too_long);
    CHECK_THAT(e.what(), Catch::Contains("longer than the 1.0 s limit"));
  }
  SECTION("an unknown WAV codec") {
    std::vector<std::byte> data(400);
    const auto e = expect_decode_error([&] { decode(make_wav(16000, 1, 16, false, data, 0xFFFFFFFEu, 0x1234)); });
    CHECK(e.problem() == DecodeProblem::unsupported_codec);
    CHECK_THAT(e.what(), Catch::Contains("WAV format tag 0x1234"));
  }
  SECTION("float samples that are NaN") {
    const std::vector<float> values{0.5f, std::nanf(""), 0.25f};
    std::vector<std::byte> data(values.size() * 4);
    std::memcpy(data.data(), values.data(), data.size());
    const auto e = expect_decode_error([&] { decode(make_wav(16000, 1, 32, true, data)); });
    CHECK(e.problem() == DecodeProblem::corrupt);
    CHECK_THAT(e.what(), Catch::Contains("NaN"));
  }
  SECTION("a header with zero channels, or more than izwi accepts") {
    std::vector<std::byte> data(400);
    const auto zero = expect_decode_error([&] { decode(make_wav(16000, 0, 16, false, data)); });
    CHECK(zero.problem() == DecodeProblem::corrupt);
    CHECK_THAT(zero.what(), Catch::Contains("Channel count is zero"));
    const auto many = expect_decode_error([&] { decode(make_wav(16000, 17, 16, false, data)); });
    CHECK(many.problem() == DecodeProblem::invalid_format);
    CHECK_THAT(many.what(), Catch::Contains("audio has 17 channels; izwi accepts 1 to 16"));
  }
  SECTION("a missing file is an AudioError naming the path") {
    CHECK_THROWS_WITH(decode_file("/nonexistent/x.wav"), Catch::Contains("/nonexistent/x.wav"));
  }
  SECTION("options out of range") {
    CHECK_THROWS_AS(decode(std::string_view("x"), {.max_duration_seconds = 0}), izwi::invalid_argument);
    CHECK_THROWS_AS(decode(std::string_view("x"), {.target_sample_rate = 10'000'000}),
                    izwi::invalid_argument);
  }
}
