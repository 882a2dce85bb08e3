// The machine's own limits, measured in the same run as the kernels so the
// kernels can be reported as fractions of them: FMA throughput (independent
// vector FMAs from registers) and memory read bandwidth (summing a buffer
// three times the size of the last-level cache).

#include <benchmark/benchmark.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "izwi/kernels/cpu/thread_pool.hpp"
#include "izwi/kernels/cpu/detail/simd.hpp"

namespace {

namespace kd = izwi::kernels::cpu::detail;
using S = kd::Simd<kd::KernelArch>;

void BM_fma_peak(benchmark::State& state) {
  izwi::detail::ThreadPool pool(static_cast<std::size_t>(state.range(0)));
  // Enough independent chains to cover the FMA latency on two pipes, few
  // enough to stay in registers with the two operands. On AVX2's 16 ymm
  // registers 16 chains kept three on the stack (a store and a load around
  // each of their FMAs) and read 55-57 GFLOP/s per CPU-second, below what the
  // GEMM itself reaches; 12 read 94-101 (AVX2-only EPYC, 2026-12-07, load
  // below 0.3 before each of two runs).
  constexpr std::size_t chains = S::avx512 ? 16 : 12, steps = 1 << 16;
  std::vector<float> sink(pool.size() * 64);
  for (auto _ : state) {
    pool.parallel_for(pool.size(), [&](std::size_t task, std::size_t) {
      typename S::vec acc[chains];
      for (std::size_t c = 0; c < chains; ++c) acc[c] = S::broadcast(float(c) * 1e-3f);
      const auto a = S::broadcast(0.999999f), b = S::broadcast(1e-7f);
      for (std::size_t i = 0; i < steps; ++i)
        for (std::size_t c = 0; c < chains; ++c) acc[c] = S::fma(acc[c], a, b);
      float s = 0;
      for (std::size_t c = 0; c < chains; ++c) s += S::sum(acc[c]);
      sink[task * 64] = s;
    });
    benchmark::DoNotOptimize(sink.data());
  }
  state.counters["GFLOPs"] = benchmark::Counter(
      2.0 * double(chains * steps * S::lanes * pool.size()) * double(state.iterations()) * 1e-9,
      benchmark::Counter::kIsRate);
}

void BM_read_bandwidth(benchmark::State& state) {
  izwi::detail::ThreadPool pool(static_cast<std::size_t>(state.range(0)));
  const std::size_t n = (320u << 20) / sizeof(float);
  std::unique_ptr<float[]> data(new float[n]);
  for (std::size_t i = 0; i < n; ++i) data[i] = 1.0f;
  const std::size_t tasks = pool.size() * 8, chunk = n / tasks;
  std::vector<float> sums(tasks * 16);
  for (auto _ : state) {
    pool.parallel_for(tasks, [&](std::size_t t, std::size_t) {
      const float* p = data.get() + t * chunk;
      typename S::vec acc[4] = {S::zero(), S::zero(), S::zero(), S::zero()};
      for (std::size_t i = 0; i + 4 * S::lanes <= chunk; i += 4 * S::lanes)
        for (std::size_t u = 0; u < 4; ++u) acc[u] = acc[u] + S::load(p + i + u * S::lanes);
      sums[t * 16] = S::sum(acc[0] + acc[1] + acc[2] + acc[3]);
    });
    benchmark::DoNotOptimize(sums.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(n * sizeof(float)) * state.iterations());
}

}  // namespace

BENCHMARK(BM_fma_peak)->Name("Reference/FmaPeak")->Arg(1)->Arg(2)->MeasureProcessCPUTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_read_bandwidth)->Name("Reference/ReadBandwidth")->Arg(1)->Arg(2)->MeasureProcessCPUTime()->Unit(benchmark::kMillisecond);
