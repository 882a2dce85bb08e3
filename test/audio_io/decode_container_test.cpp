// Decoding the containers libsndfile lacks (MP4/M4A, WebM/Matroska, ADTS AAC,
// MPEG-PS), through the same decode() entry point: files made at test time
// from jfk.wav by FFmpeg's own encoders and muxers (av_mux_support.hpp),
// compared with the source; duration limits; cut-off uploads; and every
// truncation and many bit flips of each, which must decode or throw
// DecodeError, nothing else.

#include <catch2/catch.hpp>

#include <cmath>
#include <initializer_list>
#include <random>
#include <string>

#include "audio_io/audio_test_support.hpp"
#include "audio_io/av_mux_support.hpp"
#include "izwi/audio/decode.hpp"
#include "izwi/audio/detail/adts_header.hpp"
#include "izwi/audio/detail/container_sniff.hpp"

using namespace izwi::audio;
using namespace izwi::audio::test;

namespace {

// FFmpeg reports every malformed input it meets on stderr; the cases below
// feed it thousands on purpose.
const int quiet_ffmpeg = (av_log_set_level(AV_LOG_FATAL), 0);

struct container_case {
  const char* name;
  mux_spec spec;
  const char* format;    // DecodeInfo::format expected
  const char* encoding;  // DecodeInfo::encoding expected
  double min_correlation;  // against jfk.wav after aligning the codec delay; 1 = bit-exact
  bool length_declared;    // the container states its duration (too_long before decoding)
};

const container_case container_cases[] = {
    {"M4A (AAC-LC)", {"ipod", "aac"}, "m4a", "aac", 0.999, true},
    {"M4A (ALAC)", {"ipod", "alac"}, "m4a", "alac", 1.0, true},
    {"fragmented MP4 (AAC)", {"mp4", "aac", true, "movflags=frag_keyframe+empty_moov"}, "mp4", "aac", 0.999, true},
    {"WebM (Opus)", {"webm", "libopus"}, "webm", "opus", 0.995, true},
    {"WebM (Vorbis)", {"webm", "libvorbis"}, "webm", "vorbis", 0.99, true},
    {"live WebM (Opus, written to a pipe)", {"webm", "libopus", false}, "webm", "opus", 0.995, false},
    {"Matroska (FLAC)", {"matroska", "flac"}, "matroska", "flac", 1.0, true},
    {"ADTS (AAC-LC)", {"adts", "aac"}, "aac", "aac", 0.999, false},
    {"MPEG-PS (MP2)", {"mpeg", "mp2"}, "mpeg", "mp2", 0.999, true},
};

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

/// Signal-to-noise ratio in dB of `b` against `a`, with b shifted by `lag`.
double snr_db(std::span<const float> a, std::span<const float> b, long lag) {
  double signal = 0, noise = 0;
  for (long i = 0; i < static_cast<long>(a.size()); ++i) {
    const long j = i + lag;
    if (j < 0 || j >= static_cast<long>(b.size())) continue;
    signal += double(a[i]) * a[i];
    noise += (double(a[i]) - b[j]) * (double(a[i]) - b[j]);
  }
  return noise > 0 ? 10 * std::log10(signal / noise) : INFINITY;
}

}  // namespace

TEST_CASE("MP4/M4A, WebM, Matroska, ADTS and MPEG-PS from FFmpeg's encoders decode to jfk.wav",
          "[audio_io][decode][ffmpeg]") {
  IZWI_SKIP_WITHOUT_FIXTURES();
  const auto wav = decode_file(fixture("jfk.wav")).audio.samples;
  for (const container_case& c : container_cases) {
    INFO(c.name);
    const auto bytes = mux_audio(c.spec, wav, 16000);
    const DecodedAudio d = decode(bytes, {.target_sample_rate = 16000});
    CHECK(d.info.format == c.format);
    CHECK(d.info.encoding == c.encoding);
    CHECK(d.info.channels == 1);
    CHECK(d.audio.sample_rate == 16000);
    CHECK(d.audio.channels == 1);
    // Lossy codecs add their delay and pad the last frame (ADTS and fragmented
    // MP4 cannot signal either): within a frame or two of 11 s.
    CHECK(d.info.duration_seconds == Approx(11.0).margin(0.2));
    if (c.min_correlation == 1.0) {
      // Lossless: the s16 codes come back exactly.
      CHECK(d.audio.samples == wav);
      continue;
    }
    const alignment a = best_alignment(wav, d.audio.samples, -100, 2200);
    INFO("lag " << a.lag << ", correlation " << a.correlation << ", SNR " << snr_db(wav, d.audio.samples, a.lag)
                << " dB");
    CHECK(a.correlation > c.min_correlation);
    CHECK(a.lag >= 0);
  }
}

