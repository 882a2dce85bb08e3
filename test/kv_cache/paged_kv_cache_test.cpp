// PagedKVCache and the block manager it shares with UnifiedKVCache: block
// accounting, prefix caching, eviction order, storage, and a randomized
// property test over allocate / extend / free sequences.

#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "izwi/concepts/archetypes.hpp"
#include "izwi/concepts/kv_cache.hpp"
#include "izwi/core/error.hpp"
#include "izwi/kv_cache/memory_pressure.hpp"
#include "izwi/kv_cache/paged.hpp"
#include "kv_cache/kv_test_support.hpp"

using izwi::BlockId;
using izwi::PagedKVCache;
using izwi::PagedKVCacheConfig;
using izwi::PrefixCacheKeys;
using izwi::PrefixHit;
using izwi::test::make_sequence;
using izwi::test::small_shape;
using izwi::test::token_run;

namespace {

using Cache = PagedKVCache<4>;

PagedKVCacheConfig budget(std::size_t bytes) {
  PagedKVCacheConfig c;
  c.byte_budget = bytes;
  return c;
}

PagedKVCacheConfig blocks(std::size_t n, bool caching = true) {
  PagedKVCacheConfig c;
  c.num_blocks = n;
  c.enable_prefix_caching = caching;
  return c;
}

std::vector<BlockId> table(const Cache& kv, izwi::RequestId id) {
  const auto t = kv.block_table(id);
  return {t.begin(), t.end()};
}

/// Allocates the whole sequence, using whatever prefix the cache holds.
PrefixHit admit(Cache& kv, const izwi::test::TestSequence& s) {
  const PrefixHit hit = kv.find_cached_prefix(s.view());
  REQUIRE(kv.allocate_slots(s.view(), hit.num_tokens, s.tokens.size() - hit.num_tokens, hit));
  return hit;
}

void require_all_returned(const Cache& kv) {
  const auto st = kv.stats();
  REQUIRE(st.num_used_blocks == 0);
  REQUIRE(st.num_free_blocks == st.num_blocks);
  for (BlockId b = 0; b <= st.num_blocks; ++b) REQUIRE(kv.ref_count(b) == 0);
  REQUIRE(kv.num_sequences() == 0);
  REQUIRE(kv.check_invariants().empty());
}

}  // namespace

TEST_CASE("PagedKVCache satisfies KVCachePolicy and is not pressure-aware", "[kv_cache][concepts]") {
  STATIC_REQUIRE(izwi::KVCachePolicy<PagedKVCache<>>);
  STATIC_REQUIRE(izwi::KVCachePolicy<PagedKVCache<32>>);
  STATIC_REQUIRE(!izwi::PressureAwareKVCache<PagedKVCache<>>);
  STATIC_REQUIRE(std::is_same_v<PagedKVCache<>::memory_space, izwi::host_space>);
  STATIC_REQUIRE(izwi::accessible_from<izwi::cpu_execution, PagedKVCache<>::memory_space>);
  STATIC_REQUIRE(!izwi::accessible_from<izwi::gpu_execution, PagedKVCache<>::memory_space>);
}

TEST_CASE("PagedKVCache rejects unusable shapes and budgets, naming the field", "[kv_cache]") {
  const auto field_of = [](auto&& make) -> std::string {
    try {
      make();
    } catch (const izwi::invalid_argument& e) {
      return e.field();
    }
    return "no exception";
  };
  CHECK(field_of([] { Cache({0, 2, 4, izwi::DType::f32}, blocks(4)); }) == "num_layers");
  CHECK(field_of([] { Cache({2, 0, 4, izwi::DType::f32}, blocks(4)); }) == "num_kv_heads");
  CHECK(field_of([] { Cache({2, 2, 0, izwi::DType::f32}, blocks(4)); }) == "head_dim");
  CHECK(field_of([] { Cache({2, 2, 4, izwi::DType::q8_0}, blocks(4)); }) == "dtype");
  CHECK(field_of([] { Cache(small_shape, blocks(0)); }) == "num_blocks");
  // small_shape: 2 layers x (K+V) x 2 heads x 4 dims x 4 bytes = 128 bytes per token, 512 per block.
  const std::size_t per_block = 4 * small_shape.bytes_per_token();
  REQUIRE(per_block == 512);
  CHECK(field_of([&] { Cache(small_shape, budget(2 * per_block - 1)); }) == "byte_budget");
  Cache smallest(small_shape, budget(2 * per_block));
  CHECK(smallest.stats().num_blocks == 1);
  Cache budgeted(small_shape, budget(10 * per_block + 100));
  CHECK(budgeted.stats().num_blocks == 9);
  CHECK(budgeted.stats().total_bytes <= 10 * per_block + 2 * 2 * izwi::detail::kv_array_alignment);
}

TEST_CASE("allocate_slots gives each sequence distinct blocks and free returns them", "[kv_cache]") {
  Cache kv(small_shape, blocks(8));
  auto a = make_sequence(1, token_run(9));
  auto b = make_sequence(2, token_run(3, 500));
  REQUIRE(kv.allocate_slots(a.view(), 0, 9, {}));
  REQUIRE(kv.allocate_slots(b.view(), 0, 3, {}));
  const auto ta = table(kv, 1), tb = table(kv, 2);
  REQUIRE(ta.size() == 3);  // ceil(9 / 4)
  REQUIRE(tb.size() == 1);
  std::set<BlockId> all(ta.begin(), ta.end());
  all.insert(tb.begin(), tb.end());
  REQUIRE(all.size() == 4);
  REQUIRE(all.count(izwi::null_block) == 0);
  for (BlockId blk : all) REQUIRE(kv.ref_count(blk) == 1);
  REQUIRE(kv.stats().num_used_blocks == 4);
  REQUIRE(kv.stats().usage() == Approx(0.5));
  REQUIRE(kv.check_invariants().empty());

  // Growing within the last block takes nothing; crossing a boundary takes one.
  REQUIRE(kv.allocate_slots(a.view(), 9, 3, {}));
  REQUIRE(table(kv, 1).size() == 3);
  a.tokens.push_back(7);
  a.tokens.push_back(8);
  a.tokens.push_back(9);
  a.tokens.push_back(10);
  REQUIRE(kv.allocate_slots(a.view(), 12, 1, {}));
  REQUIRE(table(kv, 1).size() == 4);
  REQUIRE(std::equal(ta.begin(), ta.end(), table(kv, 1).begin()));

  kv.free(1);
  kv.free(2);
  kv.free(2);   // twice: no-op
  kv.free(99);  // unknown: no-op
  REQUIRE(kv.block_table(1).empty());
  REQUIRE(kv.block_table(99).empty());
  require_all_returned(kv);
}

