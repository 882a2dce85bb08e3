#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "izwi/concepts/scheduler.hpp"
#include "izwi/scheduler/fcfs.hpp"
#include "izwi/scheduler/playback_deadline.hpp"
#include "izwi/scheduler/priority.hpp"
#include "scheduler/fixed_block_kv_cache.hpp"
#include "scheduler/scheduler_harness.hpp"

using izwi::FcfsScheduler;
using izwi::FinishReason;
using izwi::PriorityScheduler;
using izwi::RequestId;
using izwi::RequestStatus;
using izwi::SchedulerConfig;
using izwi::StepPlan;
using izwi::test::Driver;
using izwi::test::FixedBlockKVCache;
using izwi::test::small_config;
using izwi::test::make_request;
using izwi::test::PressureFakeKVCache;

namespace {

bool contains(const std::vector<RequestId>& v, RequestId id) { return std::find(v.begin(), v.end(), id) != v.end(); }

struct NotAScheduler {  // the right shape, but it does not opt in
  void add(izwi::Request&&);
};

}  // namespace

TEST_CASE("FcfsScheduler and PriorityScheduler satisfy the scheduler concept", "[scheduler][concept]") {
  STATIC_REQUIRE(izwi::SchedulerPolicy<FcfsScheduler>);
  STATIC_REQUIRE(izwi::SchedulerPolicy<PriorityScheduler>);
  STATIC_REQUIRE(izwi::SchedulerFor<FcfsScheduler, FixedBlockKVCache>);
  STATIC_REQUIRE(izwi::SchedulerFor<PriorityScheduler, PressureFakeKVCache>);
  STATIC_REQUIRE(izwi::PressureAwareKVCache<PressureFakeKVCache>);
  STATIC_REQUIRE_FALSE(izwi::PressureAwareKVCache<FixedBlockKVCache>);
  STATIC_REQUIRE_FALSE(izwi::SchedulerPolicy<NotAScheduler>);
}

TEST_CASE("SchedulerConfig::validate names the offending field", "[scheduler][config]") {
  SchedulerConfig ok;
  CHECK(ok.max_num_batched_tokens == 2048);
  CHECK(ok.max_num_seqs == 128);
  CHECK(ok.enable_chunked_prefill);
  CHECK(ok.long_prefill_token_threshold == 0);
  CHECK_NOTHROW(ok.validate());
  auto field_of = [](SchedulerConfig c) -> std::string {
    try {
      FcfsScheduler s(c);
    } catch (const izwi::invalid_argument& e) {
      return e.field();
    }
    return "";
  };
  SchedulerConfig c;
  c.max_num_batched_tokens = 0;
  CHECK(field_of(c) == "max_num_batched_tokens");
  c = {};
  c.max_num_seqs = 0;
  CHECK(field_of(c) == "max_num_seqs");
  c = {};
  c.priority_aging_per_second = -1;
  CHECK(field_of(c) == "priority_aging_per_second");
  c.priority_aging_per_second = std::numeric_limits<double>::infinity();
  CHECK(field_of(c) == "priority_aging_per_second");
}

TEST_CASE("add rejects id 0, a duplicate id and an empty prompt", "[scheduler]") {
  FcfsScheduler s(small_config());
  auto field_of = [&](izwi::Request r) -> std::string {
    try {
      s.add(std::move(r));
    } catch (const izwi::invalid_argument& e) {
      return e.field();
    }
    return "";
  };
  CHECK(field_of(make_request(0, 4, 1, 0)) == "id");
  CHECK(field_of(make_request(1, 4, 1, 0)).empty());
  CHECK(field_of(make_request(1, 4, 1, 0)) == "id");
  CHECK(field_of(make_request(2, 0, 1, 0)) == "prompt_tokens");
  CHECK(s.num_waiting() == 1);
  const izwi::SequenceState* st = s.find(1);
  REQUIRE(st != nullptr);
  CHECK(st->num_prompt_tokens == 4);
  CHECK(st->request.prompt_tokens.empty());
  CHECK(st->status == RequestStatus::waiting);
}

