// Throughput of the signal frontend: Whisper log-mel for 30 s windows, STFT
// and ISTFT, on one core (everything here is single-threaded).
//
//   build-*/bench/audio_features/izwi_audio_features_bench --benchmark_repetitions=5
//
// With repetitions, each benchmark also reports the min over repetitions: on a
// shared machine the minimum is the figure least disturbed by neighbours.
#include <benchmark/benchmark.h>

#include <izwi/audio/fft.hpp>
#include <izwi/audio/mel.hpp>
#include <izwi/audio/stft.hpp>
#include <izwi/audio/window.hpp>

#include <algorithm>
#include <cmath>
#include <complex>
#include <random>
#include <vector>

namespace {

using namespace izwi::audio;

std::vector<float> speech_like(std::size_t n) {
  std::mt19937 rng(42);
  std::normal_distribution<float> noise(0.0f, 0.05f);
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(i) / 16000.0;
    x[i] = 0.3f * static_cast<float>(std::sin(2 * 3.14159265 * (180 + 40 * std::sin(3 * t)) * t)) + noise(rng);
  }
  return x;
}

double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

// Seconds of audio processed per second of wall time, as a counter.
void report_audio_seconds(benchmark::State& state, double audio_seconds_per_iteration) {
  state.counters["audio_s_per_s"] = benchmark::Counter(audio_seconds_per_iteration * static_cast<double>(state.iterations()),
                                                       benchmark::Counter::kIsRate);
}

void BM_whisper_log_mel_30s(benchmark::State& state) {
  const WhisperLogMel frontend(static_cast<std::size_t>(state.range(0)));
  const auto audio = speech_like(whisper_chunk_samples);
  std::vector<float> out(frontend.n_mels() * whisper_chunk_frames);
  for (auto _ : state) {
    frontend.compute_into(audio, WhisperPadding::pad_or_trim_30s, out);
    benchmark::DoNotOptimize(out.data());
  }
  report_audio_seconds(state, 30.0);
}
BENCHMARK(BM_whisper_log_mel_30s)->Arg(80)->Arg(128)->Unit(benchmark::kMillisecond)->ComputeStatistics("min", min_of);

// A 5 s request in a 30 s window: frames of padding skip their FFT.
void BM_whisper_log_mel_5s_padded_to_30s(benchmark::State& state) {
  const WhisperLogMel frontend(80);
  const auto audio = speech_like(5 * whisper_sample_rate);
  std::vector<float> out(frontend.n_mels() * whisper_chunk_frames);
  for (auto _ : state) {
    frontend.compute_into(audio, WhisperPadding::pad_or_trim_30s, out);
    benchmark::DoNotOptimize(out.data());
  }
  report_audio_seconds(state, 5.0);
}
BENCHMARK(BM_whisper_log_mel_5s_padded_to_30s)->Unit(benchmark::kMillisecond)->ComputeStatistics("min", min_of);

void BM_real_fft_forward(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const RealFft fft(n);
  FftBuffer<float> in(n);
  FftBuffer<std::complex<float>> out(fft.bins());
  const auto x = speech_like(n);
  std::copy(x.begin(), x.end(), in.data());
  for (auto _ : state) {
    fft.forward(in.span(), out.span());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_real_fft_forward)->Arg(400)->Arg(512)->Arg(1280)->ComputeStatistics("min", min_of);

void BM_real_fft_double_forward(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const RealFftDouble fft(n);
  FftBuffer<double> in(n);
  FftBuffer<std::complex<double>> out(fft.bins());
  const auto x = speech_like(n);
  std::copy(x.begin(), x.end(), in.data());
  for (auto _ : state) {
    fft.forward(in.span(), out.span());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_real_fft_double_forward)->Arg(400)->ComputeStatistics("min", min_of);

void BM_stft_forward(benchmark::State& state) {
  const auto n_fft = static_cast<std::size_t>(state.range(0));
  const auto hop = static_cast<std::size_t>(state.range(1));
  const Stft transform({.n_fft = n_fft, .hop_length = hop}, hann_window(n_fft));
  const auto audio = speech_like(10 * 16000);
  for (auto _ : state) {
    auto spectrum = transform.forward(audio);
    benchmark::DoNotOptimize(spectrum.values.data());
  }
  report_audio_seconds(state, 10.0);
}
BENCHMARK(BM_stft_forward)->Args({400, 160})->Args({1280, 320})->Unit(benchmark::kMillisecond)->ComputeStatistics("min", min_of);

void BM_istft(benchmark::State& state) {
  const auto n_fft = static_cast<std::size_t>(state.range(0));
  const auto hop = static_cast<std::size_t>(state.range(1));
  const Stft transform({.n_fft = n_fft, .hop_length = hop}, hann_window(n_fft));
  const auto audio = speech_like(10 * 16000);
  const auto spectrum = transform.forward(audio);
  for (auto _ : state) {
    auto back = transform.inverse(spectrum, audio.size());
    benchmark::DoNotOptimize(back.data());
  }
  report_audio_seconds(state, 10.0);
}
BENCHMARK(BM_istft)->Args({400, 160})->Args({1280, 320})->Unit(benchmark::kMillisecond)->ComputeStatistics("min", min_of);

}  // namespace

BENCHMARK_MAIN();
