// Encoding: every format round-trips through the decoder (and, for wav/pcm,
// through a hand-written reader), one-shot and streamed in pieces; the
// streamed bytes are a valid file at every chunk boundary.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "audio_io/audio_test_support.hpp"
#include "izwi/audio/decode.hpp"
#include "izwi/audio/detail/container_sniff.hpp"
#include "izwi/audio/encode.hpp"

using namespace izwi::audio;
using namespace izwi::audio::test;

namespace {

constexpr AudioFormat all_formats[] = {AudioFormat::wav, AudioFormat::pcm, AudioFormat::flac,
                                        AudioFormat::opus, AudioFormat::mp3, AudioFormat::aac};

std::vector<float> s16_quantised(std::span<const float> x) {
  std::vector<float> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    out[i] = static_cast<float>(std::lrint(std::clamp(x[i], -1.0f, 1.0f) * 32767.0f)) / 32768.0f;
  return out;
}

std::vector<float> decode_pcm(std::span<const std::byte> b) {
  std::vector<float> out;
  for (std::size_t i = 0; i + 1 < b.size(); i += 2)
    out.push_back(static_cast<std::int16_t>(le(b.data() + i, 2)) / 32768.0f);
  return out;
}

struct streamed {
  std::vector<std::byte> bytes;
  std::vector<std::size_t> boundaries;  // size of the stream after each push
};

streamed encode_in_pieces(AudioFormat f, std::span<const float> x, std::uint32_t rate,
                          std::uint32_t channels, std::size_t piece_frames) {
  StreamingEncoder enc(f, rate, channels);
  streamed s;
  for (std::size_t at = 0; at < x.size(); at += piece_frames * channels) {
    const auto chunk = enc.push(x.subspan(at, std::min(piece_frames * channels, x.size() - at)));
    s.bytes.insert(s.bytes.end(), chunk.begin(), chunk.end());
    s.boundaries.push_back(s.bytes.size());
  }
  const auto tail = enc.finish();
  s.bytes.insert(s.bytes.end(), tail.begin(), tail.end());
  CHECK(enc.finish().empty());
  CHECK_THROWS_AS(enc.push(x.subspan(0, channels)), izwi::invalid_argument);
  return s;
}

// Decodes encoded bytes of `format` to mono samples at the encoded rate.
std::vector<float> decode_back(AudioFormat f, std::span<const std::byte> bytes) {
  if (f == AudioFormat::pcm) return decode_pcm(bytes);
  return decode(bytes).audio.samples;
}

}  // namespace

TEST_CASE("format names, content types and encoded rates", "[audio_io][encode]") {
  for (AudioFormat f : all_formats) CHECK(parse_audio_format(to_string(f)) == f);
  CHECK_FALSE(parse_audio_format("m4a").has_value());
  CHECK_FALSE(parse_audio_format("WAV").has_value());
  CHECK_FALSE(parse_audio_format("AAC").has_value());
  CHECK(content_type(AudioFormat::mp3) == "audio/mpeg");
  CHECK(content_type(AudioFormat::aac) == "audio/aac");
  CHECK(encoded_sample_rate(AudioFormat::aac, 24000) == 24000);
  CHECK(encoded_sample_rate(AudioFormat::aac, 22000) == 22050);
  CHECK(encoded_sample_rate(AudioFormat::aac, 7000) == 7350);
  CHECK(encoded_sample_rate(AudioFormat::aac, 100000) == 96000);
  CHECK(content_type(AudioFormat::opus) == "audio/ogg");
  CHECK(encoded_sample_rate(AudioFormat::opus, 24000) == 24000);
  CHECK(encoded_sample_rate(AudioFormat::opus, 22050) == 24000);
  CHECK(encoded_sample_rate(AudioFormat::opus, 44100) == 48000);
  CHECK(encoded_sample_rate(AudioFormat::opus, 96000) == 48000);
  CHECK(encoded_sample_rate(AudioFormat::mp3, 22050) == 22050);
  CHECK(encoded_sample_rate(AudioFormat::mp3, 22000) == 22050);
  CHECK(encoded_sample_rate(AudioFormat::flac, 22000) == 22000);
}

TEST_CASE("lossless formats round-trip exactly to s16 resolution, one-shot and streamed",
          "[audio_io][encode]") {
  const std::uint32_t rate = 24000;
  const auto x = chirp(rate * 2 + 123, rate, 50, 11000, 0.8);
  const auto want = s16_quantised(x);
  for (AudioFormat f : {AudioFormat::wav, AudioFormat::pcm, AudioFormat::flac}) {
    INFO(to_string(f));
    const auto one = encode(x, rate, 1, f);
    const auto got = decode_back(f, one);
    CHECK(got == want);
    for (std::size_t piece : {std::size_t{1}, std::size_t{480}, std::size_t{7000}}) {
      INFO("pieces of " << piece << " frames");
      const auto s = encode_in_pieces(f, x, rate, 1, piece);
      CHECK(decode_back(f, s.bytes) == want);
      if (f != AudioFormat::flac) CHECK(s.bytes.size() == one.size());
    }
    if (f != AudioFormat::pcm) {
      const auto d = decode(one);
      CHECK(d.info.format == to_string(f));
      CHECK(d.info.sample_rate == rate);
      CHECK(d.info.encoding == "pcm_16");
    }
  }
}