TEST_CASE("prefix-cache keys: root from salt and voice, audio from its content hash", "[scheduler]") {
  FcfsScheduler s(small_config());
  auto r1 = make_request(1, 4, 1, 0);
  s.add(std::move(r1));
  auto r2 = make_request(2, 4, 1, 0);
  r2.cache_salt = "a";
  r2.voice = "b";
  s.add(std::move(r2));
  auto r3 = make_request(3, 4, 1, 0);
  r3.cache_salt = "ab";
  s.add(std::move(r3));
  auto r4 = make_request(4, 4, 1, 0);
  auto audio = std::make_shared<izwi::AudioInput>();
  audio->samples = {0.5f, -0.5f};
  audio->content_hash = 1234;
  audio->placeholder_offset = 1;
  audio->placeholder_length = 2;
  r4.audio = audio;
  s.add(std::move(r4));
  CHECK(s.find(1)->prefix_keys.root == 0);
  CHECK(s.find(2)->prefix_keys.root != 0);
  CHECK(s.find(3)->prefix_keys.root != 0);
  CHECK(s.find(2)->prefix_keys.root != s.find(3)->prefix_keys.root);
  CHECK(s.find(4)->prefix_keys.audio_hash == 1234);
  CHECK(s.find(4)->prefix_keys.audio_offset == 1);
  CHECK(s.find(4)->prefix_keys.audio_length == 2);
  CHECK(s.find(1)->prefix_keys.audio_length == 0);
}

TEMPLATE_TEST_CASE("randomized: budget, max_num_seqs and the cache contract hold, every block returns",
                   "[scheduler][property]", FcfsScheduler, PriorityScheduler, izwi::PlaybackDeadlineScheduler) {
  for (std::uint64_t seed : {1u, 2u, 3u, 4u, 5u, 6u}) {
    INFO("seed " << seed);
    std::mt19937_64 rng(seed);
    SchedulerConfig config = small_config(24 + rng() % 64, 1 + rng() % 8);
    config.long_prefill_token_threshold = rng() % 3 == 0 ? 8 : 0;
    config.enable_chunked_prefill = rng() % 4 != 0;
    INFO("budget " << config.max_num_batched_tokens << " seqs " << config.max_num_seqs);
    TestType scheduler(config);
    FixedBlockKVCache kv(12 + rng() % 40, 4);
    Driver driver{scheduler, kv};
    RequestId next = 1;
    std::vector<RequestId> live;
    for (int step = 0; step < 400; ++step) {
      if (rng() % 3 == 0) {
        for (int k = 0, n = 1 + static_cast<int>(rng() % 4); k < n; ++k) {
          const RequestId id = next++;
          scheduler.add(make_request(id, 1 + rng() % 60, 1 + rng() % 30, step * 0.01,
                                     static_cast<std::int32_t>(rng() % 5)));
          live.push_back(id);
        }
      }
      if (!live.empty() && rng() % 7 == 0) {
        const RequestId id = live[rng() % live.size()];
        scheduler.finish(id, FinishReason::abort, kv);
      }
      if (!live.empty() && rng() % 11 == 0) scheduler.set_paused(live[rng() % live.size()], rng() % 2 == 0);
      if (rng() % 5 == 0)
        for (RequestId id : live) scheduler.set_paused(id, false);
      driver.step();
      REQUIRE(driver.problem == "");
      REQUIRE(kv.contract_violation() == "");
      REQUIRE(scheduler.num_running() <= config.max_num_seqs);
      REQUIRE(scheduler.num_running() == kv.num_sequences());
      REQUIRE(scheduler.num_waiting() + scheduler.num_running() == scheduler.num_requests());
    }
    for (RequestId id : live) scheduler.set_paused(id, false);
    driver.run(20000);
    REQUIRE(driver.problem == "");
    CHECK(scheduler.num_requests() == 0);
    CHECK(kv.num_used_blocks() == 0);
    CHECK(kv.num_sequences() == 0);
    CHECK(driver.finished.size() + driver.failed.size() > 0);
  }
}

