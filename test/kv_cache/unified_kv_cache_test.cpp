// UnifiedKVCache and memory pressure: levels and hysteresis, the system
// source's parsing, the budget, and the cache's responses under an injected source.

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <memory>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <unistd.h>

#include "izwi/concepts/kv_cache.hpp"
#include "izwi/core/error.hpp"
#include "izwi/kv_cache/memory_pressure.hpp"
#include "izwi/kv_cache/unified.hpp"
#include "kv_cache/kv_test_support.hpp"

using izwi::ManualMemoryPressureSource;
using izwi::MemoryPressure;
using izwi::MemoryPressureSample;
using izwi::MemoryPressureThresholds;
using izwi::UnifiedKVCacheConfig;
using izwi::test::make_sequence;
using izwi::test::small_shape;
using izwi::test::token_run;

namespace {

using UnifiedCache = izwi::UnifiedKVCache<ManualMemoryPressureSource, 4>;
constexpr std::size_t unlimited = static_cast<std::size_t>(-1);

UnifiedKVCacheConfig test_config(std::size_t num_blocks, bool caching = true) {
  UnifiedKVCacheConfig c;
  c.num_blocks = num_blocks;
  c.enable_prefix_caching = caching;
  c.poll_interval = std::chrono::nanoseconds(0);
  return c;
}

MemoryPressureSample available(double fraction) { return {fraction, std::nullopt}; }
MemoryPressureSample psi(double avg10) { return {0.9, avg10}; }

}  // namespace

TEST_CASE("UnifiedKVCache satisfies KVCachePolicy and the pressure-aware ability", "[kv_cache][concepts]") {
  STATIC_REQUIRE(izwi::KVCachePolicy<izwi::UnifiedKVCache<>>);
  STATIC_REQUIRE(izwi::PressureAwareKVCache<izwi::UnifiedKVCache<>>);
  STATIC_REQUIRE(izwi::PressureAwareKVCache<UnifiedCache>);
  STATIC_REQUIRE(std::is_same_v<UnifiedCache::memory_space, izwi::unified_space>);
  STATIC_REQUIRE(izwi::accessible_from<izwi::cpu_execution, UnifiedCache::memory_space>);
  STATIC_REQUIRE(izwi::accessible_from<izwi::gpu_execution, UnifiedCache::memory_space>);
  STATIC_REQUIRE(izwi::MemoryPressureSource<izwi::SystemMemoryPressureSource>);
  STATIC_REQUIRE(izwi::MemoryPressureSource<ManualMemoryPressureSource>);
  STATIC_REQUIRE(!izwi::MemoryPressureSource<int>);
}

TEST_CASE("pressure levels are entered at the thresholds and left only past the margins", "[kv_cache][pressure]") {
  const MemoryPressureThresholds t;  // warning < 15 % or PSI > 10; critical < 5 % or PSI > 40; margins 5 %, 5
  using izwi::classify_memory_pressure;
  using izwi::next_memory_pressure;
  CHECK(classify_memory_pressure(available(0.50), t) == MemoryPressure::normal);
  CHECK(classify_memory_pressure(available(0.14), t) == MemoryPressure::warning);
  CHECK(classify_memory_pressure(available(0.04), t) == MemoryPressure::critical);
  CHECK(classify_memory_pressure(psi(11), t) == MemoryPressure::warning);
  CHECK(classify_memory_pressure(psi(41), t) == MemoryPressure::critical);
  CHECK(classify_memory_pressure({0.9, std::nullopt}, t) == MemoryPressure::normal);

  // Available memory falling then recovering.
  MemoryPressure level = MemoryPressure::normal;
  level = next_memory_pressure(level, available(0.04), t);
  CHECK(level == MemoryPressure::critical);
  level = next_memory_pressure(level, available(0.07), t);  // above 5 % but not 10 %
  CHECK(level == MemoryPressure::critical);
  level = next_memory_pressure(level, available(0.12), t);  // clears critical + margin, not warning + margin
  CHECK(level == MemoryPressure::warning);
  level = next_memory_pressure(level, available(0.18), t);  // above 15 % but not 20 %
  CHECK(level == MemoryPressure::warning);
  level = next_memory_pressure(level, available(0.21), t);
  CHECK(level == MemoryPressure::normal);
  // From critical straight to normal when the reading is clearly fine.
  CHECK(next_memory_pressure(MemoryPressure::critical, available(0.60), t) == MemoryPressure::normal);
  // Going up never waits.
  CHECK(next_memory_pressure(MemoryPressure::warning, available(0.01), t) == MemoryPressure::critical);

  // PSI the same way.
  level = next_memory_pressure(MemoryPressure::normal, psi(12), t);
  CHECK(level == MemoryPressure::warning);
  level = next_memory_pressure(level, psi(8), t);  // below 10 but not below 5
  CHECK(level == MemoryPressure::warning);
  level = next_memory_pressure(level, psi(4), t);
  CHECK(level == MemoryPressure::normal);

  CHECK(izwi::to_string(MemoryPressure::critical) == "critical");
}