TEST_CASE("WAV output: exact header sizes one-shot, 0xFFFFFFFF when streamed, and an independent reader agrees",
          "[audio_io][encode]") {
  const auto x = sine(1600, 16000, 440, 0.5);
  const auto one = encode(x, 16000, 1, AudioFormat::wav);
  REQUIRE(one.size() == 44 + 3200);
  CHECK(le(one.data() + 4, 4) == 36 + 3200);
  CHECK(le(one.data() + 40, 4) == 3200);
  const simple_wav w = read_simple_wav(one);
  CHECK(w.rate == 16000);
  CHECK(w.channels == 1);
  CHECK(w.bits == 16);
  CHECK(w.samples == s16_quantised(x));

  const auto s = encode_in_pieces(AudioFormat::wav, x, 16000, 1, 100);
  CHECK(le(s.bytes.data() + 4, 4) == 0xFFFFFFFFu);
  CHECK(le(s.bytes.data() + 40, 4) == 0xFFFFFFFFu);
  CHECK(read_simple_wav(s.bytes).samples == s16_quantised(x));
}

TEST_CASE("lossy formats round-trip with correlation above 0.98 after aligning the codec delay",
          "[audio_io][encode]") {
  for (AudioFormat f : {AudioFormat::opus, AudioFormat::mp3, AudioFormat::aac}) {
    for (std::uint32_t rate : {24000u, 16000u, 22000u, 44100u}) {
      INFO(to_string(f) << " at " << rate << " Hz");
      const std::uint32_t out_rate = encoded_sample_rate(f, rate);
      const auto x = chirp(rate * 2, rate, 100, 4000, 0.5);
      const auto ref = out_rate == rate ? x : resample(x, rate, out_rate);
      const auto one = encode(x, rate, 1, f);
      const auto d1 = decode(one);
      CHECK(d1.info.sample_rate == out_rate);
      if (f == AudioFormat::aac) {
        // ADTS cannot say how many samples are priming (1024) or padding
        // (the last frame's rest): decoders return them, as they do for OpenAI's aac.
        CHECK(d1.info.format == "aac");
        CHECK(d1.info.frames >= ref.size() + 1024);
        CHECK(d1.info.frames <= ref.size() + 1024 + 2048);
      } else {
        // One-shot: exact length (Opus pre-skip; mp3 via LAME's Info tag).
        CHECK(d1.info.frames == ref.size());
      }
      const long delay = f == AudioFormat::aac ? 1024 : 0;
      const alignment a1 = best_alignment(ref, d1.audio.samples, delay - 64, delay + 64);
      INFO("one-shot: lag " << a1.lag << ", correlation " << a1.correlation);
      CHECK(a1.correlation > 0.98);

      const auto s = encode_in_pieces(f, x, rate, 1, rate / 50);  // 20 ms pieces
      const auto d2 = decode(s.bytes);
      // Streamed mp3 keeps LAME's padding (no Info tag): up to 2 frames more.
      CHECK(d2.info.frames >= ref.size());
      CHECK(d2.info.frames <= ref.size() + 2 * 1152 + 1152);
      const alignment a2 = best_alignment(ref, d2.audio.samples, -64, 2400);
      INFO("streamed: lag " << a2.lag << ", correlation " << a2.correlation);
      CHECK(a2.correlation > 0.98);
      if (f == AudioFormat::aac) CHECK(s.bytes == one);  // ADTS: streamed and whole are one stream
    }
  }
}

