// PlaybackDeadlineScheduler (docs/concepts/playback_deadline.md): the order by
// delivered audio, sitting out above the horizon, requests without audio, the
// victim rule, no starvation, no leaked blocks, and the simulated comparison
// with FCFS under overload (deterministic: simulated time, no clock).

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "izwi/concepts/scheduler.hpp"
#include "izwi/scheduler/fcfs.hpp"
#include "izwi/scheduler/playback_deadline.hpp"
#include "scheduler/fixed_block_kv_cache.hpp"
#include "scheduler/playback_simulation.hpp"
#include "scheduler/scheduler_harness.hpp"

using izwi::FinishReason;
using izwi::ManualTimeSource;
using izwi::RequestId;
using izwi::SchedulerConfig;
using izwi::StepPlan;
using izwi::StepResult;
using izwi::test::at_seconds;
using izwi::test::FixedBlockKVCache;
using izwi::test::PressureFakeKVCache;

namespace {

using SimScheduler = izwi::BasicPlaybackDeadlineScheduler<ManualTimeSource>;
constexpr std::uint32_t rate = 24000;

struct NowAsDouble {  // the wrong return type for a time source
  double now() const { return 0.0; }
};

SchedulerConfig config(std::size_t budget = 64, std::size_t max_seqs = 8) {
  SchedulerConfig c;
  c.max_num_batched_tokens = budget;
  c.max_num_seqs = max_seqs;
  c.seed = 1;
  return c;  // horizon 2 s, low water 0.1 s, first audio due 1 s after arrival
}

izwi::Request speech(RequestId id, double arrival, std::size_t prompt = 4, std::uint32_t max_tokens = 1000) {
  izwi::Request r = izwi::test::make_request(id, prompt, max_tokens, arrival);
  r.task = izwi::Task::tts;
  return r;
}

/// A scheduler on simulated time with a cache, stepped by hand: schedule at t,
/// then deliver the given seconds of audio to each sampling sequence at t2.
struct Rig {
  explicit Rig(SchedulerConfig c = config(), std::size_t blocks = 64, std::size_t block_size = 16)
      : scheduler(c), kv(blocks, block_size) {}
  SimScheduler scheduler;
  PressureFakeKVCache kv;  // advice "normal" unless a test sets it
  StepResult result;

  const StepPlan& schedule_at(double t) {
    scheduler.time_source().set(at_seconds(t));
    return scheduler.schedule(kv);
  }
  void deliver_at(double t, const std::map<RequestId, double>& seconds) {
    result.clear();
    result.audio_sample_rate = rate;
    for (const izwi::ScheduledSequence& seq : scheduler.last_plan().sequences) {
      if (!seq.samples) continue;
      izwi::SequenceOutput out{.id = seq.id, .token = 7};
      if (const auto it = seconds.find(seq.id); it != seconds.end()) {
        out.audio_begin = static_cast<std::uint32_t>(result.audio.size());
        out.audio_count = static_cast<std::uint32_t>(it->second * rate);
        result.audio.resize(result.audio.size() + out.audio_count);
      }
      result.outputs.push_back(out);
    }
    scheduler.time_source().set(at_seconds(t));
    scheduler.update(result, kv);
  }
};

std::vector<RequestId> ids_of(const StepPlan& plan) {
  std::vector<RequestId> ids;
  for (const auto& s : plan.sequences) ids.push_back(s.id);
  return ids;
}

}  // namespace

TEST_CASE("PlaybackDeadlineScheduler satisfies the scheduler concept, and a time source must return a TimePoint",
          "[scheduler][playback][concept]") {
  STATIC_REQUIRE(izwi::SchedulerPolicy<izwi::PlaybackDeadlineScheduler>);
  STATIC_REQUIRE(izwi::SchedulerPolicy<SimScheduler>);
  STATIC_REQUIRE(izwi::SchedulerFor<SimScheduler, FixedBlockKVCache>);
  STATIC_REQUIRE(izwi::SchedulerFor<izwi::PlaybackDeadlineScheduler, PressureFakeKVCache>);
  STATIC_REQUIRE(izwi::TimeSource<izwi::SteadyTimeSource>);
  STATIC_REQUIRE(izwi::TimeSource<ManualTimeSource>);
  STATIC_REQUIRE_FALSE(izwi::TimeSource<int>);
  STATIC_REQUIRE_FALSE(izwi::TimeSource<NowAsDouble>);
  // The steady clock costs no bytes beyond the loop's own state.
  STATIC_REQUIRE(std::is_empty_v<izwi::SteadyTimeSource>);
}