TEST_CASE("thresholds are validated with the field named", "[kv_cache][pressure]") {
  MemoryPressureThresholds t;
  t.critical_available_fraction = 0.2;  // above warning
  try {
    t.validate();
    FAIL("expected invalid_argument");
  } catch (const izwi::invalid_argument& e) {
    CHECK(e.field() == "critical_available_fraction");
  }
  MemoryPressureThresholds u;
  u.warning_available_fraction = 1.5;
  CHECK_THROWS_AS(u.validate(), izwi::invalid_argument);
  CHECK_NOTHROW(MemoryPressureThresholds{}.validate());
}

TEST_CASE("SystemMemoryPressureSource parses meminfo and PSI, and reads missing files as no pressure",
          "[kv_cache][pressure]") {
  char dir_template[] = "/tmp/izwi_pressure_XXXXXX";
  const char* dir = ::mkdtemp(dir_template);
  REQUIRE(dir != nullptr);
  const std::string meminfo = std::string(dir) + "/meminfo";
  const std::string pressure = std::string(dir) + "/memory";
  std::ofstream(meminfo) << "MemTotal:        1000 kB\nMemFree:          100 kB\nMemAvailable:     250 kB\n";
  std::ofstream(pressure) << "some avg10=12.50 avg60=3.00 avg300=1.00 total=12345\n"
                          << "full avg10=2.00 avg60=1.00 avg300=0.50 total=100\n";
  const MemoryPressureSample s = izwi::SystemMemoryPressureSource(meminfo, pressure).read();
  CHECK(s.available_fraction == Approx(0.25));
  REQUIRE(s.psi_some_avg10.has_value());
  CHECK(*s.psi_some_avg10 == Approx(12.5));

  const MemoryPressureSample missing =
      izwi::SystemMemoryPressureSource(std::string(dir) + "/none", std::string(dir) + "/none").read();
  CHECK(missing.available_fraction == 1.0);
  CHECK_FALSE(missing.psi_some_avg10.has_value());
  std::remove(meminfo.c_str());
  std::remove(pressure.c_str());
  ::rmdir(dir);

  // This machine: whatever it reads is a plausible fraction.
  const MemoryPressureSample here = izwi::SystemMemoryPressureSource{}.read();
  CHECK(here.available_fraction > 0.0);
  CHECK(here.available_fraction <= 1.0);
  REQUIRE(izwi::physical_memory_bytes().has_value());
}