TEST_CASE("a refused allocation changes nothing", "[kv_cache]") {
  Cache kv(small_shape, blocks(4));
  auto a = make_sequence(1, token_run(12));
  REQUIRE(kv.allocate_slots(a.view(), 0, 12, {}));  // 3 of 4 blocks
  const auto before = kv.stats();
  const auto ta = table(kv, 1);

  auto b = make_sequence(2, token_run(8, 900));
  REQUIRE_FALSE(kv.allocate_slots(b.view(), 0, 8, {}));  // needs 2, 1 free
  REQUIRE(kv.block_table(2).empty());
  REQUIRE(kv.num_sequences() == 1);
  a.tokens.resize(20, 5);
  REQUIRE_FALSE(kv.allocate_slots(a.view(), 12, 8, {}));  // needs 2 more
  REQUIRE(table(kv, 1) == ta);
  const auto after = kv.stats();
  REQUIRE(after.num_used_blocks == before.num_used_blocks);
  REQUIRE(after.num_free_blocks == before.num_free_blocks);
  REQUIRE(after.num_cached_blocks == before.num_cached_blocks);
  REQUIRE(after.evictions == before.evictions);
  REQUIRE(kv.check_invariants().empty());

  // Reviving a cached free block consumes a free block too. Cache a's three
  // full blocks, hold one more block elsewhere, then ask for a's prefix plus
  // one block: 3 revived + 1 fresh = 4 > 3 free, so it is refused, and the
  // cached blocks stay free and cached.
  kv.free(1);
  REQUIRE(kv.stats().num_cached_blocks == 3);
  auto holder = make_sequence(4, token_run(4, 7000));
  REQUIRE(kv.allocate_slots(holder.view(), 0, 4, {}));  // takes the uncached block
  REQUIRE(kv.stats().num_cached_blocks == 3);
  auto d = make_sequence(5, token_run(16));
  const PrefixHit hit = kv.find_cached_prefix(d.view());
  REQUIRE(hit.num_tokens == 12);
  const auto free_before = kv.stats();
  REQUIRE_FALSE(kv.allocate_slots(d.view(), hit.num_tokens, d.tokens.size() - hit.num_tokens, hit));
  REQUIRE(kv.block_table(5).empty());
  for (BlockId blk : ta) REQUIRE(kv.ref_count(blk) == 0);
  REQUIRE(kv.stats().num_free_blocks == free_before.num_free_blocks);
  REQUIRE(kv.stats().num_cached_blocks == 3);
  REQUIRE(kv.stats().evictions == 0);
  REQUIRE(kv.check_invariants().empty());
}

TEST_CASE("prefix hits share blocks and are capped at n-1 tokens", "[kv_cache][prefix]") {
  Cache kv(small_shape, blocks(16));
  auto a = make_sequence(1, token_run(9));
  const PrefixHit first = admit(kv, a);
  REQUIRE(first.num_tokens == 0);
  REQUIRE(kv.stats().prefix_cache_queries == 9);
  REQUIRE(kv.stats().prefix_cache_hits == 0);

  auto b = make_sequence(2, token_run(9));
  const PrefixHit hit = admit(kv, b);
  REQUIRE(hit.num_tokens == 8);  // two full blocks; the ninth token sits in a partial block
  const auto ta = table(kv, 1), tb = table(kv, 2);
  REQUIRE(tb[0] == ta[0]);
  REQUIRE(tb[1] == ta[1]);
  REQUIRE(tb[2] != ta[2]);
  REQUIRE(kv.ref_count(ta[0]) == 2);
  REQUIRE(kv.ref_count(ta[1]) == 2);
  REQUIRE(kv.ref_count(ta[2]) == 1);
  REQUIRE(kv.stats().prefix_cache_queries == 18);
  REQUIRE(kv.stats().prefix_cache_hits == 8);

  // Exactly two full blocks of the same tokens: the last token must be
  // recomputed, so only one block (4 tokens) may be reported.
  auto c = make_sequence(3, token_run(8));
  const PrefixHit capped = kv.find_cached_prefix(c.view());
  REQUIRE(capped.num_tokens == 4);
  REQUIRE(capped.blocks.size() == 1);
  REQUIRE(capped.blocks[0] == ta[0]);
  // Lookups take no references.
  REQUIRE(kv.ref_count(ta[0]) == 2);

  // Fewer tokens than one block plus one: nothing to report.
  auto d = make_sequence(4, token_run(4));
  REQUIRE(kv.find_cached_prefix(d.view()).num_tokens == 0);

  kv.free(1);
  REQUIRE(kv.ref_count(ta[0]) == 1);
  kv.free(2);
  require_all_returned(kv);
  REQUIRE(kv.stats().num_cached_blocks == 2);  // a's two full blocks stay cached on the free list
}

