// Voice activity detection throughput on one core.
//
//   BM_SileroVadOneHour   Silero VAD over 1 hour of speech (silero_test.wav x 60);
//                         counter rtf = compute time / audio time (goal: < 10 s per hour, rtf < 0.0028)
//   BM_SileroVadWindow    one 512-sample window through a stream (us per 32 ms window)
//   BM_EnergyVad          energy VAD over silero_test.wav (audio seconds per second)
//   BM_SplitOneHour       energy splitter over 1 hour into <= 30 s chunks
//   BM_SpeechSegments     probabilities of 1 hour -> segments

#include <izwi/audio/splitter.hpp>
#include <izwi/audio/vad.hpp>
#include <izwi/models/silero_vad.hpp>

#include <benchmark/benchmark.h>
#include <sndfile.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

const std::string fixtures = IZWI_FIXTURES_DIR;
const std::string weights = std::string(IZWI_SOURCE_DIR) + "/assets/silero-vad/silero_vad_v5_16k.safetensors";

std::vector<float> read_fixture(const std::string& name) {
  SF_INFO info{};
  SNDFILE* file = sf_open((fixtures + "/audio/" + name).c_str(), SFM_READ, &info);
  if (!file || info.channels != 1 || info.samplerate != 16000) throw std::runtime_error("cannot read fixture " + name);
  std::vector<float> samples(static_cast<std::size_t>(info.frames));
  sf_readf_float(file, samples.data(), info.frames);
  sf_close(file);
  return samples;
}

const std::vector<float>& one_minute() {
  static const std::vector<float> samples = read_fixture("silero_test.wav");
  return samples;
}

const std::vector<float>& one_hour() {
  static const std::vector<float> samples = [] {
    std::vector<float> hour;
    hour.reserve(60 * one_minute().size());
    for (int i = 0; i < 60; ++i) hour.insert(hour.end(), one_minute().begin(), one_minute().end());
    return hour;
  }();
  return samples;
}

const izwi::models::SileroVad& silero() {
  static const auto vad = izwi::models::SileroVad::load(weights);
  return vad;
}

void set_audio_counters(benchmark::State& state, std::size_t samples) {
  const double audio_seconds = static_cast<double>(samples) / 16000.0 * static_cast<double>(state.iterations());
  state.counters["audio_s_per_s"] = benchmark::Counter(audio_seconds, benchmark::Counter::kIsRate);
  state.counters["rtf"] = benchmark::Counter(audio_seconds, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_SileroVadOneHour(benchmark::State& state) {
  const auto& audio = one_hour();
  for (auto _ : state) {
    auto p = silero().speech_probabilities(audio);
    benchmark::DoNotOptimize(p.data());
  }
  set_audio_counters(state, audio.size());
}
BENCHMARK(BM_SileroVadOneHour)->Unit(benchmark::kSecond)->Iterations(1);

void BM_SileroVadWindow(benchmark::State& state) {
  const auto& audio = one_minute();
  auto stream = silero().stream();
  std::size_t position = 0;
  for (auto _ : state) {
    if (position + 512 > audio.size()) position = 0;
    benchmark::DoNotOptimize(stream.process(std::span<const float>(audio).subspan(position, 512)));
    position += 512;
  }
  set_audio_counters(state, 512);
}
BENCHMARK(BM_SileroVadWindow)->Unit(benchmark::kMicrosecond);

void BM_EnergyVad(benchmark::State& state) {
  const auto& audio = one_minute();
  for (auto _ : state) {
    auto frames = izwi::audio::energy_vad_frames(audio);
    benchmark::DoNotOptimize(frames.data());
  }
  set_audio_counters(state, audio.size());
}
BENCHMARK(BM_EnergyVad)->Unit(benchmark::kMillisecond);

void BM_SplitOneHour(benchmark::State& state) {
  const auto& audio = one_hour();
  for (auto _ : state) {
    auto chunks = izwi::audio::split_at_quiet_points(audio);
    benchmark::DoNotOptimize(chunks.data());
  }
  set_audio_counters(state, audio.size());
}
BENCHMARK(BM_SplitOneHour)->Unit(benchmark::kMillisecond);

void BM_SpeechSegments(benchmark::State& state) {
  static const auto probabilities = silero().speech_probabilities(one_minute());
  std::vector<float> hour;
  for (int i = 0; i < 60; ++i) hour.insert(hour.end(), probabilities.begin(), probabilities.end());
  for (auto _ : state) {
    auto segments = izwi::audio::speech_segments(hour, hour.size() * 512);
    benchmark::DoNotOptimize(segments.data());
  }
  set_audio_counters(state, hour.size() * 512);
}
BENCHMARK(BM_SpeechSegments)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
