// matmul on Qwen3-0.6B's shapes. GEMV (decode, m = 1): GB/s of weight
// traffic, to compare with the machine's memory bandwidth; the weights are
// cycled through enough copies to exceed the last-level cache, as a real
// forward pass (1.2 GB of F16 weights) does. GEMM (prefill, m = 512):
// GFLOP/s, to compare with the FMA peak.
//
//   build-kernels/bench/kernels/izwi_kernels_bench --benchmark_filter=Gemv
// (the same binary holds attention_bench.cpp and reference_bench.cpp)

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "izwi/core/half.hpp"
#include "izwi/kernels/cpu/dispatch.hpp"
#include "izwi/kernels/cpu/matmul.hpp"

namespace {

// The kernel variant these figures are of, in the benchmark's context block.
const bool kernel_variant_reported = [] {
  benchmark::AddCustomContext("izwi CPU kernels", izwi::kernels::cpu::active_kernels().name);
  return true;
}();

using izwi::DType;
using izwi::kernels::cpu::WeightMatrix;

/// `copies` weight matrices filled with plausible values (no NaN, no subnormals).
struct WeightSet {
  std::vector<std::unique_ptr<std::byte[]>> storage;
  std::vector<WeightMatrix> matrices;
};

WeightSet make_weight_set(DType dtype, std::size_t rows, std::size_t cols, std::size_t min_total_bytes) {
  WeightSet set;
  const WeightMatrix shape{dtype, rows, cols, nullptr};
  const std::size_t bytes = shape.row_bytes() * rows;
  const std::size_t copies = std::max<std::size_t>(1, (min_total_bytes + bytes - 1) / bytes);
  // One random row pattern, repeated: enough for timing.
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<std::byte> row(shape.row_bytes());
  for (std::size_t i = 0; i < row.size(); i += (dtype == DType::f32 ? 4 : 2)) {
    const float v = dist(rng);
    if (dtype == DType::f32) std::memcpy(&row[i], &v, 4);
    else {
      std::uint16_t h = dtype == DType::bf16 ? izwi::f32_to_bf16(v) : izwi::f32_to_f16(v * 0.01f);
      std::memcpy(&row[i], &h, 2);  // q8_0: scales are f16 around 0.01, quants arbitrary
    }
  }
  for (std::size_t c = 0; c < copies; ++c) {
    set.storage.emplace_back(new std::byte[bytes]);
    for (std::size_t r = 0; r < rows; ++r) std::memcpy(set.storage.back().get() + r * row.size(), row.data(), row.size());
    set.matrices.push_back({dtype, rows, cols, set.storage.back().get()});
  }
  return set;
}

// Arguments: dtype, rows (n), cols (k), m, threads. `batch_invariant`:
// kernels::cpu::matmul_group_batch_invariant instead of matmul (what
// Qwen3-TTS's talker and code predictor run), for the A/B of its cost.
void run_matmul(benchmark::State& state, bool batch_invariant) {
  const auto dtype = static_cast<DType>(state.range(0));
  const auto n = static_cast<std::size_t>(state.range(1));
  const auto k = static_cast<std::size_t>(state.range(2));
  const auto m = static_cast<std::size_t>(state.range(3));
  izwi::detail::ThreadPool pool(static_cast<std::size_t>(state.range(4)));
  // GEMV streams from memory: 3x the 105 MB L3 of the machine measured.
  // Decode-sized batches (m <= 16) stream the weights from memory as a forward pass does.
  const auto set = make_weight_set(dtype, n, k, m <= 16 ? (320u << 20) : 0);
  std::vector<float> x(m * k, 0.5f), y(m * n);
  std::size_t i = 0;
  for (auto _ : state) {
    if (batch_invariant) {
      const izwi::kernels::cpu::MatmulOutput out{&set.matrices[i], y.data(), n};
      izwi::kernels::cpu::matmul_group_batch_invariant(x.data(), k, m, std::span(&out, 1), pool);
    } else {
      izwi::kernels::cpu::matmul(x.data(), m, k, set.matrices[i], y.data(), pool);
    }
    benchmark::DoNotOptimize(y.data());
    i = (i + 1) % set.matrices.size();
  }
  const double weight_bytes = double(set.matrices[0].row_bytes() * n);
  state.SetBytesProcessed(static_cast<std::int64_t>(weight_bytes * double(state.iterations())));
  state.counters["GFLOPs"] =
      benchmark::Counter(2.0 * double(m * n * k) * double(state.iterations()) * 1e-9, benchmark::Counter::kIsRate);
  state.SetLabel(std::string(izwi::to_string(dtype)) + " " + std::to_string(n) + "x" + std::to_string(k) +
                 " m=" + std::to_string(m) + " threads=" + std::to_string(state.range(4)) +
                 (batch_invariant ? " batch-invariant" : ""));
}
void BM_matmul(benchmark::State& state) { run_matmul(state, false); }
void BM_matmul_batch_invariant(benchmark::State& state) { run_matmul(state, true); }

void gemv_args(benchmark::internal::Benchmark* b) {
  for (int dtype : {0, 1, 2, 3})
    for (auto [n, k] : {std::pair{3072, 1024}, std::pair{1024, 3072}, std::pair{151936, 1024}})
      for (int threads : {1, 2}) b->Args({dtype, n, k, 1, threads});
}
// Batched decode (the GEMV's register-blocked path for 2 to 16 rows), weights from memory.
void batched_decode_args(benchmark::internal::Benchmark* b) {
  for (int dtype : {1, 2, 3})
    for (int m : {2, 4, 8, 16})
      for (int threads : {1, 2}) b->Args({dtype, 3072, 1024, m, threads});
  for (int threads : {1, 2})  // Q8_0 at 12 rows, where AVX2 leaves the integer path for the widened tiles
    b->Args({3, 3072, 1024, 12, threads});
  for (int dtype : {1, 2})  // down_proj's shape, at the 16 sequences of the batched-decode goal
    for (int threads : {1, 2}) b->Args({dtype, 1024, 3072, 16, threads});
}
// Qwen3-TTS prompt-sized steps (the talker's MLP up/gate shape of the 0.6B).
void tts_prefill_args(benchmark::internal::Benchmark* b) {
  for (int dtype : {1, 3})
    for (int m : {32, 128})
      for (int threads : {1, 2}) b->Args({dtype, 3072, 1024, m, threads});
}
void gemm_args(benchmark::internal::Benchmark* b) {
  for (int dtype : {1, 2, 3})
    for (auto [n, k] : {std::pair{1024, 1024}, std::pair{3072, 1024}, std::pair{1024, 3072}})
      for (int threads : {1, 2}) b->Args({dtype, n, k, 512, threads});
}

}  // namespace