TEST_CASE("blocks become hittable as a decoding sequence fills them", "[kv_cache][prefix]") {
  Cache kv(small_shape, blocks(16));
  auto a = make_sequence(1, token_run(3));
  REQUIRE(kv.allocate_slots(a.view(), 0, 3, {}));
  for (int step = 0; step < 6; ++step) {  // decode: one new token each step
    a.tokens.push_back(200 + step);
    REQUIRE(kv.allocate_slots(a.view(), a.tokens.size() - 1, 1, {}));
    REQUIRE(kv.check_invariants().empty());
  }
  REQUIRE(a.tokens.size() == 9);
  auto b = make_sequence(2, a.tokens);
  b.tokens.push_back(1);
  const PrefixHit hit = kv.find_cached_prefix(b.view());
  REQUIRE(hit.num_tokens == 8);
  REQUIRE(std::equal(hit.blocks.begin(), hit.blocks.end(), kv.block_table(1).begin()));
}

TEST_CASE("cache salt, voice and audio keys separate otherwise equal prefixes", "[kv_cache][prefix]") {
  Cache kv(small_shape, blocks(32));
  const auto tokens = token_run(17);  // 4 full blocks, hits capped at 4 blocks

  PrefixCacheKeys plain;
  PrefixCacheKeys salted;
  salted.root = 0x5a17;
  auto a = make_sequence(1, tokens, plain);
  admit(kv, a);
  auto b = make_sequence(2, tokens, salted);
  REQUIRE(admit(kv, b).num_tokens == 0);  // the root key changes every block's chained hash
  auto b2 = make_sequence(3, tokens, salted);
  REQUIRE(admit(kv, b2).num_tokens == 16);  // same salt shares
  REQUIRE(table(kv, 3)[0] == table(kv, 2)[0]);
  REQUIRE(table(kv, 3)[0] != table(kv, 1)[0]);

  // Audio in positions [8, 12), i.e. block 2 exactly.
  PrefixCacheKeys audio_x;
  audio_x.audio_hash = 0xaaaa;
  audio_x.audio_offset = 8;
  audio_x.audio_length = 4;
  PrefixCacheKeys audio_y = audio_x;
  audio_y.audio_hash = 0xbbbb;
  auto c = make_sequence(4, tokens, audio_x);
  const PrefixHit c_hit = admit(kv, c);
  // Blocks 0 and 1 lie before the audio and match the plain sequence's.
  REQUIRE(c_hit.num_tokens == 8);
  REQUIRE(table(kv, 4)[0] == table(kv, 1)[0]);
  REQUIRE(table(kv, 4)[1] == table(kv, 1)[1]);
  REQUIRE(table(kv, 4)[2] != table(kv, 1)[2]);

  auto d = make_sequence(5, tokens, audio_y);
  REQUIRE(admit(kv, d).num_tokens == 8);  // other audio: shares only what lies before it
  REQUIRE(table(kv, 5)[2] != table(kv, 4)[2]);

  auto e = make_sequence(6, tokens, audio_x);
  REQUIRE(admit(kv, e).num_tokens == 16);  // same audio: shares through and past it
  REQUIRE(table(kv, 6)[2] == table(kv, 4)[2]);
  REQUIRE(table(kv, 6)[3] == table(kv, 4)[3]);

  // Audio straddling a block boundary keys both blocks it touches.
  PrefixCacheKeys straddle = audio_x;
  straddle.audio_offset = 6;  // positions 6..9: blocks 1 and 2
  auto f = make_sequence(7, tokens, straddle);
  REQUIRE(admit(kv, f).num_tokens == 4);
  REQUIRE(kv.check_invariants().empty());
}

TEST_CASE("non-cacheable sequences and a cache without prefix caching never share", "[kv_cache][prefix]") {
  SECTION("cacheable = false") {
    Cache kv(small_shape, blocks(16));
    PrefixCacheKeys private_keys;
    private_keys.cacheable = false;
    auto a = make_sequence(1, token_run(9), private_keys);
    REQUIRE(admit(kv, a).num_tokens == 0);
    auto b = make_sequence(2, token_run(9), private_keys);
    REQUIRE(admit(kv, b).num_tokens == 0);
    auto c = make_sequence(3, token_run(9));  // cacheable, same tokens: a's blocks were never registered
    REQUIRE(admit(kv, c).num_tokens == 0);
    REQUIRE(kv.stats().prefix_cache_queries == 9);  // only c was looked up
    kv.free(1);
    kv.free(2);
    kv.free(3);
    REQUIRE(kv.stats().num_cached_blocks == 2);  // c's blocks only
  }
  SECTION("enable_prefix_caching = false") {
    Cache kv(small_shape, blocks(16, false));
    auto a = make_sequence(1, token_run(9));
    auto b = make_sequence(2, token_run(9));
    REQUIRE(admit(kv, a).num_tokens == 0);
    REQUIRE(admit(kv, b).num_tokens == 0);
    kv.free(1);
    kv.free(2);
    const auto st = kv.stats();
    REQUIRE(st.num_cached_blocks == 0);
    REQUIRE(st.prefix_cache_queries == 0);
    require_all_returned(kv);
  }
}

TEST_CASE("the same content computed twice stays cached once", "[kv_cache][prefix]") {
  Cache kv(small_shape, blocks(16));
  auto a = make_sequence(1, token_run(9));
  auto b = make_sequence(2, token_run(9));
  // Both allocated without a lookup (as two requests admitted in one step would be).
  REQUIRE(kv.allocate_slots(a.view(), 0, 9, {}));
  REQUIRE(kv.allocate_slots(b.view(), 0, 9, {}));
  REQUIRE(kv.check_invariants().empty());
  kv.free(2);
  REQUIRE(kv.stats().num_cached_blocks == 0);  // b's duplicates were private
  kv.free(1);
  REQUIRE(kv.stats().num_cached_blocks == 2);
  auto c = make_sequence(3, token_run(9));
  const PrefixHit hit = kv.find_cached_prefix(c.view());
  REQUIRE(hit.num_tokens == 8);
}