TEST_CASE("FCFS admits in arrival order, whatever the order of add()", "[scheduler][fcfs]") {
  FcfsScheduler scheduler(small_config(64, 1));
  FixedBlockKVCache kv(64, 4);
  Driver driver{scheduler, kv};
  const std::vector<RequestId> add_order{5, 2, 4, 1, 3};
  for (RequestId id : add_order) scheduler.add(make_request(id, 6, 3, /*arrival*/ static_cast<double>(10 - id)));
  driver.run();
  CHECK(driver.first_scheduled == std::vector<RequestId>{5, 4, 3, 2, 1});
  CHECK(driver.finished.size() == 5);
}

TEST_CASE("Priority serves lower values first, then earlier arrivals", "[scheduler][priority]") {
  SchedulerConfig config = small_config(64, 1);
  config.priority_aging_per_second = 0.0;
  PriorityScheduler scheduler(config);
  FixedBlockKVCache kv(64, 4);
  Driver driver{scheduler, kv};
  scheduler.add(make_request(1, 6, 2, 0.0, 5));
  scheduler.add(make_request(2, 6, 2, 1.0, 1));
  scheduler.add(make_request(3, 6, 2, 2.0, 1));
  scheduler.add(make_request(4, 6, 2, 3.0, -3));
  scheduler.add(make_request(5, 6, 2, 0.5, 5));
  driver.run();
  CHECK(driver.first_scheduled == std::vector<RequestId>{4, 2, 3, 1, 5});
}

TEST_CASE("Priority aging: a low-priority request beats a stream of later high-priority arrivals", "[scheduler][priority]") {
  // One request at a time; each round a fresh priority-0 request arrives one
  // (simulated) second after the last. The priority-10 request, aged at rate
  // 1/s, overtakes once the newcomers arrive more than 10 s after it.
  auto run_rounds = [](double rate) {
    SchedulerConfig config = small_config(64, 1);
    config.priority_aging_per_second = rate;
    PriorityScheduler scheduler(config);
    FixedBlockKVCache kv(64, 4);
    Driver driver{scheduler, kv};
    scheduler.add(make_request(1000, 4, 1, 0.0, 10));
    scheduler.add(make_request(1, 4, 1, 0.5, 0));
    for (RequestId round = 1; round <= 30; ++round) {
      scheduler.add(make_request(round + 1, 4, 1, static_cast<double>(round) + 0.5, 0));
      driver.step();  // one step finishes one request (prompt + 1 token)
      if (driver.finished.count(1000)) return static_cast<int>(round);
    }
    return -1;
  };
  const int served_at = run_rounds(1.0);
  CHECK(served_at >= 10);
  CHECK(served_at <= 12);
  CHECK(run_rounds(0.0) == -1);  // without aging it starves
}

