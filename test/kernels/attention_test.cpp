// Paged attention and store_kv against a double reference: a step mixing
// decode tokens and prefill chunks with cached prefixes, scattered blocks,
// grouped-query heads, every cache dtype, odd head_dim, every kernel variant this CPU runs.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "izwi/core/half.hpp"
#include "izwi/kernels/cpu/attention.hpp"
#include "kernel_test_util.hpp"

using namespace izwi;
namespace kc = izwi::kernels::cpu;

namespace {

float round_to_cache(float v, DType dtype) {
  if (dtype == DType::f16) return f16_to_f32(f32_to_f16(v));
  if (dtype == DType::bf16) return bf16_to_f32(f32_to_bf16(v));
  return v;
}

void check_attention(const kc::KernelTable& kernels, DType cache_dtype, std::size_t num_heads, std::size_t num_kv_heads, std::size_t head_dim,
                     std::size_t block_size) {
  // Sequences: {cached tokens, tokens this step, first visible position,
  // visible end (0: causal)}: decode steps, a fresh prefill, a chunk after a
  // cached prefix, long decodes (split over context chunks); then narrowed
  // windows as an encoder-decoder uses them: self-attention that skips the
  // audio positions (decode and chunk), cross-attention over a fixed range
  // whatever the query's position (decode, long decode and chunk).
  struct SequenceShape {
    std::size_t cached, n, first_visible, visible_end;
  };
  const std::vector<SequenceShape> shape_of{{5, 1, 0, 0},    {0, 13, 0, 0},   {37, 11, 0, 0},   {0, 1, 0, 0},
                                            {90, 1, 0, 0},   {3, 20, 0, 0},   {250, 1, 0, 0},   {40, 1, 24, 0},
                                            {30, 7, 24, 0},  {52, 1, 0, 45},  {300, 1, 0, 260}, {50, 6, 3, 45},
                                            {280, 1, 100, 0}};
  const std::size_t num_blocks = 2048;  // enough for one-token blocks
  const std::size_t row = num_kv_heads * head_dim, elem = dtype_size(cache_dtype);
  std::vector<std::byte> keys(num_blocks * block_size * row * elem), values(keys.size());
  const KVLayerView kv{keys.data(), values.data()};

  // Scattered, distinct blocks per sequence (block 0 is the null block).
  std::vector<BlockId> free_blocks(num_blocks - 1);
  std::iota(free_blocks.begin(), free_blocks.end(), BlockId{1});
  std::shuffle(free_blocks.begin(), free_blocks.end(), std::mt19937(42));
  std::vector<std::vector<BlockId>> tables;
  std::vector<std::vector<float>> all_k, all_v;  // every position's K/V, as the cache holds them
  std::vector<kc::AttentionSequence> seqs;
  std::size_t rows = 0, next_block = 0;
  for (auto [cached, n, first_visible, visible_end] : shape_of) {
    const std::size_t total = cached + n;
    std::vector<BlockId> t;
    for (std::size_t b = 0; b < (total + block_size - 1) / block_size; ++b) t.push_back(free_blocks[next_block++]);
    tables.push_back(t);
    all_k.push_back(kernel_test::random_floats(total * row, std::uint32_t(100 + rows), 1.5f));
    all_v.push_back(kernel_test::random_floats(total * row, std::uint32_t(200 + rows)));
    seqs.push_back({cached, n, {}, rows, first_visible, visible_end});
    rows += n;
  }
  for (std::size_t s = 0; s < seqs.size(); ++s) seqs[s].block_table = tables[s];

  // The cached prefix and this step's tokens all go through store_kv; the
  // step's rows with strides, as a fused qkv buffer would have them.
  izwi::detail::ThreadPool pool(3);
  for (std::size_t s = 0; s < seqs.size(); ++s) {
    const std::size_t total = seqs[s].num_computed + seqs[s].num_tokens;
    std::vector<std::int64_t> slots(total);
    for (std::size_t p = 0; p < total; ++p)
      slots[p] = std::int64_t(tables[s][p / block_size]) * std::int64_t(block_size) + std::int64_t(p % block_size);
    slots.push_back(-1);  // padding: skipped
    std::vector<float> k_strided((total + 1) * (row + 3)), v_strided((total + 1) * (row + 1));
    for (std::size_t p = 0; p < total; ++p)
      for (std::size_t i = 0; i < row; ++i) {
        k_strided[p * (row + 3) + i] = all_k[s][p * row + i];
        v_strided[p * (row + 1) + i] = all_v[s][p * row + i];
      }
    kc::store_kv(k_strided.data(), row + 3, v_strided.data(), row + 1, slots, kv, num_kv_heads, head_dim, cache_dtype);
  }

  const std::size_t q_ld = num_heads * head_dim + 2;
  const auto q = kernel_test::random_floats(rows * q_ld, 7, 1.5f);
  std::vector<float> out(rows * num_heads * head_dim, -5.0f);
  kc::AttentionShape shape{num_heads, num_kv_heads, head_dim, block_size, cache_dtype, 0.0f, q_ld, 0};
  kernels.paged_attention(q.data(), seqs.data(), seqs.size(), kv, shape, out.data(), pool);

  const double scale = 1.0 / std::sqrt(double(head_dim));
  const std::size_t group = num_heads / num_kv_heads;
  for (std::size_t s = 0; s < seqs.size(); ++s)
    for (std::size_t t = 0; t < seqs[s].num_tokens; ++t) {
      const std::size_t r = seqs[s].first_row + t;
      const std::size_t first = seqs[s].first_visible;
      const std::size_t end = seqs[s].visible_end ? seqs[s].visible_end : seqs[s].num_computed + t + 1;
      for (std::size_t h = 0; h < num_heads; ++h) {
        const std::size_t kvh = h / group;
        std::vector<double> w(end, -1e300);
        double mx = -1e300;
        for (std::size_t j = first; j < end; ++j) {
          double d = 0;
          for (std::size_t i = 0; i < head_dim; ++i)
            d += double(q[r * q_ld + h * head_dim + i]) *
                 round_to_cache(all_k[s][j * row + kvh * head_dim + i], cache_dtype);
          w[j] = d * scale;
          mx = std::max(mx, w[j]);
        }
        double sum = 0;
        for (std::size_t j = first; j < end; ++j) sum += (w[j] = std::exp(w[j] - mx));
        for (std::size_t i = 0; i < head_dim; ++i) {
          double o = 0;
          for (std::size_t j = first; j < end; ++j)
            o += w[j] / sum * round_to_cache(all_v[s][j * row + kvh * head_dim + i], cache_dtype);
          // Catch's INFO and REQUIRE only for an output that fails: formatting
          // the message for every one was most of this test's time under qemu.
          const double err = std::fabs(out[r * num_heads * head_dim + h * head_dim + i] - o);
          if (!(err <= 2e-5)) {
            INFO("cache " << to_string(cache_dtype) << " seq " << s << " token " << t << " head " << h << " dim " << i);
            REQUIRE(err <= 2e-5);
          }
        }
      }
    }
}

}  // namespace