TEST_CASE("a WebM and an M4A go through the same decode() as a WAV: bytes, string_view and file",
          "[audio_io][decode][ffmpeg]") {
  IZWI_SKIP_WITHOUT_FIXTURES();
  const auto wav = decode_file(fixture("jfk.wav")).audio.samples;
  for (const container_case& c : {container_cases[0], container_cases[3]}) {
    INFO(c.name);
    const auto bytes = mux_audio(c.spec, wav, 16000);
    const DecodedAudio d = decode(bytes);
    const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    CHECK(decode(text).audio.samples == d.audio.samples);
    // Opus in WebM always decodes at 48 kHz; AAC at the rate it was encoded at.
    CHECK(d.info.sample_rate == (c.spec.encoder == std::string("libopus") ? 48000u : 16000u));
    // Stereo kept: the mono source comes back as one channel either way.
    CHECK(decode(bytes, {.mono = false}).audio.channels == 1);
  }
}

TEST_CASE("the duration limit: from the container's header before decoding, else while decoding",
          "[audio_io][decode][ffmpeg][errors]") {
  IZWI_SKIP_WITHOUT_FIXTURES();
  const auto wav = decode_file(fixture("jfk.wav")).audio.samples;
  for (const container_case& c : container_cases) {
    INFO(c.name);
    const auto bytes = mux_audio(c.spec, wav, 16000);
    const auto e = expect_decode_error([&] { decode(bytes, {.max_duration_seconds = 5.0}); });
    CHECK(e.problem() == DecodeProblem::too_long);
    if (c.length_declared) {
      // Only the header's figure gives this message: nothing was decoded.
      CHECK_THAT(e.what(), Catch::StartsWith("audio is 1") && Catch::Contains(" s long, over the 5.0 s limit"));
    } else {
      CHECK_THAT(e.what(), Catch::Contains("longer than the 5.0 s limit (stopped reading at 5."));
    }
    CHECK_NOTHROW(decode(bytes, {.max_duration_seconds = 12.0}));
  }
}

TEST_CASE("a cut-off upload of each container is reported as truncated, naming what was cut",
          "[audio_io][decode][ffmpeg][errors]") {
  IZWI_SKIP_WITHOUT_FIXTURES();
  const auto wav = decode_file(fixture("jfk.wav")).audio.samples;
  for (const container_case& c : container_cases) {
    const auto bytes = mux_audio(c.spec, wav, 16000);
    for (double fraction : {0.1, 0.5, 0.9, 0.999}) {
      INFO(c.name << " cut to " << fraction << " of " << bytes.size() << " bytes");
      auto cut = bytes;
      cut.resize(static_cast<std::size_t>(static_cast<double>(cut.size()) * fraction));
      const auto e = expect_decode_error([&] { decode(cut); });
      CHECK(e.problem() == DecodeProblem::truncated);
      CHECK_THAT(e.what(), Catch::StartsWith("truncated " + upper(c.format)));
      CHECK_THAT(e.what(), Catch::Contains("declares") || Catch::Contains("is missing"));
    }
  }
  SECTION("an M4A cut at a box boundary before its index: the missing 'moov' is named") {
    auto m4a = mux_audio(container_cases[0].spec, wav, 16000);
    // ipod muxer layout: ftyp, free, mdat, moov; keep everything before moov.
    std::size_t at = 0;
    while (at + 8 <= m4a.size() && std::string(reinterpret_cast<const char*>(m4a.data() + at + 4), 4) != "moov")
      at += static_cast<std::size_t>(detail::read_be(m4a, at, 4));
    REQUIRE(at < m4a.size());
    m4a.resize(at);
    const auto e = expect_decode_error([&] { decode(m4a); });
    CHECK(e.problem() == DecodeProblem::truncated);
    CHECK_THAT(e.what(), Catch::Contains("'moov' box (the index) is missing"));
  }
}