TEST_CASE("lazy eviction: a freed cached block is revived by a hit and loses its key only when reused",
          "[kv_cache][prefix][eviction]") {
  Cache kv(small_shape, blocks(4));
  auto a = make_sequence(1, token_run(9));  // 3 blocks, 2 full
  admit(kv, a);
  const auto ta = table(kv, 1);
  kv.free(1);
  REQUIRE(kv.stats().num_cached_blocks == 2);
  REQUIRE(kv.stats().num_free_blocks == 4);

  auto b = make_sequence(2, token_run(9));
  const PrefixHit hit = admit(kv, b);
  REQUIRE(hit.num_tokens == 8);
  REQUIRE(table(kv, 2)[0] == ta[0]);  // revived: the very same blocks
  REQUIRE(table(kv, 2)[1] == ta[1]);
  REQUIRE(kv.ref_count(ta[0]) == 1);
  REQUIRE(kv.stats().num_cached_blocks == 0);  // in use again, no longer "cached free"
  REQUIRE(kv.stats().evictions == 0);
  kv.free(2);

  // An unrelated sequence that needs every block reuses the cached ones and drops their keys.
  auto c = make_sequence(3, token_run(16, 5000));
  REQUIRE(kv.allocate_slots(c.view(), 0, 16, {}));
  REQUIRE(kv.stats().evictions == 2);
  kv.free(3);
  auto d = make_sequence(4, token_run(9));
  REQUIRE(kv.find_cached_prefix(d.view()).num_tokens == 0);
  REQUIRE(kv.check_invariants().empty());
}

TEST_CASE("free_unwritten drops the keys of the blocks past the written tokens only", "[kv_cache][prefix]") {
  Cache kv(small_shape, blocks(8));
  auto a = make_sequence(1, token_run(13));  // 4 blocks, 3 full, all registered at allocation
  admit(kv, a);
  const auto ta = table(kv, 1);
  // Its step did not run past token 5: block 0 holds K/V, blocks 1 and 2 do not.
  kv.free_unwritten(1, 5);
  CHECK(kv.stats().num_free_blocks == 8);
  CHECK(kv.stats().num_cached_blocks == 1);
  CHECK(kv.check_invariants().empty());
  auto b = make_sequence(2, token_run(13));
  CHECK(admit(kv, b).num_tokens == 4);  // only the written block; plain free() would offer 12
  CHECK(table(kv, 2)[0] == ta[0]);
  kv.free(2);
  // Written to a block boundary: every full block up to it keeps its key.
  auto c = make_sequence(3, token_run(13, 700));
  admit(kv, c);
  kv.free_unwritten(3, 8);
  auto d = make_sequence(4, token_run(13, 700));
  CHECK(kv.find_cached_prefix(d.view()).num_tokens == 8);
  CHECK(kv.check_invariants().empty());
}

TEST_CASE("a stale hit (its blocks reused since the lookup) is refused", "[kv_cache][prefix]") {
  Cache kv(small_shape, blocks(3));
  auto a = make_sequence(1, token_run(9));
  admit(kv, a);
  kv.free(1);  // blocks 1 and 2 cached and free
  auto b = make_sequence(2, token_run(9));
  const PrefixHit hit = kv.find_cached_prefix(b.view());
  REQUIRE(hit.num_tokens == 8);
  const std::vector<BlockId> hit_blocks(hit.blocks.begin(), hit.blocks.end());
  // Against the contract, another allocation runs between lookup and use and
  // takes every block, evicting the hit's blocks.
  auto c = make_sequence(3, token_run(12, 6000));
  REQUIRE(kv.allocate_slots(c.view(), 0, 12, {}));
  kv.free(3);  // c's blocks are now cached under c's keys
  const PrefixHit stale{8, hit_blocks, {}};
  REQUIRE_FALSE(kv.allocate_slots(b.view(), 8, 1, stale));
  REQUIRE(kv.block_table(2).empty());
  REQUIRE(kv.check_invariants().empty());
}

TEST_CASE("the free list is LRU and sequences are freed tail first", "[kv_cache][eviction]") {
  Cache kv(small_shape, blocks(6, false));
  auto a = make_sequence(1, token_run(12));
  auto b = make_sequence(2, token_run(8, 900));
  REQUIRE(kv.allocate_slots(a.view(), 0, 12, {}));
  REQUIRE(kv.allocate_slots(b.view(), 0, 8, {}));
  REQUIRE(table(kv, 1) == std::vector<BlockId>{1, 2, 3});  // a fresh pool hands blocks out in order
  REQUIRE(table(kv, 2) == std::vector<BlockId>{4, 5});
  kv.free(1);  // free list: 6, then a's blocks last first: 3 2 1
  kv.free(2);  // then 5 4
  auto c = make_sequence(3, token_run(24, 3000));
  REQUIRE(kv.allocate_slots(c.view(), 0, 24, {}));
  REQUIRE(table(kv, 3) == std::vector<BlockId>{6, 3, 2, 1, 5, 4});
}

TEST_CASE("eviction takes the least recently freed, deepest blocks first so prefixes survive",
          "[kv_cache][eviction][prefix]") {
  Cache kv(small_shape, blocks(6));
  auto a = make_sequence(1, token_run(12));  // 3 full blocks, all registered
  REQUIRE(kv.allocate_slots(a.view(), 0, 12, {}));
  REQUIRE(table(kv, 1) == std::vector<BlockId>{1, 2, 3});
  kv.free(1);  // free list: 4 5 6 3 2 1
  REQUIRE(kv.stats().num_cached_blocks == 3);
  auto x = make_sequence(2, token_run(16, 4000));  // 4 blocks: 4 5 6 and then a's deepest, 3
  REQUIRE(kv.allocate_slots(x.view(), 0, 16, {}));
  REQUIRE(table(kv, 2) == std::vector<BlockId>{4, 5, 6, 3});
  REQUIRE(kv.stats().evictions == 1);
  auto a2 = make_sequence(3, token_run(13));
  const PrefixHit hit = kv.find_cached_prefix(a2.view());
  REQUIRE(hit.num_tokens == 8);  // blocks 1 and 2 survived
  REQUIRE(hit.blocks[0] == 1);
  REQUIRE(hit.blocks[1] == 2);
}