TEST_CASE("chunked prefill splits a long prompt and samples only at its end", "[scheduler]") {
  SECTION("budget-sized chunks") {
    FcfsScheduler scheduler(small_config(32, 4));
    FixedBlockKVCache kv(64, 4);
    Driver driver{scheduler, kv};
    scheduler.add(make_request(1, 100, 2, 0));
    std::vector<std::size_t> starts, sizes;
    std::vector<bool> samples;
    for (int i = 0; i < 4; ++i) {
      const StepPlan& plan = driver.step();
      REQUIRE(plan.sequences.size() == 1);
      starts.push_back(plan.sequences[0].num_computed_tokens);
      sizes.push_back(plan.sequences[0].num_tokens);
      samples.push_back(plan.sequences[0].samples);
      CHECK(plan.sequences[0].is_prefill());
    }
    CHECK(starts == std::vector<std::size_t>{0, 32, 64, 96});
    CHECK(sizes == std::vector<std::size_t>{32, 32, 32, 4});
    CHECK(samples == std::vector<bool>{false, false, false, true});
    CHECK(scheduler.find(1)->num_output_tokens() == 1);
    const StepPlan& decode = driver.step();
    CHECK(decode.sequences.at(0).num_tokens == 1);
    CHECK(decode.sequences.at(0).samples);
    CHECK(driver.finished.count(1) == 1);
  }
  SECTION("long_prefill_token_threshold caps a chunk, leaving budget for others") {
    SchedulerConfig config = small_config(32, 4);
    config.long_prefill_token_threshold = 10;
    FcfsScheduler scheduler(config);
    FixedBlockKVCache kv(64, 4);
    Driver driver{scheduler, kv};
    scheduler.add(make_request(1, 25, 1, 0));
    scheduler.add(make_request(2, 25, 1, 1));
    const StepPlan& plan = driver.step();
    REQUIRE(plan.sequences.size() == 2);
    CHECK(plan.sequences[0].num_tokens == 10);
    CHECK(plan.sequences[1].num_tokens == 10);
    CHECK(plan.num_scheduled_tokens == 20);
  }
  SECTION("without chunked prefill a prompt is admitted whole or not at all") {
    SchedulerConfig config = small_config(32, 4);
    config.enable_chunked_prefill = false;
    FcfsScheduler scheduler(config);
    FixedBlockKVCache kv(64, 4);
    Driver driver{scheduler, kv};
    scheduler.add(make_request(1, 20, 3, 0));
    scheduler.add(make_request(2, 20, 3, 1));  // does not fit beside 1: waits
    scheduler.add(make_request(3, 40, 3, 2));  // never fits the budget: fails
    const StepPlan& first = driver.step();
    REQUIRE(first.sequences.size() == 1);
    CHECK(first.sequences[0].num_tokens == 20);
    const StepPlan& second = driver.step();  // 1 decodes; 2 fits now (1 + 20 <= 32)
    REQUIRE(second.sequences.size() == 2);
    CHECK(second.sequences[1].id == 2);
    CHECK(second.sequences[1].num_tokens == 20);
    driver.run();
    CHECK(driver.failed == std::vector<RequestId>{3});
    CHECK(driver.finished.size() == 2);
  }
}

TEST_CASE("preemption: no admission in that step, the victim resumes ahead of later arrivals", "[scheduler][preemption]") {
  // 4 blocks of 4 tokens. A and B (4-token prompts) each need a second block at
  // token 5 and a third at token 9: the cache runs out and B, the newest, gives way.
  FcfsScheduler scheduler(small_config(64, 2));
  FixedBlockKVCache kv(4, 4);
  Driver driver{scheduler, kv};
  scheduler.add(make_request(1, 4, 8, 0.0));
  scheduler.add(make_request(2, 4, 8, 1.0));
  scheduler.add(make_request(3, 4, 8, 2.0));  // later arrival, waits behind both
  std::size_t preempt_step = 0;
  for (int i = 0; i < 30 && preempt_step == 0; ++i) {
    const StepPlan& plan = driver.step();
    REQUIRE(driver.problem == "");
    if (!plan.preempted.empty()) {
      preempt_step = driver.steps;
      CHECK(plan.preempted == std::vector<RequestId>{2});
      REQUIRE(plan.sequences.size() == 1);
      CHECK(plan.sequences[0].id == 1);  // and nobody admitted although a seat is free
      CHECK(scheduler.num_running() == 1);
      CHECK(scheduler.find(2)->status == RequestStatus::preempted);
      CHECK(scheduler.find(2)->num_computed_tokens == 0);
      CHECK(scheduler.num_preemptions() == 1);
    }
  }
  REQUIRE(preempt_step > 0);
  // Once there is room again, 2 is admitted first (recomputing its prompt and
  // output in one chunk), not 3, which arrived later.
  const izwi::ScheduledSequence* resumed = nullptr;
  for (int i = 0; i < 30 && resumed == nullptr; ++i) {
    const StepPlan& plan = driver.step();
    for (const auto& s : plan.sequences)
      if (s.id != 1 && s.num_computed_tokens == 0 && resumed == nullptr) resumed = &s;
  }
  REQUIRE(resumed != nullptr);
  CHECK(resumed->id == 2);
  CHECK(resumed->num_tokens > 4);  // prompt plus the output so far
  CHECK(resumed->samples);
  driver.run();
  CHECK(driver.finished.size() == 3);
  // Admission order: 1, 2, (2 preempted) then 2 again before 3.
  CHECK(driver.first_scheduled == std::vector<RequestId>{1, 2, 3});
  CHECK(kv.num_used_blocks() == 0);
}