TEST_CASE("truncations and bit flips of every container decode or throw DecodeError, nothing else",
          "[audio_io][decode][ffmpeg][errors]") {
  // Fuzz-style, deterministic: a 1.5 s chirp per container (short, so that the
  // thousands of decodes stay quick under sanitizers), cut at 60 points and
  // corrupted at 150 random bytes each. A crash, a sanitizer report or any
  // other exception fails the test; a decode may succeed, but never longer
  // than the audio can be.
  const auto x = chirp(24000, 16000, 100, 6000, 0.6);
  std::mt19937 rng(12);
  for (const container_case& c : container_cases) {
    INFO(c.name);
    const auto bytes = mux_audio(c.spec, x, 16000);
    std::size_t errors = 0, decoded = 0, truncated = 0;
    auto attempt = [&](std::span<const std::byte> input) {
      try {
        const DecodedAudio d = decode(input, {.max_duration_seconds = 30.0});
        CHECK(d.info.duration_seconds < 3.0);
        ++decoded;
      } catch (const DecodeError& e) {
        ++errors;
        if (e.problem() == DecodeProblem::truncated) ++truncated;
      }
    };
    for (int i = 1; i <= 60; ++i) attempt(std::span<const std::byte>(bytes).first(bytes.size() * i / 61));
    // None of these cuts falls on a frame or element boundary, so each is a
    // cut-off file, and the structural checks see it.
    CHECK(truncated == 60);
    for (int i = 0; i < 150; ++i) {
      auto flipped = bytes;
      const std::size_t at = rng() % flipped.size();
      flipped[at] ^= static_cast<std::byte>(1u << (rng() % 8));
      attempt(flipped);
    }
    INFO(decoded << " decoded, " << errors << " DecodeErrors");
    CHECK(decoded + errors == 210);
  }
}

TEST_CASE("a WebM whose Clusters have unknown size (as browsers' MediaRecorder writes) decodes, and cut it is truncated",
          "[audio_io][decode][ffmpeg][errors]") {
  const auto x = chirp(48000, 16000, 100, 5000, 0.5);
  const auto live = mux_audio({"webm", "libopus", false}, x, 16000);
  // FFmpeg's live WebM has a Segment of unknown size but sized Clusters:
  // rewrite each Cluster's 2-byte size as 0x7FFF, EBML's 2-byte "unknown".
  auto unknown = live;
  const auto header = detail::read_ebml_vint(unknown, 0, true);
  const auto header_size = detail::read_ebml_vint(unknown, header->length, false);
  std::size_t at = header->length + header_size->length + header_size->value;
  const auto segment = detail::read_ebml_vint(unknown, at, true);
  REQUIRE(segment->value == 0x18538067);
  const auto segment_size = detail::read_ebml_vint(unknown, at + segment->length, false);
  REQUIRE(segment_size->all_ones);
  at += segment->length + segment_size->length;
  int clusters = 0;
  while (at < unknown.size()) {
    const auto id = detail::read_ebml_vint(unknown, at, true);
    REQUIRE(id);
    const auto size = detail::read_ebml_vint(unknown, at + id->length, false);
    REQUIRE((size && !size->all_ones));
    if (id->value == 0x1F43B675 && size->length == 2) {
      unknown[at + id->length] = std::byte{0x7F};
      unknown[at + id->length + 1] = std::byte{0xFF};
      ++clusters;
    }
    at += id->length + size->length + static_cast<std::size_t>(size->value);
  }
  REQUIRE(clusters >= 2);
  const DecodedAudio d = decode(unknown);
  CHECK(d.info.format == "webm");
  CHECK(d.audio.samples == decode(live).audio.samples);
  auto cut = unknown;
  cut.resize(cut.size() / 2);
  const auto e = expect_decode_error([&] { decode(cut); });
  CHECK(e.problem() == DecodeProblem::truncated);
  CHECK_THAT(e.what(), Catch::StartsWith("truncated WEBM stream: a SimpleBlock declares"));
}