TEST_CASE("K/V storage is per layer, aligned, zeroed for the null block and writable for every slot",
          "[kv_cache][storage]") {
  constexpr std::size_t num_blocks = 5;
  Cache kv(small_shape, blocks(num_blocks));
  const std::size_t row = small_shape.row_elements();  // floats per token per layer
  const std::size_t slots = (num_blocks + 1) * 4;       // null block included
  std::set<std::byte*> bases;
  for (std::uint32_t l = 0; l < small_shape.num_layers; ++l) {
    const izwi::KVLayerView v = kv.layer(l);
    REQUIRE(v.keys != nullptr);
    REQUIRE(v.values != nullptr);
    REQUIRE(reinterpret_cast<std::uintptr_t>(v.keys) % 64 == 0);
    REQUIRE(reinterpret_cast<std::uintptr_t>(v.values) % 64 == 0);
    bases.insert(v.keys);
    bases.insert(v.values);
    const auto* null_keys = reinterpret_cast<const float*>(v.keys);
    for (std::size_t i = 0; i < 4 * row; ++i) REQUIRE(null_keys[i] == 0.0f);
  }
  REQUIRE(bases.size() == 2 * small_shape.num_layers);
  REQUIRE(kv.layer(small_shape.num_layers).keys == nullptr);

  const auto value_of = [&](std::uint32_t l, int kind, std::size_t slot, std::size_t e) {
    return static_cast<float>(((l * 2 + kind) * slots + slot) * row + e);
  };
  for (std::uint32_t l = 0; l < small_shape.num_layers; ++l) {
    for (int kind = 0; kind < 2; ++kind) {
      auto* p = reinterpret_cast<float*>(kind ? kv.layer(l).values : kv.layer(l).keys);
      for (std::size_t s = 0; s < slots; ++s)
        for (std::size_t e = 0; e < row; ++e) p[s * row + e] = value_of(l, kind, s, e);
    }
  }
  // Read back after all writes: no array overlaps another.
  for (std::uint32_t l = 0; l < small_shape.num_layers; ++l) {
    for (int kind = 0; kind < 2; ++kind) {
      const auto* p = reinterpret_cast<const float*>(kind ? kv.layer(l).values : kv.layer(l).keys);
      for (std::size_t s = 0; s < slots; ++s)
        for (std::size_t e = 0; e < row; ++e) REQUIRE(p[s * row + e] == value_of(l, kind, s, e));
    }
  }
}

namespace {

/// Share of the whole pages in [p, p + bytes) that are resident (mincore).
double resident_share(const std::byte* p, std::size_t bytes) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const std::uintptr_t first = (reinterpret_cast<std::uintptr_t>(p) + page - 1) / page * page;
  const std::uintptr_t last = (reinterpret_cast<std::uintptr_t>(p) + bytes) / page * page;
  REQUIRE(last > first);
  std::vector<unsigned char> pages((last - first) / page);
  REQUIRE(::mincore(reinterpret_cast<void*>(first), last - first, pages.data()) == 0);
  return double(std::count_if(pages.begin(), pages.end(), [](unsigned char v) { return (v & 1) != 0; })) /
         double(pages.size());
}

/// Resident share of each layer's K and V arrays, the lowest.
double least_resident_array(Cache& kv) {
  const std::size_t array_bytes = kv.stats().total_bytes / (2 * small_shape.num_layers) / 2;  // well inside each
  double least = 1.0;
  for (std::uint32_t l = 0; l < small_shape.num_layers; ++l)
    for (const std::byte* a : {kv.layer(l).keys, kv.layer(l).values}) least = std::min(least, resident_share(a, array_bytes));
  return least;
}

}  // namespace

TEST_CASE("commit_memory makes the whole pool resident at construction, and without it pages wait for their blocks",
          "[kv_cache][storage]") {
  PagedKVCacheConfig config = budget(std::size_t{32} << 20);
  config.commit_memory = true;
  Cache committed(small_shape, config);
  CHECK(least_resident_array(committed) == 1.0);
  const auto* keys = reinterpret_cast<const float*>(committed.layer(1).keys);
  CHECK(std::all_of(keys, keys + 1000, [](float v) { return v == 0.0f; }));

  Cache lazy(small_shape, budget(std::size_t{32} << 20));
  CHECK(least_resident_array(lazy) < 0.5);  // only the null block (and an allocator's first page) written

  // More than the machine has: refused before anything is allocated, naming the field.
  const std::optional<std::size_t> physical = izwi::physical_memory_bytes();
  REQUIRE(physical);
  const izwi::KVCacheShape large{64, 8, 128, izwi::DType::f32};  // 8 MiB a block of 16 tokens
  config.byte_budget = *physical + (std::size_t{1} << 30);
  try {
    PagedKVCache<16> too_large(large, config);
    FAIL("a pool larger than the physical memory was committed");
  } catch (const izwi::invalid_argument& e) {
    CHECK(e.field() == "byte_budget");
    CHECK(std::string(e.what()).find("more than this machine's") != std::string::npos);
  }
}