TEMPLATE_TEST_CASE("a preempted and resumed request produces exactly the tokens of an undisturbed one",
                   "[scheduler][preemption]", FcfsScheduler, PriorityScheduler, izwi::PlaybackDeadlineScheduler) {
  constexpr std::uint32_t out_len = 40;
  // Undisturbed: alone, plenty of blocks.
  std::vector<izwi::TokenId> reference;
  {
    TestType scheduler(small_config(64, 8));
    FixedBlockKVCache kv(256, 4);
    Driver driver{scheduler, kv};
    scheduler.add(make_request(7, 13, out_len, 5.0, 3));
    driver.run();
    REQUIRE(driver.finished.count(7) == 1);
    reference = driver.finished[7];
    REQUIRE(reference.size() == out_len);
  }
  // Disturbed: a tight cache, older and higher-priority requests around it, so
  // request 7 (newest, worst priority) is the victim again and again.
  TestType scheduler(small_config(16, 4));
  FixedBlockKVCache kv(14, 4);
  Driver driver{scheduler, kv};
  scheduler.add(make_request(1, 10, 30, 0.0, 0));
  scheduler.add(make_request(2, 6, 35, 1.0, 0));
  scheduler.add(make_request(3, 9, 25, 2.0, 0));
  scheduler.add(make_request(7, 13, out_len, 5.0, 3));
  driver.run();
  REQUIRE(driver.problem == "");
  CHECK(contains(driver.preempted, 7));
  REQUIRE(driver.finished.count(7) == 1);
  CHECK(driver.finished[7] == reference);
  CHECK(driver.finished.size() == 4);
  CHECK(kv.num_used_blocks() == 0);
}

