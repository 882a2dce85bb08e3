#include <catch2/catch.hpp>

#include <izwi/audio/mel.hpp>
#include <izwi/core/error.hpp>

#include "reference_tools.hpp"

#include <cmath>
#include <iostream>
#include <numbers>
#include <random>

using namespace izwi::audio;

namespace {

// Issue 5 asks for 1e-4 in log-mel units; the double-precision frontend lands
// near 1e-7 (one float ulp), so hold it to 1e-5 to catch regressions early.
constexpr float tolerance = 1e-5f;

std::vector<float> sine(double hz, double seconds, float amplitude) {
  std::vector<float> x(static_cast<std::size_t>(seconds * 16000));
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = amplitude * static_cast<float>(std::sin(2.0 * std::numbers::pi * hz * static_cast<double>(i) / 16000.0));
  }
  return x;
}

// Linear sweep from f0 to f1 Hz.
std::vector<float> chirp(double f0, double f1, double seconds) {
  std::vector<float> x(static_cast<std::size_t>(seconds * 16000));
  const double rate = (f1 - f0) / seconds;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double t = static_cast<double>(i) / 16000.0;
    x[i] = 0.5f * static_cast<float>(std::sin(2.0 * std::numbers::pi * (f0 * t + 0.5 * rate * t * t)));
  }
  return x;
}

std::vector<float> white_noise(double seconds, float stddev, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, stddev);
  std::vector<float> x(static_cast<std::size_t>(seconds * 16000));
  for (float& v : x) v = std::clamp(dist(rng), -1.0f, 1.0f);
  return x;
}

std::vector<float> jfk() { return izwi_test::read_mono(izwi_test::fixtures_dir() / "audio" / "jfk.wav"); }

const char* mode_name(WhisperPadding padding) {
  return padding == WhisperPadding::pad_or_trim_30s ? "pad_or_trim_30s" : "none";
}

bool numpy_available() {
  if (izwi_test::python_with_numpy() &&
      std::filesystem::exists(izwi_test::fixtures_dir() / "whisper" / "mel_filters.npz")) {
    return true;
  }
  std::cout << "SKIPPED: numpy log-mel reference: no python3 with numpy (install python3-numpy) or no "
               "fixtures/whisper/mel_filters.npz\n";
  WARN("skipped: numpy reference unavailable");
  return false;
}

// izwi's features vs the numpy reference for one signal; returns max |diff|.
float compare_with_numpy(const std::string& name, const std::vector<float>& samples, std::size_t n_mels,
                         WhisperPadding padding) {
  const auto dir = izwi_test::work_dir();
  const std::string stem = "numpy_" + name + "_" + std::to_string(n_mels) + "_" + mode_name(padding);
  const auto in = dir / (stem + ".in.f32");
  const auto out = dir / (stem + ".out.f32");
  izwi_test::write_f32(in, samples);
  const std::string command =
      izwi_test::quoted(*izwi_test::python_with_numpy()) + " " +
      izwi_test::quoted(izwi_test::script_path("whisper_log_mel_reference.py").string()) + " log_mel " +
      izwi_test::quoted((izwi_test::fixtures_dir() / "whisper" / "mel_filters.npz").string()) + " " +
      izwi_test::quoted(in.string()) + " " + std::to_string(n_mels) + " " + mode_name(padding) + " " +
      izwi_test::quoted(out.string());
  REQUIRE(izwi_test::run_command(command));
  const auto expected = izwi_test::read_f32(out);
  const auto features = WhisperLogMel(n_mels)(samples, padding);
  REQUIRE(features.n_mels == n_mels);
  REQUIRE(features.n_frames == WhisperLogMel::frame_count(samples.size(), padding));
  REQUIRE(features.values.size() == expected.size());
  const float worst = izwi_test::max_abs_difference(features.values, expected);
  std::cout << "numpy reference, " << name << " (" << samples.size() << " samples), " << n_mels << " mels, "
            << mode_name(padding) << ": " << features.n_frames << " frames, max |izwi - numpy| = " << worst << "\n";
  return worst;
}

// izwi's features vs transformers.js's WhisperFeatureExtractor (30 s windows).
float compare_with_transformers_js(const std::string& name, const std::vector<float>& samples, std::size_t n_mels) {
  const auto dir = izwi_test::work_dir();
  const std::string stem = "transformers_js_" + name + "_" + std::to_string(n_mels);
  const auto in = dir / (stem + ".in.f32");
  const auto out = dir / (stem + ".out.f32");
  izwi_test::write_f32(in, samples);
  const std::string command =
      "node " + izwi_test::quoted(izwi_test::script_path("whisper_feature_extractor_reference.mjs").string()) + " " +
      izwi_test::quoted(*izwi_test::transformers_js_node_modules()) + " " + izwi_test::quoted(in.string()) + " " +
      std::to_string(n_mels) + " " + izwi_test::quoted(out.string());
  REQUIRE(izwi_test::run_command(command));
  const auto expected = izwi_test::read_f32(out);
  const auto features = WhisperLogMel(n_mels)(samples);
  REQUIRE(features.values.size() == expected.size());
  const float worst = izwi_test::max_abs_difference(features.values, expected);
  std::cout << "transformers.js WhisperFeatureExtractor, " << name << ", " << n_mels
            << " mels: max |izwi - transformers.js| = " << worst << "\n";
  return worst;
}

}  // namespace