TEST_CASE("a cache moves with its blocks and storage (the engine takes it by value)", "[kv_cache]") {
  STATIC_REQUIRE(std::is_nothrow_move_constructible_v<Cache>);
  Cache original(small_shape, blocks(8));
  auto a = make_sequence(1, token_run(9));
  admit(original, a);
  std::byte* keys = original.layer(1).keys;
  const auto ta = table(original, 1);
  Cache moved(std::move(original));
  REQUIRE(table(moved, 1) == ta);
  REQUIRE(moved.layer(1).keys == keys);
  auto b = make_sequence(2, token_run(9));
  REQUIRE(admit(moved, b).num_tokens == 8);
  moved.free(1);
  moved.free(2);
  require_all_returned(moved);
}

TEST_CASE("stats fill every field", "[kv_cache][stats]") {
  Cache kv(small_shape, blocks(8));
  auto a = make_sequence(1, token_run(9));
  admit(kv, a);
  auto b = make_sequence(2, token_run(9));
  admit(kv, b);
  kv.free(1);
  const izwi::KVCacheStats s = kv.stats();
  CHECK(s.block_size == 4);
  CHECK(s.num_blocks == 8);
  CHECK(s.num_used_blocks == 3);  // b holds 2 shared + 1 own; a's own third block is free
  CHECK(s.num_free_blocks == 5);
  CHECK(s.num_cached_blocks == 0);  // a's cached blocks are still held by b
  CHECK(s.bytes_per_block == 512);
  CHECK(s.total_bytes == 9 * 512);  // 8 usable + null; 1152-byte arrays are 64-aligned already
  CHECK(s.prefix_cache_queries == 18);
  CHECK(s.prefix_cache_hits == 8);
  CHECK(s.evictions == 0);
  CHECK(s.usage() == Approx(3.0 / 8.0));
}

namespace {

/// Writes, in every layer's K and V, a value naming (layer, array, token, position) into each of
/// the sequence's positions [begin, end): what its step would have computed.
void write_rows(Cache& kv, const izwi::test::TestSequence& s, std::size_t begin, std::size_t end) {
  const std::size_t row = small_shape.row_elements();
  const auto t = kv.block_table(s.id);
  for (std::uint32_t l = 0; l < small_shape.num_layers; ++l) {
    for (int kind = 0; kind < 2; ++kind) {
      auto* base = reinterpret_cast<float*>(kind ? kv.layer(l).values : kv.layer(l).keys);
      for (std::size_t pos = begin; pos < end; ++pos) {
        float* r = base + (t[pos / 4] * 4 + pos % 4) * row;
        for (std::size_t e = 0; e < row; ++e) r[e] = static_cast<float>(((l * 2 + kind) * 1000 + s.tokens[pos]) * 100 + pos);
      }
    }
  }
}

/// True when the sequence's positions [0, end) hold what write_rows put there for these tokens.
bool rows_hold(Cache& kv, const izwi::test::TestSequence& s, std::size_t end) {
  const std::size_t row = small_shape.row_elements();
  const auto t = kv.block_table(s.id);
  for (std::uint32_t l = 0; l < small_shape.num_layers; ++l) {
    for (int kind = 0; kind < 2; ++kind) {
      const auto* base = reinterpret_cast<const float*>(kind ? kv.layer(l).values : kv.layer(l).keys);
      for (std::size_t pos = 0; pos < end; ++pos) {
        const float* r = base + (t[pos / 4] * 4 + pos % 4) * row;
        for (std::size_t e = 0; e < row; ++e) {
          if (r[e] != static_cast<float>(((l * 2 + kind) * 1000 + s.tokens[pos]) * 100 + pos)) return false;
        }
      }
    }
  }
  return true;
}

/// Allocates and "computes" the whole sequence, using whatever the cache holds.
PrefixHit admit_and_write(Cache& kv, const izwi::test::TestSequence& s) {
  const PrefixHit hit = admit(kv, s);
  write_rows(kv, s, hit.num_tokens, s.tokens.size());
  return hit;
}

}  // namespace

TEST_CASE("a freed sequence's partly filled last block is copied for a sequence that continues it",
          "[kv_cache][prefix][partial]") {
  Cache kv(small_shape, blocks(16));
  auto a = make_sequence(1, token_run(10));  // two full blocks and two rows
  admit_and_write(kv, a);
  const auto ta = table(kv, 1);
  CHECK(kv.num_partial_blocks() == 0);  // remembered only once freed: a live block still grows
  kv.free(1);
  CHECK(kv.num_partial_blocks() == 1);

  // A beam forked from a: its tokens and one more.
  auto b = make_sequence(2, a.tokens);
  b.tokens.push_back(999);
  const auto hits_before = kv.stats().prefix_cache_hits;
  const PrefixHit hit = kv.find_cached_prefix(b.view());
  CHECK(hit.num_tokens == 10);
  CHECK(hit.blocks.size() == 2);
  CHECK(hit.partial.source == ta[2]);
  CHECK(hit.partial.rows == 2);
  CHECK(kv.stats().prefix_cache_hits - hits_before == 10);
  REQUIRE(kv.allocate_slots(b.view(), hit.num_tokens, 1, hit));
  const auto tb = table(kv, 2);
  CHECK(tb[0] == ta[0]);
  CHECK(tb[1] == ta[1]);
  CHECK(tb[2] != ta[2]);                  // its own block: b writes position 10 into it
  CHECK(kv.ref_count(ta[2]) == 0);        // the source was copied, not taken
  CHECK(rows_hold(kv, b, 10));            // rows 8 and 9 arrived with the copy
  CHECK(kv.check_invariants().empty());
  write_rows(kv, b, 10, 11);
  kv.free(2);
  CHECK(kv.num_partial_blocks() == 2);    // a's two rows and b's three

  // Two beams of the next round, one continuing b, one diverging after a: each
  // copies the longest run its tokens share.
  auto c = make_sequence(3, b.tokens);
  c.tokens.push_back(5);
  const PrefixHit from_b = kv.find_cached_prefix(c.view());
  CHECK(from_b.partial.source == tb[2]);
  CHECK(from_b.partial.rows == 3);
  auto d = make_sequence(4, token_run(9));
  d.tokens.insert(d.tokens.end(), {42, 43});
  const PrefixHit from_a = kv.find_cached_prefix(d.view());
  CHECK(from_a.num_tokens == 9);
  CHECK(from_a.partial.rows == 1);  // a's block and b's both share position 8 with d; either will do
  CHECK((from_a.partial.source == ta[2] || from_a.partial.source == tb[2]));
  REQUIRE(kv.allocate_slots(d.view(), from_a.num_tokens, 2, from_a));
  CHECK(rows_hold(kv, d, 9));
  write_rows(kv, d, 9, 11);
  kv.free(4);

  // The cap: the last token is always computed, so a sequence equal to a
  // takes one row, and one that ends at a's full blocks takes none.
  auto e = make_sequence(5, a.tokens);
  CHECK(kv.find_cached_prefix(e.view()).num_tokens == 9);
  auto f = make_sequence(6, token_run(9));
  CHECK(kv.find_cached_prefix(f.view()).partial.rows == 0);
  CHECK(kv.find_cached_prefix(f.view()).num_tokens == 8);
  // Other keys (a salt) see nothing of a's blocks.
  auto g = make_sequence(7, b.tokens, PrefixCacheKeys{.root = 7});
  CHECK(kv.find_cached_prefix(g.view()).num_tokens == 0);
  CHECK(kv.check_invariants().empty());
}