TEST_CASE("finish (abort) works in every state and frees everything", "[scheduler][abort]") {
  FcfsScheduler scheduler(small_config(16, 3));
  FixedBlockKVCache kv(8, 4);
  Driver driver{scheduler, kv};
  scheduler.add(make_request(1, 30, 10, 0.0));  // long prefill: running mid-prompt
  scheduler.add(make_request(2, 2, 10, 1.0));
  scheduler.add(make_request(3, 2, 10, 2.0));
  scheduler.add(make_request(4, 2, 10, 3.0));   // waiting (max_num_seqs 3)
  scheduler.add(make_request(5, 2, 10, 4.0));   // waiting, then paused
  driver.step();
  REQUIRE(scheduler.find(1)->status == RequestStatus::running);
  CHECK(scheduler.find(1)->num_computed_tokens == 16);  // mid-prompt
  CHECK(scheduler.find(4)->status == RequestStatus::waiting);
  CHECK(kv.num_used_blocks() > 0);

  SECTION("waiting") { CHECK(scheduler.finish(4, FinishReason::abort, kv)); }
  SECTION("paused while waiting") {
    scheduler.set_paused(5, true);
    CHECK(scheduler.finish(5, FinishReason::abort, kv));
  }
  SECTION("running, mid-prefill") { CHECK(scheduler.finish(1, FinishReason::abort, kv)); }
  SECTION("running and paused") {
    scheduler.set_paused(2, true);
    const StepPlan& plan = driver.step();
    for (const auto& s : plan.sequences) CHECK(s.id != 2);
    CHECK(scheduler.finish(2, FinishReason::abort, kv));
  }
  SECTION("between schedule() and update()") {
    const StepPlan& plan = scheduler.schedule(kv);
    REQUIRE(!plan.empty());
    izwi::StepResult result;
    izwi::test::fake_execute(plan, result);
    CHECK(scheduler.finish(plan.sequences[0].id, FinishReason::abort, kv));
    scheduler.update(result, kv);  // skips the finished one
  }
  SECTION("preempted") {
    // Fill the cache until someone is preempted, then abort the victim.
    RequestId victim = 0;
    for (int i = 0; i < 50 && victim == 0; ++i) {
      const StepPlan& plan = driver.step();
      if (!plan.preempted.empty()) victim = plan.preempted[0];
    }
    REQUIRE(victim != 0);
    REQUIRE(scheduler.find(victim) != nullptr);
    CHECK(scheduler.find(victim)->status == RequestStatus::preempted);
    CHECK(scheduler.finish(victim, FinishReason::abort, kv));
  }
  const std::size_t live = scheduler.num_requests();
  CHECK(scheduler.num_waiting() + scheduler.num_running() == live);
  // Abort everything that is left, in whatever state: the cache ends empty.
  for (RequestId id = 1; id <= 5; ++id) scheduler.finish(id, FinishReason::abort, kv);
  CHECK_FALSE(scheduler.finish(1, FinishReason::abort, kv));  // unknown now
  CHECK(scheduler.num_requests() == 0);
  CHECK(scheduler.num_waiting() == 0);
  CHECK(scheduler.num_running() == 0);
  CHECK(kv.num_used_blocks() == 0);
  CHECK(kv.num_sequences() == 0);
  CHECK(scheduler.schedule(kv).empty());
  CHECK(kv.contract_violation() == "");
}

TEST_CASE("a paused waiting request keeps its place", "[scheduler]") {
  FcfsScheduler scheduler(small_config(64, 1));
  FixedBlockKVCache kv(64, 4);
  Driver driver{scheduler, kv};
  scheduler.add(make_request(1, 4, 2, 0.0));
  scheduler.add(make_request(2, 4, 2, 1.0));
  scheduler.add(make_request(3, 4, 2, 2.0));
  scheduler.set_paused(1, true);
  driver.step();  // 1 is paused: 2 goes first
  CHECK(driver.first_scheduled == std::vector<RequestId>{2});
  scheduler.set_paused(1, false);
  driver.run();
  CHECK(driver.first_scheduled == std::vector<RequestId>{2, 1, 3});
}

TEST_CASE("a request that can never fit fails with error instead of blocking", "[scheduler]") {
  SECTION("prompt larger than the whole cache") {
    FcfsScheduler scheduler(small_config(64, 4));
    FixedBlockKVCache kv(4, 4);  // 16 tokens in all
    Driver driver{scheduler, kv};
    scheduler.add(make_request(1, 17, 2, 0.0));
    scheduler.add(make_request(2, 5, 2, 1.0));
    const StepPlan& plan = driver.step();
    CHECK(plan.failed == std::vector<RequestId>{1});
    REQUIRE(plan.sequences.size() == 1);  // and the next request is admitted at once
    CHECK(plan.sequences[0].id == 2);
    CHECK(scheduler.find(1) == nullptr);
    driver.run();
    CHECK(driver.finished.count(2) == 1);
    CHECK(kv.num_used_blocks() == 0);
  }
  SECTION("decoding past the whole cache") {
    FcfsScheduler scheduler(small_config(64, 4));
    FixedBlockKVCache kv(4, 4);
    Driver driver{scheduler, kv};
    scheduler.add(make_request(1, 14, 10, 0.0));  // needs a 5th block at token 17
    driver.run(100);
    CHECK(driver.failed == std::vector<RequestId>{1});
    CHECK(driver.finished.empty());
    CHECK(scheduler.num_requests() == 0);
    CHECK(kv.num_used_blocks() == 0);
  }
}

