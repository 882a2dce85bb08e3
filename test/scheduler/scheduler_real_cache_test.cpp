// The schedulers driven against the real caches: PagedKVCache (prefix caching
// on, so resumed and repeated prompts take the hit path) and UnifiedKVCache
// (memory-pressure advice from an injected source).

#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <vector>

#include "izwi/concepts/scheduler.hpp"
#include "izwi/kv_cache/paged.hpp"
#include "izwi/kv_cache/unified.hpp"
#include "izwi/scheduler/detail/token_budget_scheduler.hpp"
#include "izwi/scheduler/detail/waiting_queues.hpp"
#include "izwi/scheduler/fcfs.hpp"
#include "izwi/scheduler/playback_deadline.hpp"
#include "izwi/scheduler/priority.hpp"
#include "scheduler/scheduler_harness.hpp"

using izwi::FcfsScheduler;
using izwi::FinishReason;
using izwi::PriorityScheduler;
using izwi::RequestId;
using izwi::SchedulerConfig;
using izwi::StepPlan;
using izwi::test::Driver;
using izwi::test::make_request;
using izwi::test::small_config;

namespace {

using SmallPaged = izwi::PagedKVCache<4>;
using SmallUnified = izwi::UnifiedKVCache<izwi::ManualMemoryPressureSource, 4>;

constexpr izwi::KVCacheShape tiny_shape{1, 1, 1, izwi::DType::f32};

SmallPaged make_paged(std::size_t num_blocks) {
  izwi::PagedKVCacheConfig config;
  config.num_blocks = num_blocks;
  config.enable_prefix_caching = true;
  return SmallPaged(tiny_shape, config);
}

/// A prompt that shares its first `shared` tokens with every prompt of the same group.
izwi::Request grouped_request(RequestId id, int group, std::size_t shared, std::size_t length, std::uint32_t max_tokens,
                              double arrival, std::int32_t priority = 0) {
  izwi::Request r = make_request(id, length, max_tokens, arrival, priority);
  for (std::size_t i = 0; i < std::min(shared, length); ++i) r.prompt_tokens[i] = static_cast<izwi::TokenId>(group * 101 + i);
  return r;
}

template <class K>
std::size_t nonzero_ref_counts(const K& kv) {
  std::size_t n = 0;
  for (izwi::BlockId b = 1; b <= kv.stats().num_blocks; ++b) n += kv.ref_count(b) != 0;
  return n;
}

// The custom policy of docs/concepts/scheduler.md: FCFS admission, but the
// request with the most computed tokens gives way.
struct LongestVictim {
  std::size_t operator()(std::span<izwi::SequenceState* const> running) const noexcept {
    std::size_t v = 0;
    for (std::size_t i = 1; i < running.size(); ++i)
      if (running[i]->num_computed_tokens > running[v]->num_computed_tokens) v = i;
    return v;
  }
};
class LongestFirstOutScheduler
    : public izwi::detail::TokenBudgetScheduler<izwi::detail::FcfsWaitingQueue, LongestVictim> {
 public:
  using policy_category = izwi::scheduler_tag;
  using TokenBudgetScheduler::TokenBudgetScheduler;
};

}  // namespace

TEST_CASE("a custom victim rule on the shared loop (the docs' example)", "[scheduler][concept]") {
  STATIC_REQUIRE(izwi::SchedulerFor<LongestFirstOutScheduler, izwi::PagedKVCache<>>);
  STATIC_REQUIRE(izwi::SchedulerPolicy<LongestFirstOutScheduler>);
  izwi::ManualMemoryPressureSource pressure;
  izwi::UnifiedKVCacheConfig config;
  config.num_blocks = 64;
  config.poll_interval = std::chrono::nanoseconds(0);
  SmallUnified kv(tiny_shape, config, pressure);
  LongestFirstOutScheduler scheduler(small_config(64, 4));
  Driver driver(scheduler, kv);
  scheduler.add(make_request(1, 4, 30, 0.0));
  scheduler.add(make_request(2, 20, 30, 1.0));  // the longest: the victim
  scheduler.add(make_request(3, 4, 30, 2.0));
  scheduler.add(make_request(4, 4, 30, 3.0));
  driver.step();
  REQUIRE(scheduler.num_running() == 4);
  pressure.set(0.10);  // warning: keep 3 of 4
  CHECK(driver.step().preempted == std::vector<RequestId>{2});
}