TEST_CASE("a remembered partial block is forgotten when reused, refused when stale, and never unwritten",
          "[kv_cache][prefix][partial]") {
  SECTION("reused: the block goes back into service and the rows are gone from the cache") {
    Cache kv(small_shape, blocks(4));
    auto a = make_sequence(1, token_run(6));
    admit_and_write(kv, a);
    kv.free(1);
    REQUIRE(kv.num_partial_blocks() == 1);
    auto big = make_sequence(2, token_run(16, 5000));  // takes every block
    REQUIRE(kv.allocate_slots(big.view(), 0, 16, {}));
    CHECK(kv.num_partial_blocks() == 0);
    kv.free(2);
    auto b = make_sequence(3, token_run(7));
    CHECK(kv.find_cached_prefix(b.view()).partial.rows == 0);
    CHECK(kv.check_invariants().empty());
  }
  SECTION("stale: a hit whose source was reused since the lookup is refused, changing nothing") {
    Cache kv(small_shape, blocks(5));
    auto a = make_sequence(1, token_run(6));
    admit_and_write(kv, a);
    const auto ta = table(kv, 1);
    kv.free(1);  // free list, head first: 3 4 5, then a's partial block, then its full one
    auto b = make_sequence(2, token_run(7));
    const PrefixHit hit = kv.find_cached_prefix(b.view());
    REQUIRE(hit.partial.rows == 2);
    const std::vector<BlockId> hit_blocks(hit.blocks.begin(), hit.blocks.end());
    const PrefixHit kept{hit.num_tokens, hit_blocks, hit.partial};  // against the contract, kept past other calls
    auto big = make_sequence(3, token_run(16, 5000));  // four blocks: reuses the partial one, not the full one
    REQUIRE(kv.allocate_slots(big.view(), 0, 16, {}));
    CHECK(std::count(kv.block_table(3).begin(), kv.block_table(3).end(), ta[1]) == 1);
    kv.free(3);
    const auto before = kv.stats();
    CHECK_FALSE(kv.allocate_slots(b.view(), kept.num_tokens, 1, kept));
    CHECK(kv.block_table(2).empty());
    CHECK(kv.stats().num_free_blocks == before.num_free_blocks);
    CHECK(kv.check_invariants().empty());
  }
  SECTION("unwritten: a sequence freed before its last step ran leaves no rows behind") {
    Cache kv(small_shape, blocks(8));
    auto a = make_sequence(1, token_run(6));
    REQUIRE(kv.allocate_slots(a.view(), 0, 5, {}));
    a.tokens.push_back(77);
    REQUIRE(kv.allocate_slots(a.view(), 5, 1, {}));  // planned, then preempted before it ran
    kv.free_unwritten(1, 5);
    CHECK(kv.num_partial_blocks() == 0);
    auto c = make_sequence(2, token_run(6));
    REQUIRE(kv.allocate_slots(c.view(), 0, 6, {}));
    kv.free_unwritten(2, 6);  // every planned token written: remembered
    CHECK(kv.num_partial_blocks() == 1);
  }
  SECTION("off: reuse_partial_blocks = false, or no prefix caching, remembers nothing") {
    for (const bool caching : {true, false}) {
      PagedKVCacheConfig config = blocks(8, caching);
      config.reuse_partial_blocks = false;
      Cache kv(small_shape, config);
      auto a = make_sequence(1, token_run(6));
      admit_and_write(kv, a);
      kv.free(1);
      CHECK(kv.num_partial_blocks() == 0);
      auto b = make_sequence(2, token_run(7));
      CHECK(kv.find_cached_prefix(b.view()).partial.rows == 0);
    }
  }
}