TEST_CASE("memory-pressure advice is obeyed", "[scheduler][pressure]") {
  FcfsScheduler scheduler(small_config(64, 8));
  PressureFakeKVCache kv(64, 4);
  Driver driver{scheduler, kv};
  for (RequestId id = 1; id <= 6; ++id) scheduler.add(make_request(id, 4, 50, static_cast<double>(id)));
  kv.advice.max_num_seqs = 4;
  const StepPlan& first = driver.step();
  CHECK(kv.advice_calls == 1);
  CHECK(first.sequences.size() == 4);
  CHECK(scheduler.num_running() == 4);

  // Warning: shrink to 2 — the two newest admissions are preempted, none admitted.
  kv.advice = {izwi::MemoryPressure::warning, 2, true};
  const StepPlan& shrink = driver.step();
  CHECK(shrink.preempted == std::vector<RequestId>{4, 3});
  CHECK(shrink.sequences.size() == 2);
  CHECK(scheduler.num_running() == 2);
  CHECK(scheduler.num_waiting() == 4);

  // Critical: running requests go on, nothing new is admitted.
  kv.advice = {izwi::MemoryPressure::critical, 8, false};
  for (int i = 0; i < 3; ++i) {
    const StepPlan& plan = driver.step();
    CHECK(plan.sequences.size() == 2);
    CHECK(scheduler.num_running() == 2);
  }
  // Normal again: the preempted ones come back first (earlier arrivals).
  kv.advice = {};
  const StepPlan& back = driver.step();
  REQUIRE(back.sequences.size() == 6);
  CHECK(back.sequences[2].id == 3);
  CHECK(back.sequences[3].id == 4);
  driver.run();
  CHECK(driver.finished.size() == 6);
  CHECK(kv.num_used_blocks() == 0);
}

TEST_CASE("priority victim rule: worst priority, then latest arrival", "[scheduler][priority]") {
  SchedulerConfig config = small_config(64, 3);
  config.priority_aging_per_second = 0;
  PriorityScheduler scheduler(config);
  PressureFakeKVCache kv(64, 4);
  Driver driver{scheduler, kv};
  scheduler.add(make_request(1, 4, 30, 0.0, 5));
  scheduler.add(make_request(2, 4, 30, 1.0, 0));
  scheduler.add(make_request(3, 4, 30, 2.0, 5));
  driver.step();
  REQUIRE(scheduler.num_running() == 3);
  kv.advice.max_num_seqs = 2;
  CHECK(driver.step().preempted == std::vector<RequestId>{3});  // priority 5, arrived last
  kv.advice.max_num_seqs = 1;
  CHECK(driver.step().preempted == std::vector<RequestId>{1});
  CHECK(scheduler.running()[0]->id() == 2);
}

TEST_CASE("unseeded requests draw their generator from the scheduler's seed", "[scheduler]") {
  auto first_output = [](std::uint64_t scheduler_seed) {
    SchedulerConfig config = small_config();
    config.seed = scheduler_seed;
    FcfsScheduler scheduler(config);
    FixedBlockKVCache kv(64, 4);
    Driver driver{scheduler, kv};
    auto r = make_request(1, 4, 3, 0.0);
    r.sampling.seed.reset();
    scheduler.add(std::move(r));
    driver.run();
    return driver.finished.at(1);
  };
  CHECK(first_output(9) == first_output(9));
  CHECK(first_output(9) != first_output(10));
}
