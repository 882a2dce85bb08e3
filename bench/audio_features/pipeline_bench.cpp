// Decode + resample + Whisper log-mel: how many seconds of uploaded audio one
// core turns into encoder input per second. Inputs: the fixture jfk.flac
// (11 s, 44.1 kHz stereo, 24-bit) and a synthetic 10-minute 44.1 kHz stereo
// FLAC made once at start-up. Long audio is cut into 30 s windows, as Whisper
// reads it.
#include <benchmark/benchmark.h>

#include <izwi/audio/decode.hpp>
#include <izwi/audio/encode.hpp>
#include <izwi/audio/mel.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <vector>

namespace {

using namespace izwi::audio;

std::vector<std::byte> read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

const std::vector<std::byte>& ten_minute_flac() {
  static const std::vector<std::byte> bytes = [] {
    constexpr std::uint32_t rate = 44100, channels = 2;
    const std::size_t frames = 600 * rate;
    std::mt19937 rng(1);
    std::normal_distribution<float> noise(0.0f, 0.03f);
    std::vector<float> samples(frames * channels);
    for (std::size_t i = 0; i < frames; ++i) {
      const double t = static_cast<double>(i) / rate;
      const float voice = 0.3f * static_cast<float>(std::sin(2 * 3.14159265 * (150 + 60 * std::sin(2 * t)) * t)) *
                          static_cast<float>(0.5 + 0.5 * std::sin(1.3 * t));
      samples[2 * i] = voice + noise(rng);
      samples[2 * i + 1] = 0.8f * voice + noise(rng);
    }
    return encode(samples, rate, channels, AudioFormat::flac);
  }();
  return bytes;
}

void run_pipeline(benchmark::State& state, const std::vector<std::byte>& file) {
  const WhisperLogMel frontend(80);
  std::vector<float> features(frontend.n_mels() * whisper_chunk_frames);
  double audio_seconds = 0;
  for (auto _ : state) {
    const auto decoded = decode(std::span<const std::byte>(file), {.mono = true, .target_sample_rate = 16000});
    const std::span<const float> samples(decoded.audio.samples);
    for (std::size_t offset = 0; offset < samples.size(); offset += whisper_chunk_samples) {
      frontend.compute_into(samples.subspan(offset), WhisperPadding::pad_or_trim_30s, features);
      benchmark::DoNotOptimize(features.data());
    }
    audio_seconds = decoded.info.duration_seconds;
  }
  state.counters["audio_s"] = audio_seconds;
  state.counters["audio_s_per_s"] =
      benchmark::Counter(audio_seconds * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_decode_resample_log_mel_jfk_flac(benchmark::State& state) {
  static const auto file = read_bytes(std::filesystem::path(IZWI_FIXTURES_DIR) / "audio" / "jfk.flac");
  if (file.empty()) {
    state.SkipWithError("fixtures/audio/jfk.flac missing");
    return;
  }
  run_pipeline(state, file);
}
BENCHMARK(BM_decode_resample_log_mel_jfk_flac)->Unit(benchmark::kMillisecond);

void BM_decode_resample_log_mel_10min_flac(benchmark::State& state) { run_pipeline(state, ten_minute_flac()); }
BENCHMARK(BM_decode_resample_log_mel_10min_flac)->Unit(benchmark::kMillisecond)->MinTime(2.0);

}  // namespace