TEST_CASE("aac output is a sequence of whole ADTS frames, each decodable from the start",
          "[audio_io][encode]") {
  const std::uint32_t rate = 24000;
  const auto x = chirp(rate, rate, 200, 6000, 0.5);
  const auto s = encode_in_pieces(AudioFormat::aac, x, rate, 1, 480);
  // Every push returns whole frames: each chunk boundary is a frame boundary.
  std::vector<std::size_t> frame_ends;
  for (std::size_t at = 0; at < s.bytes.size();) {
    const std::size_t length = detail::adts_frame_length(s.bytes, at);
    REQUIRE(length > 7);
    REQUIRE(at + length <= s.bytes.size());
    // MPEG-4 AAC LC, no CRC, 24 kHz (index 6), mono.
    CHECK(static_cast<unsigned>(s.bytes[at + 1]) == 0xF1);
    CHECK(static_cast<unsigned>(s.bytes[at + 2]) >> 6 == 1);
    CHECK(((static_cast<unsigned>(s.bytes[at + 2]) >> 2) & 0xF) == 6);
    CHECK((((static_cast<unsigned>(s.bytes[at + 2]) & 1) << 2) | (static_cast<unsigned>(s.bytes[at + 3]) >> 6)) == 1);
    at += length;
    frame_ends.push_back(at);
  }
  // 24000 samples + 1024 priming → 25 frames at least, one per 1024 samples.
  CHECK(frame_ends.size() >= 25);
  CHECK(frame_ends.size() <= 27);
  for (std::size_t end : s.boundaries)
    CHECK((end == 0 || std::find(frame_ends.begin(), frame_ends.end(), end) != frame_ends.end()));
  // A prefix of n frames decodes to n × 1024 samples.
  for (std::size_t n : {std::size_t{1}, std::size_t{2}, std::size_t{10}}) {
    const auto prefix = std::span<const std::byte>(s.bytes).first(frame_ends[n - 1]);
    CHECK(decode(prefix).info.frames == n * 1024);
  }
  CHECK_THROWS_AS(StreamingEncoder(AudioFormat::aac, rate, 3), EncodeError);
}

TEST_CASE("a stream is a valid file at every chunk boundary", "[audio_io][encode]") {
  // What a client holds after each chunk of a streaming response decodes
  // without error and grows; at the end it holds everything.
  const std::uint32_t rate = 24000;
  const auto x = chirp(rate * 3, rate, 100, 5000, 0.5);
  for (AudioFormat f : {AudioFormat::wav, AudioFormat::flac, AudioFormat::opus, AudioFormat::mp3,
                        AudioFormat::aac}) {
    INFO(to_string(f));
    const auto s = encode_in_pieces(f, x, rate, 1, rate / 4);
    std::size_t previous = 0, checked = 0;
    for (std::size_t end : s.boundaries) {
      if (end == 0 || end == previous) continue;
      const auto prefix = std::span<const std::byte>(s.bytes).first(end);
      std::size_t frames = 0;
      REQUIRE_NOTHROW(frames = decode(prefix).info.frames);
      CHECK(frames > 0);
      previous = end;
      ++checked;
    }
    CHECK(checked >= 2);
    CHECK(decode(s.bytes).info.frames >= x.size());
  }
}

TEST_CASE("stereo encodes and decodes with its channels, and bad channel counts are refused",
          "[audio_io][encode]") {
  const std::uint32_t rate = 48000;
  const auto left = sine(rate, rate, 440, 0.5), right = sine(rate, rate, 660, 0.3);
  std::vector<float> x(2 * rate);
  for (std::uint32_t i = 0; i < rate; ++i) x[2 * i] = left[i], x[2 * i + 1] = right[i];
  for (AudioFormat f : {AudioFormat::wav, AudioFormat::flac, AudioFormat::opus, AudioFormat::mp3,
                        AudioFormat::aac}) {
    INFO(to_string(f));
    const auto d = decode(encode(x, rate, 2, f), {.mono = false});
    CHECK(d.info.channels == 2);
    std::vector<float> l(d.audio.frames()), r(d.audio.frames());
    for (std::size_t i = 0; i < l.size(); ++i) l[i] = d.audio.samples[2 * i], r[i] = d.audio.samples[2 * i + 1];
    const long delay = f == AudioFormat::aac ? 1024 : 0;  // AAC's priming, which ADTS cannot mark
    CHECK(best_alignment(left, l, delay - 64, delay + 64).correlation > 0.98);
    CHECK(best_alignment(right, r, delay - 64, delay + 64).correlation > 0.98);
  }
  CHECK_THROWS_AS(encode(std::vector<float>(30), rate, 3, AudioFormat::mp3), EncodeError);
  CHECK_THROWS_AS(StreamingEncoder(AudioFormat::wav, rate, 0), izwi::invalid_argument);
  CHECK_THROWS_AS(StreamingEncoder(AudioFormat::wav, 0, 1), izwi::invalid_argument);
}

TEST_CASE("out-of-range samples are clipped and NaN becomes silence", "[audio_io][encode]") {
  const std::vector<float> x{2.0f, -3.0f, std::nanf(""), 0.5f};
  for (AudioFormat f : {AudioFormat::wav, AudioFormat::pcm, AudioFormat::flac}) {
    INFO(to_string(f));
    const auto got = decode_back(f, encode(x, 16000, 1, f));
    REQUIRE(got.size() == 4);
    CHECK(got[0] == Approx(32767 / 32768.0));
    CHECK(got[1] == Approx(-32767 / 32768.0));
    CHECK(got[2] == 0.0f);
    CHECK(got[3] == Approx(0.5).margin(1e-4));
  }
}
