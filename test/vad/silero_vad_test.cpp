// Silero VAD in C++ against onnxruntime on the original ONNX graph.

#include <izwi/models/silero_vad.hpp>

#include "vad_test_support.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>

using izwi::models::SileroVad;

namespace {

const SileroVad& model() {
  static const SileroVad vad = SileroVad::load(vad_test::silero_weights());
  return vad;
}

double max_abs_difference(const std::vector<float>& ours, const std::vector<double>& reference) {
  REQUIRE(ours.size() == reference.size());
  double worst = 0;
  for (std::size_t i = 0; i < ours.size(); ++i) worst = std::max(worst, std::abs(ours[i] - reference[i]));
  return worst;
}

}  // namespace

TEST_CASE("Silero VAD: per-window probabilities match onnxruntime within 1e-4", "[silero]") {
  if (const auto missing = vad_test::onnxruntime_missing()) {
    WARN("skipped: " << *missing);
    return;
  }
  for (const char* name : {"jfk.wav", "silero_test.wav"}) {
    const auto samples = vad_test::read_wav_16k_mono(vad_test::fixtures() / "audio" / name);
    const auto ours = model().speech_probabilities(samples);
    const auto reference = vad_test::onnxruntime_probabilities(name);
    const double worst = max_abs_difference(ours, reference);
    WARN(name << ": " << ours.size() << " windows, max |izwi - onnxruntime| = " << worst);
    CHECK(worst < 1e-4);
    // The reference must not be trivial: speech and silence both occur.
    CHECK(*std::max_element(reference.begin(), reference.end()) > 0.9);
    CHECK(*std::min_element(reference.begin(), reference.end()) < 0.1);
  }
}

TEST_CASE("Silero VAD: one probability per 512 samples, tail zero-padded", "[silero]") {
  if (vad_test::skip_without_fixtures()) return;
  const auto samples = vad_test::read_wav_16k_mono(vad_test::fixtures() / "audio/jfk.wav");
  REQUIRE(samples.size() == 176000);
  const auto p = model().speech_probabilities(samples);
  CHECK(samples.size() / 512 == 343);  // full windows (the fixtures README's count)
  CHECK(p.size() == 344);              // plus the zero-padded tail, as get_speech_timestamps feeds it
  CHECK(std::all_of(p.begin(), p.end(), [](float x) { return x >= 0.0f && x <= 1.0f; }));
  // Dropping the tail leaves the full windows' probabilities unchanged.
  const auto full = model().speech_probabilities(std::span<const float>(samples).first(343 * 512));
  REQUIRE(full.size() == 343);
  CHECK(std::equal(full.begin(), full.end(), p.begin()));
  CHECK(model().speech_probabilities({}).empty());
}

TEST_CASE("Silero VAD: a stream window by window equals the whole-signal call, reset restarts", "[silero]") {
  if (vad_test::skip_without_fixtures()) return;
  const auto samples = vad_test::read_wav_16k_mono(vad_test::fixtures() / "audio/jfk.wav");
  const std::span<const float> first(samples.data(), 100 * 512);
  const auto whole = model().speech_probabilities(first);
  auto stream = model().stream();
  std::vector<float> streamed;
  for (std::size_t i = 0; i < 100; ++i) streamed.push_back(stream.process(first.subspan(i * 512, 512)));
  CHECK(streamed == whole);
  const auto carried = stream.state();  // a copy: begin() and end() of one array
  CHECK(std::any_of(carried.begin(), carried.end(), [](float x) { return x != 0.0f; }));
  stream.reset();
  const auto fresh = stream.state();
  CHECK(std::all_of(fresh.begin(), fresh.end(), [](float x) { return x == 0.0f; }));
  CHECK(stream.process(first.first(512)) == whole[0]);
  CHECK_THROWS_AS(stream.process(first.first(480)), izwi::invalid_argument);
}

TEST_CASE("Silero VAD: silence is not speech, and state matters", "[silero]") {
  const std::vector<float> silence(16000, 0.0f);
  const auto p = model().speech_probabilities(silence);
  CHECK(*std::max_element(p.begin(), p.end()) < 0.1f);
}

TEST_CASE("Silero VAD: weights with a wrong shape are refused naming the tensor", "[silero]") {
  const auto good = izwi::io::SafetensorsFile::open(vad_test::silero_weights());
  std::vector<izwi::io::TensorToWrite> tensors;
  std::vector<float> wrong(64 * 3 * 64, 0.0f);
  for (const auto& t : good.tensors()) {
    if (t.name == "model.encoder.3.reparam_conv.weight")
      tensors.push_back({t.name, t.dtype, {64, 64, 3}, std::as_bytes(std::span<const float>(wrong))});
    else
      tensors.push_back({t.name, t.dtype, t.shape, good.bytes(t)});
  }
  const auto bad = izwi::io::SafetensorsFile::from_bytes(izwi::io::serialize_safetensors(tensors), "bad_silero.safetensors");
  CHECK_THROWS_WITH(SileroVad::load(bad), Catch::Contains("model.encoder.3.reparam_conv.weight") && Catch::Contains("shape"));
}

TEST_CASE("Silero VAD: the FFT path gives the basis product's magnitudes", "[silero]") {
  // load() swaps the 258 x 256 basis product for an FFT after checking the
  // basis is a windowed DFT; both must give the same spectrum.
  const auto file = izwi::io::SafetensorsFile::open(vad_test::silero_weights());
  izwi::models::detail::SileroVadWeights weights;
  weights.stft_basis = file.to_f32("model.stft.forward_basis_buffer");
  REQUIRE(izwi::models::detail::silero_basis_is_windowed_dft(weights.stft_basis));
  const izwi::models::detail::SileroFft fft(weights.stft_basis.data());
  auto state = std::make_unique<izwi::models::detail::SileroVadState>();
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto& x : state->input) x = u(rng);
  izwi::models::detail::silero_stft_by_basis(weights, *state);
  double worst = 0, largest = 0;
  std::array<float, 4 * 129> magnitude;
  for (std::size_t t = 0; t < 4; t += 2)
    fft.magnitudes(state->input.data() + t * 128, state->input.data() + (t + 1) * 128, magnitude.data() + t * 129,
                   magnitude.data() + (t + 1) * 129);
  for (std::size_t t = 0; t < 4; ++t) {
    for (std::size_t k = 0; k < 129; ++k) {
      const float by_basis = state->magnitude[(t + 1) * 129 + k];
      worst = std::max(worst, static_cast<double>(std::abs(by_basis - magnitude[t * 129 + k])));
      largest = std::max(largest, static_cast<double>(by_basis));
    }
  }
  CHECK(largest > 1.0);
  CHECK(worst < 1e-4);
  // A basis that is not a windowed DFT keeps the product.
  weights.stft_basis[1000] += 0.01f;
  CHECK_FALSE(izwi::models::detail::silero_basis_is_windowed_dft(weights.stft_basis));
}