TEST_CASE("PlaybackDeadlineScheduler: the playback knobs are validated by name", "[scheduler][playback][config]") {
  auto field_of = [](SchedulerConfig c) -> std::string {
    try {
      izwi::PlaybackDeadlineScheduler s(c);
    } catch (const izwi::invalid_argument& e) {
      return e.field();
    }
    return "";
  };
  SchedulerConfig c;
  CHECK(field_of(c).empty());
  c.playback_first_audio_seconds = -1;
  CHECK(field_of(c) == "playback_first_audio_seconds");
  c = {};
  c.playback_horizon_seconds = 0;
  CHECK(field_of(c) == "playback_horizon_seconds");
  c.playback_horizon_seconds = std::numeric_limits<double>::quiet_NaN();
  CHECK(field_of(c) == "playback_horizon_seconds");
  c = {};
  c.playback_low_water_seconds = c.playback_horizon_seconds;
  CHECK(field_of(c) == "playback_low_water_seconds");
  c = {};
  CHECK(c.playback_displace_seconds == 0.0);  // seat swapping is off by default
  c.playback_displace_seconds = -0.5;
  CHECK(field_of(c) == "playback_displace_seconds");
}

TEST_CASE("PlaybackDeadlineScheduler serves the least buffered stream first", "[scheduler][playback]") {
  Rig rig(config(/*budget=*/64));
  for (RequestId id : {1, 2, 3}) rig.scheduler.add(speech(id, 0.0));
  REQUIRE(ids_of(rig.schedule_at(0.0)) == std::vector<RequestId>{1, 2, 3});  // all due at 1.0: admission order
  rig.deliver_at(0.1, {{1, 0.5}, {2, 1.5}, {3, 1.0}});
  const izwi::SequenceState* two = rig.scheduler.find(2);
  REQUIRE(two != nullptr);
  CHECK(two->playback.started);
  CHECK(two->playback.delivered_seconds == Approx(1.5));
  CHECK(two->playback.deadline == at_seconds(0.1) + izwi::detail::clock_duration(1.5));

  // Runs dry at 0.6, 1.1 and 1.6: served in that order.
  CHECK(ids_of(rig.schedule_at(0.2)) == std::vector<RequestId>{1, 3, 2});
}

TEST_CASE("PlaybackDeadlineScheduler: a stream above the horizon sits out while another listener is short",
          "[scheduler][playback]") {
  Rig rig;
  rig.scheduler.add(speech(1, 0.0));
  rig.scheduler.add(speech(2, 0.0));
  rig.schedule_at(0.0);
  rig.deliver_at(0.1, {{1, 3.0}});  // 1 is 3 s ahead; 2 has not been heard
  CHECK(ids_of(rig.schedule_at(0.2)) == std::vector<RequestId>{2});
  rig.deliver_at(0.3, {{2, 0.05}});  // 2 has 0.05 s (dry at 0.35): below the 0.1 s low-water mark
  CHECK(ids_of(rig.schedule_at(0.3)) == std::vector<RequestId>{2});
  rig.deliver_at(0.33, {{2, 1.0}});  // dry at 1.35: nobody is short, so everyone is served
  CHECK(ids_of(rig.schedule_at(0.4)) == std::vector<RequestId>{2, 1});
  rig.deliver_at(0.5, {});
  // 2 runs dry at 1.35; 1 at 3.1, within the horizon from 1.2 on.
  CHECK(ids_of(rig.schedule_at(1.3)) == std::vector<RequestId>{2, 1});
  rig.deliver_at(1.4, {});
  const izwi::SequenceState* two = rig.scheduler.find(2);
  REQUIRE(two != nullptr);
  CHECK(two->playback.num_underruns == 0);

  // 2 now short again (dry at 1.35 < 1.5), 1 at 3.1 is within the horizon at 1.5: both served, 2 first.
  CHECK(ids_of(rig.schedule_at(1.5)) == std::vector<RequestId>{2, 1});
  rig.deliver_at(1.6, {{2, 0.5}});  // delivered 0.25 s after running dry: one underrun
  CHECK(two->playback.num_underruns == 1);
  CHECK(two->playback.underrun_seconds == Approx(0.25).margin(1e-6));

  // Alone, a stream far ahead is served anyway: the machine would otherwise idle.
  rig.scheduler.finish(2, FinishReason::stop, rig.kv);
  rig.schedule_at(1.7);
  rig.deliver_at(1.8, {{1, 5.0}});
  CHECK(ids_of(rig.schedule_at(1.9)) == std::vector<RequestId>{1});
}

