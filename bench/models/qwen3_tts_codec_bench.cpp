// The Qwen3-TTS 12 Hz codec decoder alone: S streams of F frames each decoded
// in one decode_batch call (what the engine's step does when S requests have
// an audio window ready), on a checkpoint's speech_tokenizer directory.
//
//   IZWI_QWEN3_TTS_CODEC=DIR/speech_tokenizer izwi-qwen3-tts-codec-bench [--benchmark_filter=...]
//
// Any checkpoint works (izwi-make-random-qwen3-tts writes one of the
// published 0.6B shape); the decoder's cost depends on its shape only.
// Counters: frames/s decoded (all streams together) and the real-time factor
// of that audio; the CPU column is the whole process's (all pool threads),
// which moves less than the wall time when other programs share the cores.
// IZWI_QWEN3_TTS_CODEC_EVICT_MB=1024 reads 1 GB between calls (untimed), as
// the engine's other weights do. IZWI_QWEN3_TTS_CODEC_PRECISION=bf16 runs
// the convolutional decoder in bf16 on AMX where the CPU has it (f32
// elsewhere; the default f32). Without IZWI_QWEN3_TTS_CODEC every
// benchmark reports itself skipped.

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <stdexcept>
#include <vector>

#include "izwi/models/qwen3_tts_codec.hpp"

namespace {

const izwi::Qwen3TtsCodecDecoder* decoder() {
  static const std::unique_ptr<izwi::Qwen3TtsCodecDecoder> loaded = [] {
    const char* dir = std::getenv("IZWI_QWEN3_TTS_CODEC");
    const char* precision = std::getenv("IZWI_QWEN3_TTS_CODEC_PRECISION");
    const auto parsed = izwi::parse_qwen3_tts_codec_precision(precision == nullptr ? "f32" : precision);
    if (!parsed) throw std::runtime_error("IZWI_QWEN3_TTS_CODEC_PRECISION takes f32 or bf16");
    return dir == nullptr ? nullptr
                          : std::make_unique<izwi::Qwen3TtsCodecDecoder>(izwi::Qwen3TtsCodecDecoder::load(dir, *parsed));
  }();
  return loaded.get();
}

// Arguments: streams, frames per stream, threads.
void BM_codec_decode_batch(benchmark::State& state) {
  const izwi::Qwen3TtsCodecDecoder* codec = decoder();
  if (codec == nullptr) {
    state.SkipWithError("set IZWI_QWEN3_TTS_CODEC to a speech_tokenizer directory");
    return;
  }
  state.SetLabel(codec->precision() == izwi::Qwen3TtsCodecPrecision::bf16 ? "codec bf16 (AMX)" : "codec f32");
  const std::size_t streams = std::size_t(state.range(0)), frames = std::size_t(state.range(1));
  izwi::detail::ThreadPool pool(std::size_t(state.range(2)));
  const std::size_t nq = codec->config().num_quantizers;
  std::mt19937 rng(1);
  std::uniform_int_distribution<std::int32_t> code(0, std::int32_t(codec->config().codebook_size) - 1);
  std::vector<std::vector<std::int32_t>> codes(streams, std::vector<std::int32_t>(frames * nq));
  for (auto& c : codes)
    for (auto& v : c) v = code(rng);
  std::vector<izwi::Qwen3TtsCodecState> states;
  for (std::size_t s = 0; s < streams; ++s) states.push_back(codec->new_stream());
  std::vector<std::vector<float>> pcm(streams);
  std::vector<izwi::Qwen3TtsCodecStream> batch(streams);
  // IZWI_QWEN3_TTS_CODEC_EVICT_MB=N: read N MB between calls (untimed), as the
  // engine's talker and predictor weights do between its codec windows, so the
  // decoder's weights come from memory, not from a last-level cache that may
  // hold them all (0.4 GB of f32 for the 0.6B shape).
  const char* evict_env = std::getenv("IZWI_QWEN3_TTS_CODEC_EVICT_MB");
  std::vector<float> evict(evict_env == nullptr ? 0 : std::size_t(std::atoll(evict_env)) << 18, 1.0f);
  for (auto _ : state) {
    if (!evict.empty()) {
      state.PauseTiming();
      float sum = 0.0f;
      for (std::size_t i = 0; i < evict.size(); i += 16) sum += evict[i];
      benchmark::DoNotOptimize(sum);
      state.ResumeTiming();
    }
    for (std::size_t s = 0; s < streams; ++s) {
      pcm[s].clear();
      batch[s] = {&states[s], codes[s], &pcm[s]};  // each call continues its streams (windows in a row)
    }
    codec->decode_batch(pool, batch);
    benchmark::DoNotOptimize(pcm[0].data());
  }
  const double decoded = double(streams * frames) * double(state.iterations());
  state.counters["frames/s"] = benchmark::Counter(decoded, benchmark::Counter::kIsRate);
  state.counters["audio_s/s"] = benchmark::Counter(
      decoded * double(codec->samples_per_frame()) / double(codec->config().output_sample_rate),
      benchmark::Counter::kIsRate);
}
BENCHMARK(BM_codec_decode_batch)
    ->ArgNames({"streams", "frames", "threads"})
    ->Args({1, 8, 2})
    ->Args({4, 8, 2})
    ->Args({8, 8, 2})
    ->Args({1, 2, 2})
    ->Args({8, 8, 1})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime()
    ->UseRealTime();

}  // namespace