TEST_CASE("paged_attention: mixed decode and prefill chunks, visible windows, GQA, every cache dtype", "[kernels][attention]") {
  kernel_test::for_each_variant([](const kc::KernelTable& kernels) {
    for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
      check_attention(kernels, dtype, 4, 2, 64, 16);
      check_attention(kernels, dtype, 6, 2, 37, 5);  // odd head_dim, odd block size, groups of 3
      check_attention(kernels, dtype, 4, 2, 20, 16);
    }
    check_attention(kernels, DType::f16, 3, 3, 24, 1);  // no grouping, one-token blocks
    check_attention(kernels, DType::bf16, 2, 1, 144, 16);  // value sums in 8 + 1 vectors (AVX-512), 8 + 8 + 2 (AVX2)
  });
}

TEST_CASE("paged_attention with split_decode off: a row's output is bit-identical however many rows of its sequence share the step",
          "[kernels][attention]") {
  kernel_test::for_each_variant([](const kc::KernelTable& kernels) {
    for (DType dtype : {DType::f32, DType::f16}) {
      const std::size_t heads = 4, kv_heads = 2, head_dim = 64, block_size = 16, cached = 190, n = 12;
      const std::size_t total = cached + n, row = kv_heads * head_dim, blocks = (total + block_size - 1) / block_size;
      std::vector<std::byte> keys((blocks + 1) * block_size * row * dtype_size(dtype)), values(keys.size());
      const KVLayerView kv{keys.data(), values.data()};
      std::vector<BlockId> table(blocks);
      std::iota(table.begin(), table.end(), BlockId{1});
      std::vector<std::int64_t> slots(total);
      for (std::size_t p = 0; p < total; ++p) slots[p] = std::int64_t(table[p / block_size]) * block_size + p % block_size;
      const auto k = kernel_test::random_floats(total * row, 31, 1.5f), v = kernel_test::random_floats(total * row, 32);
      kc::store_kv(k.data(), row, v.data(), row, slots, kv, kv_heads, head_dim, dtype);
      const auto q = kernel_test::random_floats(n * heads * head_dim, 33, 1.5f);
      kc::AttentionShape shape{heads, kv_heads, head_dim, block_size, dtype, 0.0f, 0, 0};
      shape.split_decode = false;
      izwi::detail::ThreadPool pool(3);
      // All n rows as one chunk of the sequence...
      std::vector<float> chunk(n * heads * head_dim), one(heads * head_dim);
      const kc::AttentionSequence whole{cached, n, table, 0};
      kernels.paged_attention(q.data(), &whole, 1, kv, shape, chunk.data(), pool);
      // ...and each row alone (a decode step, or a one-row prompt chunk).
      for (std::size_t t = 0; t < n; ++t) {
        INFO(kernels.name << " cache " << to_string(dtype) << " row " << t);
        const kc::AttentionSequence single{cached + t, 1, table, 0};
        kernels.paged_attention(q.data() + t * heads * head_dim, &single, 1, kv, shape, one.data(), pool);
        CHECK(std::equal(one.begin(), one.end(), chunk.begin() + static_cast<std::ptrdiff_t>(t * heads * head_dim)));
      }
    }
  });
}