TEST_CASE("PlaybackDeadlineScheduler: a paused stream does not make others sit out", "[scheduler][playback]") {
  Rig rig;
  rig.scheduler.add(speech(1, 0.0));
  rig.scheduler.add(speech(2, 0.0));
  rig.schedule_at(0.0);
  rig.deliver_at(0.1, {{1, 3.0}});  // 1 far ahead, 2 not heard yet
  rig.scheduler.set_paused(2, true);  // 2's client stopped reading
  CHECK(ids_of(rig.schedule_at(0.2)) == std::vector<RequestId>{1});
  rig.deliver_at(0.3, {});
  rig.scheduler.set_paused(2, false);
  CHECK(ids_of(rig.schedule_at(0.4)) == std::vector<RequestId>{2});
  rig.deliver_at(0.5, {});
}

TEST_CASE("PlaybackDeadlineScheduler serves requests without audio every step", "[scheduler][playback]") {
  Rig rig;
  rig.scheduler.add(speech(1, 0.0));
  rig.scheduler.add(izwi::test::make_request(2, 4, 100, 0.0));  // a text completion
  rig.scheduler.add(speech(3, 0.0));
  rig.schedule_at(0.0);
  rig.deliver_at(0.1, {{1, 5.0}, {3, 0.05}});
  for (double t = 0.2; t < 2.0; t += 0.1) {
    const std::vector<RequestId> ids = ids_of(rig.schedule_at(t));
    // The text request and the short stream every step; the stream 5 s ahead sits out.
    CHECK(std::find(ids.begin(), ids.end(), 2) != ids.end());
    CHECK(std::find(ids.begin(), ids.end(), 1) == ids.end());
    rig.deliver_at(t + 0.05, {{3, 0.01}});
  }
  // A text request is never the victim before a stream with audio in hand:
  // its deadline (arrival + 1 s) is in the past, the stream's in the future.
  const izwi::SequenceState* text = rig.scheduler.find(2);
  REQUIRE(text != nullptr);
  CHECK_FALSE(text->playback.started);
  CHECK(text->playback.deadline == at_seconds(1.0));
}

TEST_CASE("PlaybackDeadlineScheduler preempts the most buffered stream and readmits by deadline",
          "[scheduler][playback]") {
  // Four blocks of four slots: after prefill each stream fills one block, one
  // is free, and the next token of each needs a second.
  Rig rig(config(64, 8), /*blocks=*/4, /*block_size=*/4);
  for (RequestId id : {1, 2, 3}) rig.scheduler.add(speech(id, 0.0, /*prompt=*/4, /*max_tokens=*/8));
  REQUIRE(rig.schedule_at(0.0).sequences.size() == 3);
  rig.deliver_at(0.1, {{1, 0.3}, {2, 1.0}, {3, 0.5}});
  const StepPlan& plan = rig.schedule_at(0.2);
  // 1 (dry at 0.4) takes the free block; 3 (dry at 0.6) needs one, and 2
  // (dry at 1.1), with the most audio in hand, gives way.
  CHECK(std::vector<RequestId>(plan.preempted.begin(), plan.preempted.end()) == std::vector<RequestId>{2});
  CHECK(ids_of(plan) == std::vector<RequestId>{1, 3});
  CHECK(rig.kv.contract_violation().empty());
  const std::vector<RequestId> preempted(plan.preempted.begin(), plan.preempted.end());
  const izwi::SequenceState* two = rig.scheduler.find(2);
  REQUIRE(two != nullptr);
  CHECK(two->status == izwi::RequestStatus::preempted);
  // It waits under the time its listener runs dry (1.1), which is fixed while it waits.
  CHECK(two->playback.deadline == at_seconds(0.1) + izwi::detail::clock_duration(1.0));

  // Run everything to the end with small deliveries: all finish, nothing leaks.
  rig.deliver_at(0.25, {});
  std::size_t steps = 0;
  double t = 0.3;
  while (rig.scheduler.num_requests() > 0 && steps++ < 500) {
    rig.schedule_at(t);
    std::map<RequestId, double> audio;
    for (const auto& s : rig.scheduler.last_plan().sequences)
      if (s.samples) audio[s.id] = 0.08;
    rig.deliver_at(t + 0.02, audio);
    for (RequestId id : {1, 2, 3})
      if (const auto* st = rig.scheduler.find(id); st && st->num_output_tokens() >= 8)
        rig.scheduler.finish(id, FinishReason::length, rig.kv);
    t += 0.05;
  }
  CHECK(rig.scheduler.num_requests() == 0);
  CHECK(rig.kv.num_used_blocks() == 0);
  CHECK(rig.kv.contract_violation().empty());
  CHECK(rig.scheduler.num_preemptions() >= preempted.size());
}