TEST_CASE("schedulers satisfy SchedulerFor the real caches", "[scheduler][concept]") {
  STATIC_REQUIRE(izwi::SchedulerFor<FcfsScheduler, izwi::PagedKVCache<>>);
  STATIC_REQUIRE(izwi::SchedulerFor<PriorityScheduler, izwi::PagedKVCache<>>);
  STATIC_REQUIRE(izwi::SchedulerFor<FcfsScheduler, SmallUnified>);
  STATIC_REQUIRE(izwi::PressureAwareKVCache<SmallUnified>);
}

TEMPLATE_TEST_CASE("randomized against PagedKVCache: plans valid, cache invariants hold, every block returns",
                   "[scheduler][property][paged]", FcfsScheduler, PriorityScheduler, izwi::PlaybackDeadlineScheduler) {
  for (std::uint64_t seed : {11u, 12u, 13u}) {
    INFO("seed " << seed);
    std::mt19937_64 rng(seed);
    TestType scheduler(small_config(16 + rng() % 48, 1 + rng() % 6));
    SmallPaged kv = make_paged(10 + rng() % 30);
    Driver driver(scheduler, kv);
    RequestId next = 1;
    std::vector<RequestId> live;
    for (int step = 0; step < 300; ++step) {
      if (rng() % 3 == 0) {
        const RequestId id = next++;
        scheduler.add(grouped_request(id, static_cast<int>(rng() % 3), 12, 1 + rng() % 40, 1 + rng() % 20, step * 0.01,
                                      static_cast<std::int32_t>(rng() % 4)));
        live.push_back(id);
      }
      if (!live.empty() && rng() % 9 == 0) scheduler.finish(live[rng() % live.size()], FinishReason::abort, kv);
      driver.step();
      REQUIRE(driver.problem == "");
      REQUIRE(kv.check_invariants() == "");
      REQUIRE(scheduler.num_running() == kv.num_sequences());
    }
    driver.run(20000);
    REQUIRE(driver.problem == "");
    CHECK(scheduler.num_requests() == 0);
    CHECK(kv.check_invariants() == "");
    CHECK(kv.num_sequences() == 0);
    CHECK(kv.stats().num_used_blocks == 0);
    CHECK(nonzero_ref_counts(kv) == 0);
    CHECK(kv.stats().prefix_cache_hits > 0);
  }
}

TEST_CASE("a prefix-cache hit counts as computed tokens", "[scheduler][paged]") {
  FcfsScheduler scheduler(small_config(64, 4));
  SmallPaged kv = make_paged(32);
  Driver driver(scheduler, kv);
  scheduler.add(grouped_request(1, 0, 18, 18, 1, 0.0));
  driver.run();  // computes and caches blocks [0,4) ... [12,16)
  scheduler.add(grouped_request(2, 0, 18, 18, 1, 1.0));
  const StepPlan& plan = driver.step();
  REQUIRE(plan.sequences.size() == 1);
  // Four full blocks, and request 1's last block (positions 16, 17) copied
  // up to the last token, which is computed for its logits.
  CHECK(plan.sequences[0].num_computed_tokens == 17);
  CHECK(plan.sequences[0].num_tokens == 1);
  CHECK(plan.num_scheduled_tokens == 1);
  CHECK(driver.problem == "");
}

TEMPLATE_TEST_CASE("against PagedKVCache, a preempted and resumed request yields the undisturbed tokens",
                   "[scheduler][preemption][paged]", FcfsScheduler, PriorityScheduler, izwi::PlaybackDeadlineScheduler) {
  constexpr std::uint32_t out_len = 40;
  std::vector<izwi::TokenId> reference;
  {
    TestType scheduler(small_config(64, 8));
    SmallPaged kv = make_paged(256);
    Driver driver(scheduler, kv);
    scheduler.add(make_request(7, 13, out_len, 5.0, 3));
    driver.run();
    reference = driver.finished.at(7);
  }
  TestType scheduler(small_config(16, 4));
  SmallPaged kv = make_paged(14);
  Driver driver(scheduler, kv);
  scheduler.add(make_request(1, 10, 30, 0.0, 0));
  scheduler.add(make_request(2, 6, 35, 1.0, 0));
  scheduler.add(make_request(3, 9, 25, 2.0, 0));
  scheduler.add(make_request(7, 13, out_len, 5.0, 3));
  driver.run();
  REQUIRE(driver.problem == "");
  CHECK(std::find(driver.preempted.begin(), driver.preempted.end(), RequestId{7}) != driver.preempted.end());
  REQUIRE(driver.finished.count(7) == 1);
  CHECK(driver.finished[7] == reference);
  CHECK(kv.stats().num_used_blocks == 0);
  CHECK(nonzero_ref_counts(kv) == 0);
}

