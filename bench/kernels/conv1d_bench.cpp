// The Qwen3-TTS codec decoder's convolutions (conv1d_gemm on GemmPanels
// packed at load, as the decoder runs them): the 7-tap residual-unit
// convolution of each of the four decoder blocks, for a window of 8 frames
// (the engine's regular window). GFLOP/s per CPU-second, to compare with
// Reference/FmaPeak in the same run.
//
//   build-bench/bench/kernels/izwi_kernels_bench --benchmark_filter=Conv1dGemm

#include <benchmark/benchmark.h>

#include <cstddef>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "izwi/kernels/cpu/conv1d.hpp"
#include "izwi/kernels/cpu/thread_pool.hpp"

namespace {

namespace kc = izwi::kernels::cpu;

// Arguments: rows per frame at that block, channels (in = out), threads.
void BM_conv1d_gemm(benchmark::State& state) {
  constexpr std::size_t frames = 8, kernel = 7, dilation = 1;
  const auto m = static_cast<std::size_t>(state.range(0)) * frames;
  const auto channels = static_cast<std::size_t>(state.range(1));
  izwi::detail::ThreadPool pool(static_cast<std::size_t>(state.range(2)));
  const std::size_t k = kernel * channels;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> weights(channels * k), input((m + (kernel - 1) * dilation) * channels);
  for (float& v : weights) v = dist(rng) * 0.05f;
  for (float& v : input) v = dist(rng);
  const kc::WeightMatrix w{izwi::DType::f32, channels, k, weights.data()};
  const kc::GemmPanels panels = kc::pack_gemm_panels(w);
  std::vector<const float*> taps(m * kernel);
  for (std::size_t r = 0; r < m; ++r)
    for (std::size_t j = 0; j < kernel; ++j) taps[r * kernel + j] = input.data() + (r + j * dilation) * channels;
  std::vector<float> y(m * channels);
  for (auto _ : state) {
    kc::conv1d_gemm(taps.data(), m, kernel, channels, w, y.data(), channels, pool, &panels);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GFLOPs"] =
      benchmark::Counter(2.0 * double(m * k * channels) * double(state.iterations()) * 1e-9, benchmark::Counter::kIsRate);
  state.SetLabel("m=" + std::to_string(m) + " k=" + std::to_string(k) + " n=" + std::to_string(channels) +
                 " threads=" + std::to_string(state.range(2)));
}

void codec_block_args(benchmark::internal::Benchmark* b) {
  // Decoder blocks 1..4 of the 0.6B codec (decoder_dim 1536, strides 8, 5, 4, 3 after 4x upsampling).
  for (auto [rows_per_frame, channels] : {std::pair{32, 768}, std::pair{160, 384}, std::pair{640, 192}, std::pair{1920, 96}})
    for (int threads : {1, 2}) b->Args({rows_per_frame, channels, threads});
}

}  // namespace

BENCHMARK(BM_conv1d_gemm)->Name("Conv1dGemm")->Apply(codec_block_args)->MeasureProcessCPUTime()->Unit(benchmark::kMillisecond);