TEST_CASE("whisper log-mel of jfk.wav matches the numpy reference (80 and 128 mels, both paddings)",
          "[whisper][reference]") {
  if (!numpy_available()) return;
  const auto audio = jfk();
  REQUIRE(audio.size() == 176000);
  for (std::size_t n_mels : {80u, 128u}) {
    for (auto padding : {WhisperPadding::pad_or_trim_30s, WhisperPadding::none}) {
      CHECK(compare_with_numpy("jfk", audio, n_mels, padding) < tolerance);
    }
  }
}

TEST_CASE("whisper log-mel of synthetic signals matches the numpy reference", "[whisper][reference]") {
  if (!numpy_available()) return;
  CHECK(compare_with_numpy("sine_1khz", sine(1000.0, 10.0, 0.5f), 80, WhisperPadding::pad_or_trim_30s) < tolerance);
  CHECK(compare_with_numpy("chirp_20hz_8khz", chirp(20.0, 8000.0, 30.0), 80, WhisperPadding::pad_or_trim_30s) <
        tolerance);
  CHECK(compare_with_numpy("white_noise_35s", white_noise(35.0, 0.1f, 5), 128, WhisperPadding::pad_or_trim_30s) <
        tolerance);
  CHECK(compare_with_numpy("silence", std::vector<float>(5 * 16000, 0.0f), 80, WhisperPadding::pad_or_trim_30s) <
        tolerance);
  const auto short_clip = white_noise(1.5, 0.05f, 9);
  CHECK(compare_with_numpy("short_clip", short_clip, 80, WhisperPadding::pad_or_trim_30s) < tolerance);
  CHECK(compare_with_numpy("short_clip", short_clip, 80, WhisperPadding::none) < tolerance);
  // Shorter than the 200-sample reflect padding: numpy keeps mirroring, so must izwi.
  CHECK(compare_with_numpy("tiny_clip", sine(300.0, 170.0 / 16000.0, 0.3f), 80, WhisperPadding::none) < tolerance);
}

TEST_CASE("whisper log-mel matches transformers.js WhisperFeatureExtractor", "[whisper][reference]") {
  if (!izwi_test::transformers_js_node_modules()) {
    std::cout << "SKIPPED: transformers.js reference: node or test/reference/node_modules/@huggingface/transformers "
                 "missing (cd test/reference && npm ci --ignore-scripts)\n";
    WARN("skipped: transformers.js reference unavailable");
    return;
  }
  const auto audio = jfk();
  CHECK(compare_with_transformers_js("jfk", audio, 80) < tolerance);
  CHECK(compare_with_transformers_js("jfk", audio, 128) < tolerance);
  CHECK(compare_with_transformers_js("sine_440hz", sine(440.0, 3.0, 0.8f), 80) < tolerance);
  CHECK(compare_with_transformers_js("white_noise_35s", white_noise(35.0, 0.2f, 11), 80) < tolerance);
  CHECK(compare_with_transformers_js("silence", std::vector<float>(16000, 0.0f), 80) < tolerance);
}

TEST_CASE("whisper log-mel shapes, padding and trimming", "[whisper]") {
  const WhisperLogMel frontend(80);
  CHECK(WhisperLogMel::frame_count(176000, WhisperPadding::pad_or_trim_30s) == 3000);
  CHECK(WhisperLogMel::frame_count(176000, WhisperPadding::none) == 1100);
  CHECK(WhisperLogMel::frame_count(159, WhisperPadding::none) == 0);

  // Silence: every mel energy floors at 1e-10 -> log10 = -10 -> (-10 + 4) / 4.
  const auto silent = frontend(std::vector<float>(8000, 0.0f));
  REQUIRE(silent.values.size() == 80 * 3000);
  for (float v : silent.values) REQUIRE(v == -1.5f);
  CHECK(frontend({}).n_frames == 3000);  // empty input: 30 s of padding
  CHECK(frontend({}, WhisperPadding::none).values.empty());

  // Padding a short clip implicitly equals padding it explicitly (frames of
  // padding skip their FFT), and input past 30 s is cut.
  const auto clip = white_noise(2.3, 0.1f, 21);
  const auto implicit = frontend(clip);
  const auto explicit_padding = frontend(pad_or_trim(clip), WhisperPadding::none);
  REQUIRE(explicit_padding.n_frames == 3000);
  CHECK(implicit.values == explicit_padding.values);
  const auto long_input = white_noise(31.0, 0.1f, 22);
  CHECK(frontend(long_input).values ==
        frontend(std::span<const float>(long_input).first(whisper_chunk_samples)).values);

  // The (max - 8) clamp: nothing is more than 2 (8 / 4) below the top value.
  const auto loud = frontend(sine(440.0, 1.0, 0.9f));
  const float top = *std::max_element(loud.values.begin(), loud.values.end());
  const float bottom = *std::min_element(loud.values.begin(), loud.values.end());
  CHECK(top - bottom == Approx(2.0f).margin(1e-5));

  CHECK(pad_or_trim(std::vector<float>{1, 2, 3}, 5) == std::vector<float>{1, 2, 3, 0, 0});
  CHECK(pad_or_trim(std::vector<float>{1, 2, 3}, 2) == std::vector<float>{1, 2});

  std::vector<float> wrong(80 * 2999);
  CHECK_THROWS_AS(frontend.compute_into(clip, WhisperPadding::pad_or_trim_30s, wrong), izwi::invalid_argument);
  CHECK_THROWS_AS(WhisperLogMel(0), izwi::invalid_argument);
  CHECK(whisper_log_mel_spectrogram(clip, 128).n_mels == 128);
}