// Process CPU time (all threads): on a shared, loaded machine the rate per
// CPU-second is what the kernel achieves while it runs; wall time is also
// printed. Rates are per CPU-second, so a 2-thread row near the 1-thread row
// means the threads scale.
BENCHMARK(BM_matmul)->Name("Gemv")->Apply(gemv_args)->MeasureProcessCPUTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_matmul)->Name("BatchedDecode")->Apply(batched_decode_args)->MeasureProcessCPUTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_matmul)->Name("Gemm")->Apply(gemm_args)->MeasureProcessCPUTime()->Unit(benchmark::kMillisecond);
// The batch-invariant matmul of Qwen3-TTS beside the rows above (--benchmark_filter='Gemv|BatchedDecode|TtsPrefill').
BENCHMARK(BM_matmul)->Name("TtsPrefill")->Apply(tts_prefill_args)->MeasureProcessCPUTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_matmul_batch_invariant)->Name("InvariantGemv")->Apply(gemv_args)->MeasureProcessCPUTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_matmul_batch_invariant)->Name("InvariantBatchedDecode")->Apply(batched_decode_args)->MeasureProcessCPUTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_matmul_batch_invariant)->Name("InvariantTtsPrefill")->Apply(tts_prefill_args)->MeasureProcessCPUTime()->Unit(benchmark::kMicrosecond);