TEST_CASE("UnifiedKVCache sizes its budget as a fraction of physical memory", "[kv_cache][unified]") {
  UnifiedKVCacheConfig c;
  c.physical_memory_bytes = std::size_t{1} << 20;  // 1 MiB
  c.memory_fraction = 0.5;
  UnifiedCache kv(small_shape, c);
  // 512 KiB / 512-byte blocks = 1024 blocks, one of them the null block.
  CHECK(kv.stats().num_blocks == 1023);
  CHECK(kv.stats().total_bytes >= 1024 * 512);
  CHECK(reinterpret_cast<std::uintptr_t>(kv.layer(0).keys) % static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE)) == 0);

  c.memory_fraction = 1.5;
  try {
    UnifiedCache bad(small_shape, c);
    FAIL("expected invalid_argument");
  } catch (const izwi::invalid_argument& e) {
    CHECK(e.field() == "memory_fraction");
  }
  c.memory_fraction = 0.85;
  c.physical_memory_bytes = 600;  // not even two blocks
  CHECK_THROWS_AS(UnifiedCache(small_shape, c), izwi::invalid_argument);
  // The default source and fraction work on this machine; the block cap keeps the toy shape small.
  izwi::UnifiedKVCache<> system_cache(small_shape);
  CHECK(system_cache.stats().num_blocks == system_cache.config().max_num_blocks);
  CHECK(system_cache.admission_advice().max_num_seqs >= 1);
}

TEST_CASE("UnifiedKVCache blocks, shares prefixes and stores K/V like the paged cache", "[kv_cache][unified]") {
  UnifiedCache kv(small_shape, test_config(8));
  auto a = make_sequence(1, token_run(9));
  REQUIRE(kv.allocate_slots(a.view(), 0, 9, {}));
  auto b = make_sequence(2, token_run(9));
  const izwi::PrefixHit hit = kv.find_cached_prefix(b.view());
  REQUIRE(hit.num_tokens == 8);
  REQUIRE(kv.allocate_slots(b.view(), 8, 1, hit));
  REQUIRE(kv.ref_count(kv.block_table(1)[0]) == 2);
  // Every slot of every array is writable and keeps what was written.
  const std::size_t row = small_shape.row_elements();
  for (std::uint32_t l = 0; l < small_shape.num_layers; ++l) {
    auto* k = reinterpret_cast<float*>(kv.layer(l).keys);
    auto* v = reinterpret_cast<float*>(kv.layer(l).values);
    for (std::size_t i = 0; i < 9 * 4 * row; ++i) {
      k[i] = static_cast<float>(i + l);
      v[i] = -static_cast<float>(i + l);
    }
  }
  for (std::uint32_t l = 0; l < small_shape.num_layers; ++l) {
    const auto* k = reinterpret_cast<const float*>(kv.layer(l).keys);
    const auto* v = reinterpret_cast<const float*>(kv.layer(l).values);
    for (std::size_t i = 0; i < 9 * 4 * row; ++i) {
      REQUIRE(k[i] == static_cast<float>(i + l));
      REQUIRE(v[i] == -static_cast<float>(i + l));
    }
  }
  kv.free(1);
  kv.free(2);
  CHECK(kv.stats().num_free_blocks == 8);
  CHECK(kv.check_invariants().empty());
}

TEST_CASE("UnifiedKVCache moves with its mapping and its pressure source", "[kv_cache][unified]") {
  STATIC_REQUIRE(std::is_nothrow_move_constructible_v<UnifiedCache>);
  ManualMemoryPressureSource pressure;
  UnifiedCache original(small_shape, test_config(8), pressure);
  auto a = make_sequence(1, token_run(9));
  REQUIRE(original.allocate_slots(a.view(), 0, 9, {}));
  std::byte* values = original.layer(0).values;
  UnifiedCache moved(std::move(original));
  CHECK(moved.layer(0).values == values);
  CHECK(moved.block_table(1).size() == 3);
  pressure.set(0.01);
  CHECK(moved.admission_advice().pressure == MemoryPressure::critical);
  moved.free(1);
  CHECK(moved.check_invariants().empty());
}