TEST_CASE("container sniffing: ADTS after an ID3 tag, and FFmpeg never opens other files",
          "[audio_io][decode][ffmpeg]") {
  const auto x = sine(16000, 16000, 440, 0.5);
  SECTION("an ID3v2 tag in front of ADTS frames") {
    auto adts = mux_audio({"adts", "aac"}, x, 16000);
    std::vector<std::byte> tagged = as_bytes_vector(std::string("ID3\x04\x00\x00\x00\x00\x00\x0A", 10));
    tagged.resize(20, std::byte{0});
    tagged.insert(tagged.end(), adts.begin(), adts.end());
    const auto d = decode(tagged);
    CHECK(d.info.format == "aac");
    CHECK(d.info.frames >= 16000);
  }
  SECTION("an MP4 whose only box after ftyp is garbage is corrupt or truncated, not a crash") {
    std::vector<std::byte> mp4 = as_bytes_vector(std::string("\x00\x00\x00\x14" "ftypisom\x00\x00\x02\x00isom", 20));
    const auto moov = as_bytes_vector(std::string("\x00\x00\x00\x10moov\xde\xad\xbe\xef\x01\x02\x03\x04", 16));
    mp4.insert(mp4.end(), moov.begin(), moov.end());
    const auto e = expect_decode_error([&] { decode(mp4); });
    CHECK((e.problem() == DecodeProblem::corrupt || e.problem() == DecodeProblem::not_audio));
    CHECK_THAT(e.what(), Catch::Contains("MP4"));
  }
  SECTION("a lone ftyp box: the index is missing") {
    const auto e = expect_decode_error(
        [] { decode(std::string("\x00\x00\x00\x14" "ftypM4A \x00\x00\x02\x00isom", 20)); });
    CHECK(e.problem() == DecodeProblem::truncated);
    CHECK_THAT(e.what(), Catch::StartsWith("truncated M4A file"));
  }
}

