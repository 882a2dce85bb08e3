// Audio I/O throughput, in seconds of audio per second of wall time
// ("audio_s_per_s"; 1000 means a thousand times faster than real time), on
// one thread:
//   decode (+ mix to mono + resample to 16 kHz) of jfk.flac (11 s, 44.1 kHz
//   stereo 24-bit) and of a 10-minute file of the same kind made at start-up
//   (jfk.flac's audio repeated, written as 44.1 kHz stereo 24-bit FLAC);
//   decode alone and resample alone, to split the cost;
//   encode of 60 s of 24 kHz mono speech (TTS output) into each format, whole
//   and streamed in 100 ms chunks.
// Run: build-dir/bench/audio_io/izwi_audio_io_bench [--benchmark_min_time=0.5]

#include <benchmark/benchmark.h>
#include <sndfile.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "izwi/audio/decode.hpp"
#include "izwi/audio/encode.hpp"
#include "izwi/audio/resample.hpp"

namespace {

using namespace izwi::audio;

std::vector<std::byte> read_fixture(const char* name) {
  const auto path = std::filesystem::path(IZWI_FIXTURES_DIR) / "audio" / name;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "fixture missing: %s\n", path.c_str());
    std::exit(1);
  }
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  std::memcpy(out.data(), chars.data(), chars.size());
  return out;
}

const std::vector<std::byte>& jfk_flac() {
  static const std::vector<std::byte> bytes = read_fixture("jfk.flac");
  return bytes;
}

// jfk.flac's audio repeated to 10 minutes, as 44.1 kHz stereo 24-bit FLAC.
const std::vector<std::byte>& ten_minute_flac() {
  static const std::vector<std::byte> bytes = [] {
    const AudioBuffer jfk = decode(jfk_flac(), {.mono = false}).audio;
    detail::memory_sink sink;
    SF_INFO info{};
    info.samplerate = 44100;
    info.channels = 2;
    info.format = SF_FORMAT_FLAC | SF_FORMAT_PCM_24;
    SNDFILE* f = sf_open_virtual(detail::memory_sink::io(), SFM_WRITE, &info, &sink);
    const sf_count_t want = 600 * 44100;
    for (sf_count_t done = 0; done < want;) {
      const sf_count_t n = std::min<sf_count_t>(want - done, static_cast<sf_count_t>(jfk.frames()));
      sf_writef_float(f, jfk.samples.data(), n);
      done += n;
    }
    sf_close(f);
    return std::move(sink.pending());
  }();
  return bytes;
}

// 60 s of speech at 24 kHz mono: jfk.wav resampled and repeated.
const std::vector<float>& speech_24k() {
  static const std::vector<float> samples = [] {
    const auto jfk = decode(read_fixture("jfk.wav"), {.target_sample_rate = 24000}).audio.samples;
    std::vector<float> out;
    while (out.size() < 60 * 24000) out.insert(out.end(), jfk.begin(), jfk.end());
    out.resize(60 * 24000);
    return out;
  }();
  return samples;
}

void set_rate(benchmark::State& state, double audio_seconds) {
  state.counters["audio_s_per_s"] =
      benchmark::Counter(audio_seconds, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_decode_to_16k_mono(benchmark::State& state, const std::vector<std::byte>& (*source)()) {
  const auto& bytes = source();
  double seconds = 0;
  for (auto _ : state) {
    auto d = decode(bytes, {.mono = true, .target_sample_rate = 16000});
    seconds = d.info.duration_seconds;
    benchmark::DoNotOptimize(d.audio.samples.data());
  }
  set_rate(state, seconds);
}
BENCHMARK_CAPTURE(BM_decode_to_16k_mono, jfk_flac_11s, &jfk_flac)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_decode_to_16k_mono, flac_10min, &ten_minute_flac)->Unit(benchmark::kMillisecond);

void BM_decode_only(benchmark::State& state, const std::vector<std::byte>& (*source)()) {
  const auto& bytes = source();
  double seconds = 0;
  for (auto _ : state) {
    auto d = decode(bytes, {.mono = true});
    seconds = d.info.duration_seconds;
    benchmark::DoNotOptimize(d.audio.samples.data());
  }
  set_rate(state, seconds);
}
BENCHMARK_CAPTURE(BM_decode_only, jfk_flac_11s_mono_44k1, &jfk_flac)->Unit(benchmark::kMillisecond);

void BM_resample_44k1_to_16k(benchmark::State& state) {
  const auto mono = decode(jfk_flac(), {.mono = true}).audio;
  for (auto _ : state) {
    auto out = resample(mono.samples, 44100, 16000);
    benchmark::DoNotOptimize(out.data());
  }
  set_rate(state, mono.duration_seconds());
}
BENCHMARK(BM_resample_44k1_to_16k)->Unit(benchmark::kMillisecond);

void BM_encode(benchmark::State& state) {
  const auto format = static_cast<AudioFormat>(state.range(0));
  const bool streamed = state.range(1) != 0;
  const auto& x = speech_24k();
  std::size_t bytes = 0;
  for (auto _ : state) {
    bytes = 0;
    if (streamed) {
      StreamingEncoder enc(format, 24000);
      for (std::size_t at = 0; at < x.size(); at += 2400)
        bytes += enc.push(std::span<const float>(x).subspan(at, std::min<std::size_t>(2400, x.size() - at))).size();
      bytes += enc.finish().size();
    } else {
      bytes = encode(x, 24000, 1, format).size();
    }
    benchmark::DoNotOptimize(bytes);
  }
  state.SetLabel(std::string(to_string(format)) + (streamed ? " streamed" : " whole") + ", " +
                 std::to_string(bytes * 8 / 60 / 1000) + " kb/s");
  set_rate(state, 60.0);
}
BENCHMARK(BM_encode)
    ->ArgsProduct({{int(AudioFormat::wav), int(AudioFormat::pcm), int(AudioFormat::flac),
                    int(AudioFormat::opus), int(AudioFormat::mp3), int(AudioFormat::aac)},
                   {0, 1}})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