TEST_CASE("UnifiedKVCache responds to pressure levels with hysteresis", "[kv_cache][unified][pressure]") {
  ManualMemoryPressureSource pressure;
  UnifiedCache kv(small_shape, test_config(32), pressure);

  // Four running sequences, and a finished one whose two full blocks stay cached.
  for (izwi::RequestId id = 1; id <= 4; ++id) {
    auto s = make_sequence(id, token_run(4, static_cast<izwi::TokenId>(1000 * id)));
    REQUIRE(kv.allocate_slots(s.view(), 0, 4, {}));
  }
  auto done = make_sequence(9, token_run(9));
  REQUIRE(kv.allocate_slots(done.view(), 0, 9, {}));
  kv.free(9);
  REQUIRE(kv.stats().num_cached_blocks == 2);

  SECTION("normal: no limits, cached blocks kept") {
    const izwi::AdmissionAdvice a = kv.admission_advice();
    CHECK(a.pressure == MemoryPressure::normal);
    CHECK(a.max_num_seqs == unlimited);
    CHECK(a.admit_new_requests);
    CHECK(kv.stats().num_cached_blocks == 2);
  }

  SECTION("warning evicts cached blocks and shrinks the batch; recovery needs the margin") {
    pressure.set(0.10);
    izwi::AdmissionAdvice a = kv.admission_advice();
    CHECK(a.pressure == MemoryPressure::warning);
    CHECK(kv.pressure() == MemoryPressure::warning);
    CHECK(a.max_num_seqs == 3);  // 3/4 of the 4 sequences holding blocks
    CHECK(a.admit_new_requests);
    CHECK(kv.stats().num_cached_blocks == 0);
    CHECK(kv.stats().evictions == 2);
    auto again = make_sequence(10, token_run(9));
    CHECK(kv.find_cached_prefix(again.view()).num_tokens == 0);
    CHECK(kv.check_invariants().empty());

    // Blocks cached while the warning lasts are evicted on the next call.
    auto later = make_sequence(11, token_run(9, 77));
    REQUIRE(kv.allocate_slots(later.view(), 0, 9, {}));
    kv.free(11);
    CHECK(kv.stats().num_cached_blocks == 2);
    kv.admission_advice();
    CHECK(kv.stats().num_cached_blocks == 0);

    pressure.set(0.17);  // above 15 %, below 15 % + 5 %: stays
    CHECK(kv.admission_advice().pressure == MemoryPressure::warning);
    pressure.set(0.25);
    a = kv.admission_advice();
    CHECK(a.pressure == MemoryPressure::normal);
    CHECK(a.max_num_seqs == unlimited);

    // With one sequence or none the batch never shrinks below one.
    for (izwi::RequestId id = 1; id <= 4; ++id) kv.free(id);
    pressure.set(0.10);
    CHECK(kv.admission_advice().max_num_seqs == 1);
  }

  SECTION("critical admits nothing new and holds the batch; recovery steps down through warning") {
    pressure.set(0.03);
    izwi::AdmissionAdvice a = kv.admission_advice();
    CHECK(a.pressure == MemoryPressure::critical);
    CHECK_FALSE(a.admit_new_requests);
    CHECK(a.max_num_seqs == 4);
    CHECK(kv.stats().num_cached_blocks == 0);

    pressure.set(0.08);  // past 5 % but not 10 %
    CHECK(kv.admission_advice().pressure == MemoryPressure::critical);
    pressure.set(0.12);
    a = kv.admission_advice();
    CHECK(a.pressure == MemoryPressure::warning);
    CHECK(a.admit_new_requests);
    pressure.set(0.30);
    CHECK(kv.admission_advice().pressure == MemoryPressure::normal);
  }

  SECTION("PSI alone raises the level") {
    pressure.set(0.9, 45.0);
    CHECK(kv.admission_advice().pressure == MemoryPressure::critical);
    pressure.set(0.9, 20.0);
    CHECK(kv.admission_advice().pressure == MemoryPressure::warning);
    pressure.set(0.9, 1.0);
    CHECK(kv.admission_advice().pressure == MemoryPressure::normal);
  }
}