TEST_CASE("PlaybackDeadlineScheduler: a preempted stream waits behind a new arrival due sooner",
          "[scheduler][playback]") {
  Rig rig(config(64, /*max_seqs=*/1));
  rig.scheduler.add(speech(1, 0.0));
  rig.schedule_at(0.0);
  rig.deliver_at(0.1, {{1, 10.0}});  // runs dry at 10.1
  rig.scheduler.add(speech(2, 0.5));  // due at 1.5
  CHECK(ids_of(rig.schedule_at(0.6)) == std::vector<RequestId>{1});  // one seat, held by 1
  rig.deliver_at(0.65, {});
  rig.kv.advice.max_num_seqs = 0;  // memory pressure: the cache asks for fewer sequences
  rig.kv.advice.admit_new_requests = false;
  const StepPlan& squeezed = rig.schedule_at(0.7);
  CHECK(std::vector<RequestId>(squeezed.preempted.begin(), squeezed.preempted.end()) == std::vector<RequestId>{1});
  rig.deliver_at(0.75, {});
  rig.kv.advice = {};
  CHECK(ids_of(rig.schedule_at(0.8)) == std::vector<RequestId>{2});  // due 1.5, before 10.1
  rig.deliver_at(0.85, {{2, 0.5}});
  rig.scheduler.finish(2, FinishReason::stop, rig.kv);
  CHECK(ids_of(rig.schedule_at(0.9)) == std::vector<RequestId>{1});  // resumes, recomputing
  rig.deliver_at(0.95, {});
  CHECK(rig.kv.num_used_blocks() > 0);
  rig.scheduler.finish(1, FinishReason::abort, rig.kv);
  CHECK(rig.kv.num_used_blocks() == 0);
  CHECK(rig.kv.contract_violation().empty());
}

TEST_CASE("PlaybackDeadlineScheduler: seat swapping, when on, gives a far-ahead stream's seat to a request due soon",
          "[scheduler][playback]") {
  SchedulerConfig c = config(64, /*max_seqs=*/1);
  c.playback_displace_seconds = 5.0;
  Rig rig(c);
  rig.scheduler.add(speech(1, 0.0));
  rig.schedule_at(0.0);
  rig.deliver_at(0.1, {{1, 4.0}});  // dry at 4.1: 4 s in hand, not more than 5
  rig.scheduler.add(speech(2, 0.5));  // due at 1.5
  CHECK(ids_of(rig.schedule_at(0.6)) == std::vector<RequestId>{1});
  CHECK(rig.scheduler.last_plan().preempted.empty());
  rig.deliver_at(0.7, {{1, 6.0}});  // dry at 10.1: now more than 5 s ahead
  const StepPlan& swapped = rig.schedule_at(0.8);
  CHECK(ids_of(swapped) == std::vector<RequestId>{2});
  CHECK(std::vector<RequestId>(swapped.preempted.begin(), swapped.preempted.end()) == std::vector<RequestId>{1});
  rig.deliver_at(0.9, {{2, 0.5}});
  // 1 waits under its deadline (10.1), far ahead: it does not take 2's seat back.
  CHECK(ids_of(rig.schedule_at(1.0)) == std::vector<RequestId>{2});
  rig.deliver_at(1.1, {});
  rig.scheduler.finish(2, FinishReason::stop, rig.kv);
  CHECK(ids_of(rig.schedule_at(1.2)) == std::vector<RequestId>{1});  // resumes with the free seat
  rig.deliver_at(1.3, {});
  rig.scheduler.finish(1, FinishReason::stop, rig.kv);
  CHECK(rig.kv.num_used_blocks() == 0);
  CHECK(rig.kv.contract_violation().empty());
}

