// Energy VAD on synthetic bursts in noise; speech segments from Silero
// probabilities against an independent Python segmentation.

#include <izwi/audio/vad.hpp>
#include <izwi/models/silero_vad.hpp>

#include "vad_test_support.hpp"

#include <cmath>
#include <numbers>
#include <random>
#include <sstream>

using izwi::audio::SpeechSegment;

namespace {

// White noise at `noise_rms`, with 440 Hz tone bursts of amplitude 0.3 at the
// given [start, end) seconds.
std::vector<float> bursts_in_noise(double seconds, double noise_rms, const std::vector<std::pair<double, double>>& bursts,
                                   unsigned seed = 7) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, static_cast<float>(noise_rms));
  std::vector<float> x(static_cast<std::size_t>(seconds * 16000));
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double t = static_cast<double>(i) / 16000;
    x[i] = noise(rng);
    for (auto [a, b] : bursts)
      if (t >= a && t < b) x[i] += static_cast<float>(0.3 * std::sin(2 * std::numbers::pi * 440 * t));
  }
  return x;
}

std::string describe(const std::vector<SpeechSegment>& segments) {
  std::ostringstream out;
  for (auto s : segments) out << "[" << s.start_seconds(16000) << ", " << s.end_seconds(16000) << ") ";
  return out.str();
}

}  // namespace

TEST_CASE("energy VAD finds tone bursts in noise at their times", "[vad][energy]") {
  const std::vector<std::pair<double, double>> bursts = {{1.0, 1.5}, {2.5, 3.3}, {4.0, 4.2}};
  const auto x = bursts_in_noise(5.0, 0.01, bursts);
  izwi::audio::EnergyVadOptions options;
  const auto segments = izwi::audio::energy_vad_segments(x, options);
  INFO(describe(segments));
  REQUIRE(segments.size() == bursts.size());
  const double frame = options.frame_ms / 1000;
  for (std::size_t i = 0; i < bursts.size(); ++i) {
    CHECK(std::abs(segments[i].start_seconds(16000) - bursts[i].first) <= frame);
    // Ends late by the hangover, never early.
    CHECK(segments[i].end_seconds(16000) >= bursts[i].second - 1e-9);
    CHECK(segments[i].end_seconds(16000) <= bursts[i].second + (options.hangover_frames + 1) * frame);
  }
}

TEST_CASE("energy VAD: stationary noise and digital silence are not speech", "[vad][energy]") {
  CHECK(izwi::audio::energy_vad_segments(bursts_in_noise(4.0, 0.01, {})).empty());
  CHECK(izwi::audio::energy_vad_segments(std::vector<float>(32000, 0.0f)).empty());
  CHECK(izwi::audio::energy_vad_segments({}).empty());
}

TEST_CASE("energy VAD: the noise floor follows a louder background", "[vad][energy]") {
  // Noise steps up by 12 dB at 2 s and stays there: flagged briefly while the
  // floor climbs, then silent again; a burst after that is still found.
  auto x = bursts_in_noise(10.0, 0.005, {{8.0, 8.5}});
  for (std::size_t i = 32000; i < x.size(); ++i) x[i] *= 4.0f;  // +12 dB
  izwi::audio::EnergyVad vad;
  const std::size_t n = vad.frame_samples();
  std::size_t speech_frames_in_noise = 0;
  bool burst_found = false;
  double floor_before_step = 0;
  for (std::size_t start = 0; start + n <= x.size(); start += n) {
    const bool speech = vad.process_frame(std::span<const float>(x).subspan(start, n));
    const double t = static_cast<double>(start) / 16000;
    if (t < 1.99) floor_before_step = vad.noise_floor_db();
    if (t < 8.0 && speech) ++speech_frames_in_noise;
    if (t >= 8.0 && t < 8.5 && speech) burst_found = true;
  }
  // The floor must climb ~5-6 dB (step + its place below the mean - margin) at
  // 4 dB/s: about 1.5 s of false speech, never the whole 6 s.
  CHECK(speech_frames_in_noise * n < 2 * 16000);
  CHECK(speech_frames_in_noise > 0);  // the step itself is loud for a while
  CHECK(burst_found);
  CHECK(vad.noise_floor_db() > floor_before_step + 9);  // the floor moved up with the noise
}