TEST_CASE("UnifiedKVCache reads its source at most once per poll interval", "[kv_cache][unified][pressure]") {
  ManualMemoryPressureSource pressure;
  UnifiedKVCacheConfig c = test_config(8);
  c.poll_interval = std::chrono::hours(1);
  UnifiedCache kv(small_shape, c, pressure);
  CHECK(kv.admission_advice().pressure == MemoryPressure::normal);
  CHECK(pressure.reads() == 1);
  pressure.set(0.01);
  CHECK(kv.admission_advice().pressure == MemoryPressure::normal);  // not read again yet
  CHECK(pressure.reads() == 1);
  CHECK(kv.pressure_source().reads() == 1);  // the cache's copy shares the state
}

TEST_CASE("UnifiedKVCache gives pages of evicted and free blocks back to the system", "[kv_cache][unified][pressure]") {
  // One layer, one head, head_dim 1024, f32: a block's K (or V) is 16 KiB, whole pages.
  const izwi::KVCacheShape big{1, 1, 1024, izwi::DType::f32};
  const std::size_t row = big.row_elements();
  const auto fill = [&](UnifiedCache& kv, izwi::BlockId b, float value) {
    for (auto* base : {kv.layer(0).keys, kv.layer(0).values}) {
      auto* p = reinterpret_cast<float*>(base) + b * 4 * row;
      for (std::size_t i = 0; i < 4 * row; ++i) p[i] = value;
    }
  };
  const auto first_value = [&](UnifiedCache& kv, izwi::BlockId b) {
    return reinterpret_cast<const float*>(kv.layer(0).keys)[b * 4 * row];
  };

  SECTION("warning: cached free blocks") {
    ManualMemoryPressureSource pressure;
    UnifiedCache kv(big, test_config(8), pressure);
    auto a = make_sequence(1, token_run(8));
    REQUIRE(kv.allocate_slots(a.view(), 0, 8, {}));
    const izwi::BlockId cached = kv.block_table(1)[0];
    auto b = make_sequence(2, token_run(4, 500));
    REQUIRE(kv.allocate_slots(b.view(), 0, 4, {}));
    const izwi::BlockId in_use = kv.block_table(2)[0];
    fill(kv, cached, 3.0f);
    fill(kv, in_use, 5.0f);
    kv.free(1);
    pressure.set(0.10);
    kv.admission_advice();
    CHECK(kv.released_bytes() == 2 * 2 * 4 * row * sizeof(float));  // a's 2 blocks, K and V
    CHECK(first_value(kv, cached) == 0.0f);  // fresh zero page
    CHECK(first_value(kv, in_use) == 5.0f);  // untouched
  }

  SECTION("critical: every free block, once") {
    ManualMemoryPressureSource pressure;
    UnifiedCache kv(big, test_config(8, false), pressure);
    auto a = make_sequence(1, token_run(8));
    REQUIRE(kv.allocate_slots(a.view(), 0, 8, {}));
    const izwi::BlockId b0 = kv.block_table(1)[0];
    fill(kv, b0, 2.0f);
    kv.free(1);
    pressure.set(0.10);
    kv.admission_advice();
    CHECK(kv.released_bytes() == 0);  // nothing cached; warning keeps plain free blocks
    CHECK(first_value(kv, b0) == 2.0f);
    pressure.set(0.01);
    kv.admission_advice();
    const std::uint64_t released = kv.released_bytes();
    CHECK(released == 2 * 2 * 4 * row * sizeof(float));
    CHECK(first_value(kv, b0) == 0.0f);
    kv.admission_advice();
    CHECK(kv.released_bytes() == released);  // already released: not again
    CHECK(kv.check_invariants().empty());
  }
}