TEST_CASE("randomized allocate/extend/free keeps every invariant and returns every block",
          "[kv_cache][property]") {
  const std::uint32_t seed = GENERATE(20261122u, 7u, 1234567u);
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  const auto uniform = [&](std::size_t lo, std::size_t hi) {  // inclusive
    return std::uniform_int_distribution<std::size_t>(lo, hi)(rng);
  };

  constexpr std::size_t num_blocks = 24;
  Cache kv(small_shape, blocks(num_blocks));
  const std::size_t row = small_shape.row_elements();

  struct Live {
    izwi::test::TestSequence seq;
    std::size_t num_computed = 0;
  };
  std::map<izwi::RequestId, Live> live;
  izwi::RequestId next_id = 1;
  const std::vector<std::vector<izwi::TokenId>> prefixes = {token_run(8, 10), token_run(13, 10), token_run(6, 50)};

  const auto in_audio = [](const Live& l, std::size_t pos) {
    return pos >= l.seq.keys.audio_offset && pos < std::size_t{l.seq.keys.audio_offset} + l.seq.keys.audio_length;
  };
  // Slot s of layer 0 holds (token, salt) in its K row: what a hit's blocks must contain.
  const auto write_slot = [&](const Live& l, std::size_t pos) {
    const BlockId blk = kv.block_table(l.seq.id)[pos / 4];
    auto* k = reinterpret_cast<float*>(kv.layer(0).keys) + (blk * 4 + pos % 4) * row;
    k[0] = static_cast<float>(l.seq.tokens[pos]);
    k[1] = static_cast<float>(l.seq.keys.root);
    k[2] = static_cast<float>(in_audio(l, pos) ? l.seq.keys.audio_hash : 0);
  };
  // After an allocation that adopted a hit: the sequence's own table must
  // hold the hit's tokens, in the shared full blocks and the copied rows alike.
  const auto check_hit = [&](const Live& l, const PrefixHit& hit) {
    const auto own = kv.block_table(l.seq.id);
    REQUIRE(std::equal(hit.blocks.begin(), hit.blocks.end(), own.begin()));
    for (std::size_t pos = 0; pos < hit.num_tokens; ++pos) {
      const BlockId blk = own[pos / 4];
      const auto* k = reinterpret_cast<const float*>(kv.layer(0).keys) + (blk * 4 + pos % 4) * row;
      REQUIRE(k[0] == static_cast<float>(l.seq.tokens[pos]));
      REQUIRE(k[1] == static_cast<float>(l.seq.keys.root));
      REQUIRE(k[2] == static_cast<float>(in_audio(l, pos) ? l.seq.keys.audio_hash : 0));
    }
  };

  std::uint64_t refusals = 0, hits = 0, partial_hits = 0;
  for (int op = 0; op < 3000; ++op) {
    const std::size_t kind = uniform(0, 9);
    if (kind <= 1 && live.size() < 8) {  // a request arrives
      Live l;
      l.seq.id = next_id++;
      l.seq.tokens = prefixes[uniform(0, prefixes.size() - 1)];
      const std::size_t extra = uniform(0, 12);
      for (std::size_t i = 0; i < extra; ++i) l.seq.tokens.push_back(static_cast<izwi::TokenId>(uniform(0, 3)));
      l.seq.keys.root = uniform(0, 3) == 0 ? 7 : 0;
      if (uniform(0, 4) == 0) {
        l.seq.keys.audio_hash = uniform(1, 2);
        l.seq.keys.audio_offset = static_cast<std::uint32_t>(uniform(0, 8));
        l.seq.keys.audio_length = static_cast<std::uint32_t>(uniform(1, 6));
      }
      l.seq.keys.cacheable = uniform(0, 9) != 0;
      live.emplace(l.seq.id, std::move(l));
    } else if (kind <= 7 && !live.empty()) {  // a step for one request: prefill chunk or decode
      auto it = std::next(live.begin(), static_cast<std::ptrdiff_t>(uniform(0, live.size() - 1)));
      Live& l = it->second;
      if (l.num_computed == l.seq.tokens.size()) {
        if (l.seq.tokens.size() >= 60) continue;
        l.seq.tokens.push_back(static_cast<izwi::TokenId>(uniform(0, 3)));  // the token sampled last step
      }
      PrefixHit hit;
      std::size_t computed = l.num_computed;
      if (kv.block_table(l.seq.id).empty() && computed == 0) {
        hit = kv.find_cached_prefix(l.seq.view());
        REQUIRE(hit.num_tokens < l.seq.tokens.size());
        REQUIRE(hit.num_tokens == hit.blocks.size() * 4 + hit.partial.rows);
        REQUIRE(hit.partial.rows < 4);
        computed = hit.num_tokens;
        if (hit.num_tokens) ++hits;
        if (hit.partial.rows) ++partial_hits;
      }
      const std::size_t chunk = uniform(1, l.seq.tokens.size() - computed);
      const auto before = kv.stats();
      const std::vector<BlockId> table_before(kv.block_table(l.seq.id).begin(), kv.block_table(l.seq.id).end());
      if (kv.allocate_slots(l.seq.view(), computed, chunk, hit)) {
        REQUIRE(kv.block_table(l.seq.id).size() * 4 >= computed + chunk);
        check_hit(l, hit);
        for (std::size_t pos = computed; pos < computed + chunk; ++pos) write_slot(l, pos);
        l.num_computed = computed + chunk;
      } else {
        ++refusals;
        const auto after = kv.stats();
        REQUIRE(after.num_free_blocks == before.num_free_blocks);
        REQUIRE(after.num_cached_blocks == before.num_cached_blocks);
        REQUIRE(after.evictions == before.evictions);
        REQUIRE(std::equal(table_before.begin(), table_before.end(), kv.block_table(l.seq.id).begin(),
                           kv.block_table(l.seq.id).end()));
        kv.free(l.seq.id);  // preempted: recompute from scratch later
        l.num_computed = 0;
      }
    } else if (!live.empty()) {  // finished or aborted, in any state
      auto it = std::next(live.begin(), static_cast<std::ptrdiff_t>(uniform(0, live.size() - 1)));
      kv.free(it->first);
      live.erase(it);
    }
    const std::string problem = kv.check_invariants();
    INFO("after op " << op);
    REQUIRE(problem.empty());
  }
  for (auto& [id, l] : live) kv.free(id);
  require_all_returned(kv);
  // The run exercised what it claims to.
  CHECK(refusals > 0);
  CHECK(hits > 0);
  CHECK(partial_hits > 0);
  CHECK(kv.stats().evictions > 0);
}
