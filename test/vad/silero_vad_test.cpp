// Silero VAD in C++ against onnxruntime on the original ONNX graph.

#include <izwi/models/silero_vad.hpp>

#include "vad_test_support.hpp"

#include <algorithm>
#include <cmath>

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

TEST_CASE("Silero VAD: a stream window by window equals the whole-signal call; reset restarts", "[silero]") {
  const auto samples = vad_test::read_wav_16k_mono(vad_test::fixtures() / "audio/jfk.wav");
  const std::span<const float> first(samples.data(), 100 * 512);
  const auto whole = model().speech_probabilities(first);
  auto stream = model().stream();
  std::vector<float> streamed;
  for (std::size_t i = 0; i < 100; ++i) streamed.push_back(stream.process(first.subspan(i * 512, 512)));
  CHECK(streamed == whole);
  CHECK(std::any_of(stream.state().begin(), stream.state().end(), [](float x) { return x != 0.0f; }));
  stream.reset();
  CHECK(std::all_of(stream.state().begin(), stream.state().end(), [](float x) { return x == 0.0f; }));
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