namespace {
/// Host memory that starts dirty (0xA5) and counts what it is asked to do,
/// as a GPU runtime's shared memory would (kv_cache/unified_memory.hpp).
class CountingMemory final : public izwi::UnifiedMemoryResource {
 public:
  std::byte* allocate(std::size_t bytes) override {
    std::byte* p = host_.allocate(bytes);
    std::memset(p, 0xA5, bytes);
    ++allocations;
    return p;
  }
  void deallocate(std::byte* memory, std::size_t bytes) noexcept override {
    host_.deallocate(memory, bytes);
    ++deallocations;
  }
  std::size_t release(std::byte* begin, std::size_t length) noexcept override {
    const std::size_t released = host_.release(begin, length);
    released_bytes += released;
    return released;
  }
  std::string description() const override { return "counting host memory"; }
  int allocations = 0, deallocations = 0;
  std::size_t released_bytes = 0;

 private:
  izwi::HostMappedMemory host_;
};
}  // namespace

TEST_CASE("UnifiedKVCache on another memory resource zeroes its null block and releases pages through it",
          "[kv_cache][unified][pressure]") {
  auto memory = std::make_shared<CountingMemory>();
  {
    ManualMemoryPressureSource pressure;
    // Blocks of 16 tokens x 256 floats: 16 KiB per array, so whole pages.
    const izwi::KVCacheShape shape{1, 4, 64, izwi::DType::f32};
    UnifiedKVCacheConfig config = test_config(8);
    config.memory = memory;
    izwi::UnifiedKVCache<ManualMemoryPressureSource, 16> kv(shape, config, pressure);
    CHECK(kv.memory_resource() == memory);
    CHECK(memory->allocations == 1);
    const izwi::KVLayerView layer = kv.layer(0);
    const std::size_t block_bytes = 16 * 4 * 64 * sizeof(float);
    CHECK(std::all_of(layer.keys, layer.keys + block_bytes, [](std::byte b) { return b == std::byte{0}; }));
    CHECK(std::all_of(layer.values, layer.values + block_bytes, [](std::byte b) { return b == std::byte{0}; }));
    CHECK(layer.keys[block_bytes] == std::byte{0xA5});  // the rest is left as the resource gave it

    auto done = make_sequence(1, token_run(40));
    REQUIRE(kv.allocate_slots(done.view(), 0, 40, {}));
    kv.free(1);  // two full blocks stay cached
    pressure.set(0.10);
    kv.admission_advice();
    CHECK(kv.stats().evictions == 2);
    CHECK(memory->released_bytes == kv.released_bytes());
    CHECK(memory->released_bytes >= 2 * 2 * block_bytes);  // K and V of both evicted blocks
  }
  CHECK(memory->deallocations == 1);
}

TEST_CASE("UnifiedKVCache copies a remembered partial block's rows, and drops them under pressure",
          "[kv_cache][unified][partial]") {
  ManualMemoryPressureSource pressure;
  UnifiedCache kv(small_shape, test_config(8), pressure);
  const std::size_t row = small_shape.row_elements();
  const auto first_key = [&](izwi::BlockId b) { return reinterpret_cast<float*>(kv.layer(1).keys) + b * 4 * row; };
  auto a = make_sequence(1, token_run(6));
  REQUIRE(kv.allocate_slots(a.view(), 0, 6, {}));
  const izwi::BlockId source = kv.block_table(1)[1];
  first_key(source)[0] = 42.0f;  // position 4, layer 1: what a's step wrote
  kv.free(1);

  auto b = make_sequence(2, token_run(7));
  const izwi::PrefixHit hit = kv.find_cached_prefix(b.view());
  CHECK(hit.num_tokens == 6);
  CHECK(hit.partial.rows == 2);
  REQUIRE(kv.allocate_slots(b.view(), 6, 1, hit));
  const izwi::BlockId own = kv.block_table(2)[1];
  CHECK(own != source);
  CHECK(first_key(own)[0] == 42.0f);
  kv.free(2);
  CHECK(kv.num_partial_blocks() == 2);

  pressure.set(0.10);  // warning: cached free blocks go, remembered partial ones with them
  kv.admission_advice();
  CHECK(kv.num_partial_blocks() == 0);
  auto c = make_sequence(3, token_run(7));
  CHECK(kv.find_cached_prefix(c.view()).num_tokens == 0);
  CHECK(kv.check_invariants().empty());
}
