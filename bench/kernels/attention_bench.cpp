// Paged attention on Qwen3-0.6B's layer shape (16 query / 8 KV heads,
// head_dim 128, block size 16, F16 cache): one decoding sequence at context
// 512 and 2048 (GB/s of K/V read), and a 512-token prefill (GFLOP/s); and
// Whisper's decoder cross-attention (6 heads of 64 over 1500 audio positions).

#include <benchmark/benchmark.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "izwi/kernels/cpu/attention.hpp"

namespace {

namespace kc = izwi::kernels::cpu;

// Arguments: context (tokens already cached + new), new tokens, threads.
void BM_attention(benchmark::State& state) {
  const std::size_t context = std::size_t(state.range(0)), new_tokens = std::size_t(state.range(1));
  izwi::detail::ThreadPool pool(std::size_t(state.range(2)));
  const kc::AttentionShape shape{16, 8, 128, 16, izwi::DType::f16, 0.0f, 0, 0};
  const std::size_t row = shape.num_kv_heads * shape.head_dim;
  const std::size_t blocks = (context + shape.block_size - 1) / shape.block_size;
  std::vector<izwi::BlockId> table(blocks);
  std::iota(table.begin(), table.end(), izwi::BlockId{1});
  std::vector<std::uint16_t> keys((blocks + 1) * shape.block_size * row, 0x2c00), values(keys.size(), 0x3c00);
  const izwi::KVLayerView kv{reinterpret_cast<std::byte*>(keys.data()), reinterpret_cast<std::byte*>(values.data())};
  std::vector<float> q(new_tokens * shape.num_heads * shape.head_dim, 0.01f), out(q.size());
  const kc::AttentionSequence seq{context - new_tokens, new_tokens, table, 0};
  for (auto _ : state) {
    kc::paged_attention(q.data(), std::span(&seq, 1), kv, shape, out.data(), pool);
    benchmark::DoNotOptimize(out.data());
  }
  // Each query token reads K and V of its visible positions (sum over the chunk).
  double pairs = 0;
  for (std::size_t t = 0; t < new_tokens; ++t) pairs += double(context - new_tokens + t + 1);
  state.SetBytesProcessed(std::int64_t(double(new_tokens == 1 ? context : 0) * double(row) * 2 * 2) * state.iterations());
  state.counters["GFLOPs"] = benchmark::Counter(
      pairs * double(shape.num_heads * shape.head_dim) * 4.0 * double(state.iterations()) * 1e-9,
      benchmark::Counter::kIsRate);
}

// Whisper's decoder cross-attention: one query token of 6 heads of 64 (tiny;
// every Whisper shape has head_dim 64) over the window's 1500 audio
// positions, F16 cache, block size 16. Arguments: threads.
void BM_whisper_cross_attention(benchmark::State& state) {
  izwi::detail::ThreadPool pool(std::size_t(state.range(0)));
  const kc::AttentionShape shape{6, 6, 64, 16, izwi::DType::f16, 0.0f, 0, 0};
  const std::size_t audio = 1500, row = shape.num_kv_heads * shape.head_dim;
  const std::size_t blocks = (audio + shape.block_size - 1) / shape.block_size;
  std::vector<izwi::BlockId> table(blocks);
  std::iota(table.begin(), table.end(), izwi::BlockId{1});
  std::vector<std::uint16_t> keys((blocks + 1) * shape.block_size * row), values(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {  // varied finite f16 values: 0x3000-0x37ff
    keys[i] = static_cast<std::uint16_t>(0x3000 + (i * 37) % 0x800);
    values[i] = static_cast<std::uint16_t>(0x3000 + (i * 91) % 0x800);
  }
  const izwi::KVLayerView kv{reinterpret_cast<std::byte*>(keys.data()), reinterpret_cast<std::byte*>(values.data())};
  std::vector<float> q(shape.num_heads * shape.head_dim, 0.01f), out(q.size());
  // The decoder's token sits after the audio; cross-attention sees [0, 1500).
  kc::AttentionSequence seq{audio + 20, 1, table, 0};
  seq.first_visible = 0;
  seq.visible_end = audio;
  for (auto _ : state) {
    kc::paged_attention(q.data(), std::span(&seq, 1), kv, shape, out.data(), pool);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(std::int64_t(audio * row * 2 * 2) * state.iterations());
}

}  // namespace

BENCHMARK(BM_whisper_cross_attention)->Name("AttentionDecodeWhisperCross")->Arg(1)->Arg(2)
    ->MeasureProcessCPUTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_attention)->Name("AttentionDecode")
    ->Args({512, 1, 1})->Args({512, 1, 2})->Args({2048, 1, 1})->Args({2048, 1, 2})
    ->MeasureProcessCPUTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_attention)->Name("AttentionPrefill")->Args({512, 512, 1})->Args({512, 512, 2})
    ->MeasureProcessCPUTime()->Unit(benchmark::kMillisecond);