TEST_CASE("against PagedKVCache, a victim preempted after its step was planned leaves no key on unwritten blocks",
          "[scheduler][preemption][paged]") {
  // Four blocks of 4. The low-priority request L is served first (admission
  // order); its decode token, position 7, fills block 1, whose key is
  // registered at allocation. Then H, served second, needs a block: none is
  // free, L is the victim, and L's step never runs. Block 1 must not keep a
  // key for a row nobody wrote: H takes it as a plain free block.
  izwi::PriorityScheduler scheduler(small_config(64, 4));
  SmallPaged kv = make_paged(4);
  Driver driver(scheduler, kv);
  scheduler.add(grouped_request(1, 0, 6, 6, 10, 0.0, 5));
  driver.step();  // L's prompt: positions 0..5
  scheduler.add(grouped_request(2, 1, 8, 8, 10, 1.0, 0));
  driver.step();  // L's position 6; H's prompt: every block in use
  REQUIRE(driver.preempted.empty());
  driver.step();  // L's position 7 planned, then L preempted for H's position 8
  REQUIRE(driver.preempted == std::vector<RequestId>{1});
  CHECK(kv.stats().evictions == 0);  // block 1 held no key when H took it
  const izwi::SequenceState* victim = scheduler.find(1);
  REQUIRE(victim != nullptr);
  std::vector<izwi::TokenId> longer(victim->tokens.begin(), victim->tokens.end());
  longer.push_back(3);
  CHECK(kv.find_cached_prefix(izwi::SequenceView{99, longer, &victim->prefix_keys}).num_tokens == 4);  // block 0
  CHECK(driver.problem == "");
  CHECK(kv.check_invariants() == "");
}

TEST_CASE("against PagedKVCache, a request larger than the cache fails with error", "[scheduler][paged]") {
  FcfsScheduler scheduler(small_config(64, 4));
  SmallPaged kv = make_paged(4);
  Driver driver(scheduler, kv);
  scheduler.add(make_request(1, 17, 2, 0.0));
  scheduler.add(make_request(2, 5, 2, 1.0));
  driver.run(100);
  CHECK(driver.failed == std::vector<RequestId>{1});
  CHECK(driver.finished.count(2) == 1);
  CHECK(kv.stats().num_used_blocks == 0);
}

TEST_CASE("against UnifiedKVCache, memory pressure shrinks the batch and stops admission", "[scheduler][pressure]") {
  izwi::ManualMemoryPressureSource pressure;
  izwi::UnifiedKVCacheConfig config;
  config.num_blocks = 128;
  config.poll_interval = std::chrono::nanoseconds(0);
  SmallUnified kv(tiny_shape, config, pressure);
  FcfsScheduler scheduler(small_config(64, 8));
  Driver driver(scheduler, kv);
  for (RequestId id = 1; id <= 8; ++id) scheduler.add(make_request(id, 4, 60, static_cast<double>(id)));
  driver.step();
  REQUIRE(scheduler.num_running() == 8);

  pressure.set(0.10);  // warning: keep 3/4 of the 8 sequences holding blocks
  const StepPlan& warned = driver.step();
  CHECK(warned.preempted.size() == 2);
  CHECK(scheduler.num_running() == 6);
  CHECK(warned.sequences.size() == 6);

  pressure.set(0.01);  // critical: nothing new is admitted
  for (int i = 0; i < 3; ++i) {
    const StepPlan& plan = driver.step();
    for (const auto& s : plan.sequences) CHECK(s.num_computed_tokens > 0);  // only running ones
    CHECK(scheduler.num_running() <= 6);
  }
  pressure.set(1.0);  // normal again: the preempted come back
  driver.step();
  CHECK(scheduler.num_running() == 8);
  driver.run();
  CHECK(driver.finished.size() == 8);
  CHECK(kv.stats().num_used_blocks == 0);
  CHECK(driver.problem == "");
}