TEST_CASE("Simulated overload: playback deadline keeps every listener's stalls below FCFS's",
          "[scheduler][playback][simulation]") {
  // Three long streams get ahead while the machine is lightly loaded; then a
  // burst of five short ones. At batch 8 the machine makes 0.84x real time per
  // stream (15 ms + 10 ms per frame, 80 ms frames), but the long streams'
  // buffers can cover the burst if they give way.
  std::vector<izwi::test::SimulatedStream> streams;
  for (int i = 0; i < 3; ++i) streams.push_back({.arrival_seconds = 0.1 * i, .prompt_tokens = 96, .frames = 500});
  for (int i = 0; i < 5; ++i)
    streams.push_back({.arrival_seconds = 10.0 + 0.05 * i, .prompt_tokens = 64, .frames = 62});
  const izwi::test::StepCostModel cost;
  const izwi::test::SimulatedAudio format;

  SchedulerConfig c;
  c.seed = 1;
  FixedBlockKVCache fcfs_kv(4096, 16);
  izwi::FcfsScheduler fcfs(c);
  const auto by_fcfs = izwi::test::simulate(fcfs, fcfs_kv, streams, cost, format, [](izwi::TimePoint) {});
  FixedBlockKVCache deadline_kv(4096, 16);
  SimScheduler deadline(c);
  const auto by_deadline = izwi::test::simulate(deadline, deadline_kv, streams, cost, format,
                                                [&](izwi::TimePoint t) { deadline.time_source().set(t); });

  REQUIRE(by_fcfs.problem.empty());
  REQUIRE(by_deadline.problem.empty());
  for (const auto* report : {&by_fcfs, &by_deadline})
    for (const auto& s : report->streams) {
      CHECK(s.completed);  // nobody starves
      CHECK(s.audio_seconds == Approx(static_cast<double>(streams[s.id - 1].frames) * format.frame_seconds()));
    }
  CHECK(fcfs_kv.num_used_blocks() == 0);
  CHECK(deadline_kv.num_used_blocks() == 0);
  CHECK(deadline_kv.contract_violation().empty());

  INFO("worst stall: FCFS " << by_fcfs.worst_underrun_seconds() << " s, deadline "
                            << by_deadline.worst_underrun_seconds() << " s");
  INFO("total stall: FCFS " << by_fcfs.total_underrun_seconds() << " s, deadline "
                            << by_deadline.total_underrun_seconds() << " s");
  CHECK(by_deadline.worst_underrun_seconds() < by_fcfs.worst_underrun_seconds());
  CHECK(by_deadline.total_underrun_seconds() < by_fcfs.total_underrun_seconds());
  // The late streams are the ones FCFS starves: each one hears less stall.
  for (std::size_t i = 3; i < streams.size(); ++i)
    CHECK(by_deadline.streams[i].underrun_seconds < by_fcfs.streams[i].underrun_seconds);
}

TEST_CASE("PlaybackDeadlineScheduler: random aborts and a small cache leak no block", "[scheduler][playback]") {
  std::vector<izwi::test::SimulatedStream> streams;
  for (int i = 0; i < 12; ++i)
    streams.push_back({.arrival_seconds = 0.3 * i, .prompt_tokens = static_cast<std::size_t>(20 + 7 * i),
                       .frames = static_cast<std::size_t>(30 + 13 * (i % 5)), .audio = i % 4 != 3});
  SchedulerConfig c = config(48, 6);
  for (double displace : {0.0, 1.0}) {  // seat swapping off and on
    INFO("playback_displace_seconds " << displace);
    c.playback_displace_seconds = displace;
    FixedBlockKVCache kv(40, 8);  // too small for all: forces preemptions
    SimScheduler s(c);
    const auto report =
        izwi::test::simulate(s, kv, streams, {}, {}, [&](izwi::TimePoint t) { s.time_source().set(t); });
    CHECK(report.problem.empty());
    CHECK(s.num_preemptions() > 0);
    CHECK(s.num_requests() == 0);
    CHECK(kv.num_used_blocks() == 0);
    CHECK(kv.contract_violation().empty());
    for (const auto& o : report.streams) CHECK(o.completed);
  }

  // Aborting in every state mid-run also frees everything.
  SimScheduler aborted(c);
  FixedBlockKVCache kv2(40, 8);
  for (RequestId id = 1; id <= 10; ++id) aborted.add(speech(id, 0.01 * static_cast<double>(id), 20, 50));
  StepResult result;
  for (int step = 0; step < 30; ++step) {
    aborted.time_source().set(at_seconds(0.05 * step));
    const StepPlan& plan = aborted.schedule(kv2);
    izwi::test::fake_execute(plan, result);
    aborted.update(result, kv2);
    if (step % 3 == 2) aborted.finish(static_cast<RequestId>(step / 3 + 1), FinishReason::abort, kv2);
  }
  for (RequestId id = 1; id <= 10; ++id) aborted.finish(id, FinishReason::abort, kv2);
  CHECK(aborted.num_requests() == 0);
  CHECK(kv2.num_used_blocks() == 0);
  CHECK(kv2.contract_violation().empty());
}