TEST_CASE("container structure checks on hand-built bytes", "[audio_io][decode][ffmpeg]") {
  using namespace izwi::audio::detail;
  auto bytes = [](std::initializer_list<unsigned> v) {
    std::vector<std::byte> out;
    for (unsigned b : v) out.push_back(static_cast<std::byte>(b));
    return out;
  };
  SECTION("ISO boxes: 64-bit sizes, size 0 = to the end, a cut box, a cut header") {
    // ftyp (16) + moov (8) + mdat with a 64-bit size of 24 (16 header + 8 data).
    auto iso = bytes({0, 0, 0, 16, 'f', 't', 'y', 'p', 'i', 's', 'o', 'm', 0, 0, 0, 0, 0, 0, 0, 8, 'm', 'o', 'o', 'v',
                      0, 0, 0, 1, 'm', 'd', 'a', 't', 0, 0, 0, 0, 0, 0, 0, 24, 1, 2, 3, 4, 5, 6, 7, 8});
    CHECK_FALSE(find_iso_box_shortfall(iso).has_value());
    auto cut = iso;
    cut.pop_back();
    const auto s = find_iso_box_shortfall(cut);
    REQUIRE(s.has_value());
    CHECK(s->what == "the 'mdat' box");
    CHECK(s->declared == 24);
    CHECK(s->present == 23);
    cut.resize(iso.size() - 24 + 5);  // 5 bytes of the mdat header
    CHECK(find_iso_box_shortfall(cut)->what == "a box header");
    // Size 0: the last box runs to the end of the file, whatever that is.
    auto open_ended = iso;
    open_ended[27] = std::byte{0};
    open_ended.resize(iso.size() - 8 - 5);
    for (int i = 0; i < 4; ++i) open_ended[24 + i] = std::byte{0};
    CHECK_FALSE(find_iso_box_shortfall(open_ended).has_value());
    const auto no_moov = bytes({0, 0, 0, 16, 'f', 't', 'y', 'p', 'M', '4', 'A', ' ', 0, 0, 0, 0});
    CHECK(find_iso_box_shortfall(no_moov)->absent);
    CHECK(sniff_av_container(no_moov)->name == "m4a");
  }
  SECTION("ADTS: frame lengths, a cut frame, a cut header, a trailing tag") {
    std::vector<std::byte> adts;
    for (int frame = 0; frame < 3; ++frame) {
      append_adts_header(adts, adts_sampling_index(16000), 1, 10);
      adts.resize(adts.size() + 10, std::byte{0x21});
    }
    REQUIRE(adts.size() == 51);
    CHECK(adts_frame_length(adts, 0) == 17);
    CHECK(adts_frame_length(adts, 17) == 17);
    CHECK(sniff_av_container(adts)->kind == av_container_kind::adts);
    CHECK_FALSE(find_adts_shortfall(adts).has_value());
    auto cut = adts;
    cut.resize(45);
    CHECK(find_adts_shortfall(cut)->what == "an ADTS frame");
    CHECK(find_adts_shortfall(cut)->declared == 17);
    CHECK(find_adts_shortfall(cut)->present == 11);
    cut.resize(37);
    CHECK(find_adts_shortfall(cut)->what == "an ADTS frame header");
    auto tagged = adts;
    for (char c : std::string("TAG")) tagged.push_back(static_cast<std::byte>(c));
    CHECK_FALSE(find_adts_shortfall(tagged).has_value());
    // One frame header followed by bytes that are no frame: not taken for ADTS.
    auto lone = adts;
    lone[17] = std::byte{0x00};
    CHECK_FALSE(sniff_av_container(lone).has_value());
  }
  SECTION("EBML: sizes of unknown length, the DocType, a cut Segment") {
    // EBML header { DocType "webm" }, Segment of 5 bytes.
    auto webm = bytes({0x1A, 0x45, 0xDF, 0xA3, 0x87, 0x42, 0x82, 0x84, 'w', 'e', 'b', 'm',
                       0x18, 0x53, 0x80, 0x67, 0x85, 0xEC, 0x83, 0, 0, 0});
    CHECK(ebml_doc_type(webm) == "webm");
    CHECK(sniff_av_container(webm)->name == "webm");
    CHECK_FALSE(find_ebml_segment_shortfall(webm).has_value());
    auto cut = webm;
    cut.pop_back();
    CHECK(find_ebml_segment_shortfall(cut)->what == "the Segment");
    const auto unknown = read_ebml_vint(bytes({0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}), 0, false);
    REQUIRE(unknown.has_value());
    CHECK(unknown->length == 8);
    CHECK(unknown->all_ones);
    CHECK_FALSE(read_ebml_vint(bytes({0x00, 0x01}), 0, false).has_value());  // 9+ byte lengths are invalid
  }
  SECTION("MPEG-PS packets and TS packets") {
    auto ps = bytes({0, 0, 1, 0xBA, 0x44, 0, 4, 0, 4, 1, 0, 0, 3, 0xF8,  // MPEG-2 pack header, no stuffing
                     0, 0, 1, 0xC0, 0, 3, 1, 2, 3});                       // audio packet of 3 bytes
    CHECK(sniff_av_container(ps)->kind == av_container_kind::mpeg_ps);
    CHECK_FALSE(find_mpeg_ps_shortfall(ps).has_value());
    ps.pop_back();
    CHECK(find_mpeg_ps_shortfall(ps)->what == "a packet");
    std::vector<std::byte> ts(3 * 188 + 10, std::byte{0});
    for (std::size_t at = 0; at < ts.size(); at += 188) ts[at] = std::byte{0x47};
    CHECK(sniff_av_container(ts)->kind == av_container_kind::mpeg_ts);
    CHECK(find_mpeg_ts_shortfall(ts)->present == 10);
  }
}
