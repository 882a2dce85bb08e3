// KV-cache bookkeeping costs: allocate/free per block (with and without prefix
// caching), one decode step's extension, and prefix lookup (with hashing, and
// with the keys already computed). Storage is tiny on purpose: these measure
// the block manager, not memory bandwidth.
//
//   build-kv/bench/kv_cache/izwi_kv_cache_bench --benchmark_min_time=0.2

#include <benchmark/benchmark.h>

#include <numeric>
#include <vector>

#include "izwi/kv_cache/paged.hpp"

namespace {

constexpr izwi::KVCacheShape shape{1, 1, 4, izwi::DType::f32};
using Cache = izwi::PagedKVCache<16>;

izwi::PagedKVCacheConfig config(std::size_t num_blocks, bool caching) {
  izwi::PagedKVCacheConfig c;
  c.num_blocks = num_blocks;
  c.enable_prefix_caching = caching;
  return c;
}

std::vector<izwi::TokenId> tokens(std::size_t n, izwi::TokenId start) {
  std::vector<izwi::TokenId> t(n);
  std::iota(t.begin(), t.end(), start);
  return t;
}

// Allocate a whole sequence of range(0) blocks and free it. With caching on,
// every sequence has new content: each block is hashed and registered, and
// (once the pool has cycled) a cached free block is evicted per allocation.
void BM_AllocateFree(benchmark::State& state) {
  const auto blocks = static_cast<std::size_t>(state.range(0));
  const bool caching = state.range(1) != 0;
  Cache kv(shape, config(4096, caching));
  std::vector<izwi::TokenId> t = tokens(blocks * 16, 1);
  izwi::PrefixCacheKeys keys;
  izwi::RequestId id = 1;
  for (auto _ : state) {
    t[0] = static_cast<izwi::TokenId>(id);  // new content each time
    const izwi::SequenceView seq{id, t, &keys};
    const bool ok = kv.allocate_slots(seq, 0, t.size(), {});
    benchmark::DoNotOptimize(ok);
    kv.free(id);
    ++id;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * blocks));
  state.SetLabel(caching ? "prefix caching on, per block" : "prefix caching off, per block");
}
BENCHMARK(BM_AllocateFree)->ArgsProduct({{1, 16, 128}, {0, 1}});

// One decode step: a sequence grows by one token (a new block every 16 steps).
void BM_DecodeStep(benchmark::State& state) {
  const bool caching = state.range(0) != 0;
  Cache kv(shape, config(4096, caching));
  izwi::PrefixCacheKeys keys;
  std::vector<izwi::TokenId> t = tokens(4096, 1);
  izwi::RequestId id = 1;
  std::size_t n = 0;
  for (auto _ : state) {
    if (n == t.size()) {
      state.PauseTiming();
      kv.free(id++);
      t[0] = static_cast<izwi::TokenId>(id);
      n = 0;
      state.ResumeTiming();
    }
    const izwi::SequenceView seq{id, std::span<const izwi::TokenId>(t).first(n + 1), &keys};
    benchmark::DoNotOptimize(kv.allocate_slots(seq, n, 1, {}));
    ++n;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  state.SetLabel(caching ? "prefix caching on" : "prefix caching off");
}
BENCHMARK(BM_DecodeStep)->Arg(0)->Arg(1);

// find_cached_prefix over a cached prefix of range(0) tokens (+1 so the whole
// prefix can hit). A fresh request id each time hashes every block; the same id
// reuses the keys computed by the previous lookup and only probes the map.
void BM_PrefixLookup(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const bool fresh_id = state.range(1) != 0;
  Cache kv(shape, config(4096, true));
  izwi::PrefixCacheKeys keys;
  std::vector<izwi::TokenId> t = tokens(n + 1, 1);
  const izwi::SequenceView owner{1, t, &keys};
  if (!kv.allocate_slots(owner, 0, t.size(), {})) state.SkipWithError("cannot allocate the prefix");
  izwi::RequestId id = 2;
  std::size_t hit_tokens = 0;
  for (auto _ : state) {
    const izwi::SequenceView seq{fresh_id ? id++ : 2, t, &keys};
    hit_tokens = kv.find_cached_prefix(seq).num_tokens;
    benchmark::DoNotOptimize(hit_tokens);
  }
  if (hit_tokens != n) state.SkipWithError("the prefix did not hit");
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * (n / 16)));
  state.SetLabel(fresh_id ? "hashing + map probes, per block" : "map probes only, per block");
}
BENCHMARK(BM_PrefixLookup)->ArgsProduct({{256, 2048}, {1, 0}});

}  // namespace

BENCHMARK_MAIN();