TEST_CASE("speech segments: rules on hand-made probabilities", "[vad][segments]") {
  izwi::audio::SpeechSegmentOptions options;
  options.speech_pad_ms = 0;
  // 512-sample windows; speech in windows 10..29 with a 2-window dip (64 ms < 100 ms) that is bridged.
  std::vector<float> p(60, 0.05f);
  for (int i = 10; i < 30; ++i) p[i] = 0.9f;
  p[18] = p[19] = 0.1f;
  auto s = izwi::audio::speech_segments(p, 60 * 512, options);
  REQUIRE(s.size() == 1);
  CHECK(s[0] == SpeechSegment{10 * 512, 30 * 512});

  // Between neg_threshold and threshold: not enough to start, but keeps speech going.
  p.assign(60, 0.4f);
  CHECK(izwi::audio::speech_segments(p, 60 * 512, options).empty());
  for (int i = 10; i < 20; ++i) p[i] = 0.9f;
  s = izwi::audio::speech_segments(p, 60 * 512, options);
  REQUIRE(s.size() == 1);
  CHECK(s[0].end == 60 * 512);  // 0.4 >= neg_threshold 0.35 never ends it

  // Too short: 7 windows = 224 ms <= 250 ms.
  p.assign(60, 0.0f);
  for (int i = 10; i < 17; ++i) p[i] = 0.9f;
  CHECK(izwi::audio::speech_segments(p, 60 * 512, options).empty());

  // Padding: 30 ms = 480 samples each side, clamped to the signal.
  options.speech_pad_ms = 30;
  p.assign(60, 0.0f);
  for (int i = 0; i < 20; ++i) p[i] = 0.9f;
  s = izwi::audio::speech_segments(p, 60 * 512, options);
  REQUIRE(s.size() == 1);
  CHECK(s[0] == SpeechSegment{0, 20 * 512 + 480});

  CHECK_THROWS_AS(izwi::audio::speech_segments(p, 100, {.sample_rate = 0}), izwi::invalid_argument);
}

TEST_CASE("speech segments from Silero on jfk.wav cover the speech", "[vad][segments][silero]") {
  if (vad_test::skip_without_fixtures()) return;
  const auto samples = vad_test::read_wav_16k_mono(vad_test::fixtures() / "audio/jfk.wav");
  const auto vad = izwi::models::SileroVad::load(vad_test::silero_weights());
  const auto segments = izwi::audio::speech_segments(vad.speech_probabilities(samples), samples.size());
  INFO(describe(segments));
  REQUIRE(segments.size() >= 1);
  CHECK(segments.front().start_seconds(16000) == Approx(0.3).margin(0.2));
  CHECK(segments.back().end_seconds(16000) == Approx(10.5).margin(0.4));
  std::size_t speech = 0;
  for (auto s : segments) speech += s.length();
  CHECK(speech > 0.7 * static_cast<double>(segments.back().end - segments.front().start));
}

TEST_CASE("speech segments equal the Python reference segmentation of onnxruntime's probabilities", "[vad][segments][silero]") {
  if (const auto missing = vad_test::onnxruntime_missing()) {
    WARN("skipped: " << *missing);
    return;
  }
  if (!vad_test::command_works("python3 --version")) {
    WARN("skipped: python3 is not on PATH");
    return;
  }
  struct Case {
    const char* wav;
    std::size_t total;
    izwi::audio::SpeechSegmentOptions options;
    std::string args;
  };
  izwi::audio::SpeechSegmentOptions strict;
  strict.threshold = 0.6f;
  strict.min_speech_duration_ms = 500;
  strict.max_speech_duration_s = 4;
  strict.min_silence_duration_ms = 300;
  strict.speech_pad_ms = 100;
  const Case cases[] = {
      {"jfk.wav", 176000, {}, ""},
      {"silero_test.wav", 960000, {}, ""},
      {"silero_test.wav", 960000, strict, " 0.6 500 4 300 100"},
  };
  for (const auto& c : cases) {
    const auto probabilities = vad_test::onnxruntime_probabilities(c.wav);
    const auto probs_file = vad_test::output_dir() / (std::string(c.wav) + ".onnxruntime.txt");
    const auto out = vad_test::output_dir() / (std::string(c.wav) + ".segments.txt");
    const std::string command = "python3 " + vad_test::quoted(vad_test::source_dir() / "test/vad/speech_segments_reference.py") + " " +
                                vad_test::quoted(probs_file) + " " + std::to_string(c.total) + c.args + " > " + vad_test::quoted(out);
    INFO(command);
    REQUIRE(std::system(command.c_str()) == 0);
    const auto numbers = vad_test::read_numbers(out);
    REQUIRE(numbers.size() % 2 == 0);
    std::vector<SpeechSegment> reference;
    for (std::size_t i = 0; i < numbers.size(); i += 2)
      reference.push_back({static_cast<std::size_t>(numbers[i]), static_cast<std::size_t>(numbers[i + 1])});
    const std::vector<float> p(probabilities.begin(), probabilities.end());
    const auto ours = izwi::audio::speech_segments(p, c.total, c.options);
    INFO(c.wav << c.args << "\nizwi:      " << describe(ours) << "\nreference: " << describe(reference));
    CHECK(ours == reference);
    CHECK(reference.size() >= (std::string(c.wav) == "jfk.wav" ? 1u : 5u));
  }
}
