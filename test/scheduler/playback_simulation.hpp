#pragma once
// A speech-serving simulation in simulated time, for comparing schedulers on
// what listeners hear: a synthetic audio executor with a step cost model, an
// engine-like loop around any scheduler and cache, and a listener model
// computed from the delivery times alone (independently of any scheduler's
// own bookkeeping). Deterministic: no clock, no threads, no randomness.
//
// Audio as Qwen3-TTS produces it: every sampled token is one frame of
// 1920 samples at 24 kHz (80 ms); the codec decodes a stream's frames in
// windows as Qwen3TtsCpuExecutor does: the first after `first_window_frames`,
// each next one twice the last up to `window_frames`, and whatever is left
// when the stream ends. A step costs
//   per_step + per_sampling_sequence * (sequences that sample a frame)
//            + per_prefill_token * (tokens computed beyond one per sequence)
// simulated seconds: weights read once per step, a talker decode plus fifteen
// code-predictor steps per frame, and prompt (or recompute) tokens.
// Used by test/scheduler/playback_deadline_test.cpp and bench/scheduler/playback_bench.cpp.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "izwi/core/request.hpp"
#include "izwi/core/step.hpp"
#include "scheduler/scheduler_harness.hpp"

namespace izwi::test {

struct SimulatedStream {
  double arrival_seconds = 0.0;
  std::size_t prompt_tokens = 64;
  /// Frames to synthesize (audio), or tokens to generate (text).
  std::size_t frames = 125;
  /// False: a text request (no audio; its first token stands for first audio).
  bool audio = true;
};

struct StepCostModel {
  double per_step = 0.015;
  double per_sampling_sequence = 0.010;
  double per_prefill_token = 0.0001;
};

struct SimulatedAudio {
  std::uint32_t samples_per_frame = 1920;
  std::uint32_t sample_rate = 24000;
  std::uint32_t first_window_frames = 2;
  std::uint32_t window_frames = 8;
  double frame_seconds() const { return static_cast<double>(samples_per_frame) / sample_rate; }
};

struct StreamOutcome {
  RequestId id = 0;
  bool audio = true;
  double arrival_seconds = 0.0;
  /// First audio (text: first token) minus arrival; +inf if it never came.
  double time_to_first_audio = std::numeric_limits<double>::infinity();
  /// The listener's stalls after playback started: how many, how long in all.
  std::uint32_t num_underruns = 0;
  double underrun_seconds = 0.0;
  double audio_seconds = 0.0;
  double finished_at = std::numeric_limits<double>::infinity();
  std::uint32_t num_preemptions = 0;
  bool completed = false;
};

struct SimulationReport {
  std::vector<StreamOutcome> streams;
  std::size_t steps = 0;
  double simulated_seconds = 0.0;
  /// Empty when the run was sound; else what went wrong (stuck, leaked blocks, ...).
  std::string problem;

  double worst_underrun_seconds() const {
    double worst = 0.0;
    for (const StreamOutcome& s : streams)
      if (s.audio) worst = std::max(worst, s.underrun_seconds);
    return worst;
  }
  double total_underrun_seconds() const {
    double total = 0.0;
    for (const StreamOutcome& s : streams)
      if (s.audio) total += s.underrun_seconds;
    return total;
  }
  double worst_time_to_first_audio() const {
    double worst = 0.0;
    for (const StreamOutcome& s : streams) worst = std::max(worst, s.time_to_first_audio);
    return worst;
  }
};

/// The listener of one stream, from (delivery time, seconds delivered) pairs
/// in time order: playback starts at the first delivery and runs at real
/// time; a delivery after the buffer ran dry ends a stall of that gap.
inline void listen(const std::vector<std::pair<double, double>>& deliveries, StreamOutcome& out) {
  double runs_dry_at = 0.0;
  for (std::size_t i = 0; i < deliveries.size(); ++i) {
    const auto [at, seconds] = deliveries[i];
    if (i == 0) {
      runs_dry_at = at;
    } else if (at > runs_dry_at + 1e-9) {
      ++out.num_underruns;
      out.underrun_seconds += at - runs_dry_at;
      runs_dry_at = at;
    }
    runs_dry_at += seconds;
    out.audio_seconds += seconds;
  }
}

/// Engine time of a simulated second (an arbitrary, fixed origin).
inline TimePoint simulated_time(double seconds) {
  return TimePoint{} + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds + 1000.0));
}

/// Runs `streams` through `scheduler` and `kv` until every stream ends (or
/// `max_steps`). `set_time(TimePoint)` is called with the simulated time
/// before each schedule() and before each update() (the moment the step's
/// audio is delivered); pass a no-op for schedulers that read no clock.
/// Every plan is checked as the scheduler tests check them (check_plan); the
/// first violation ends up in `problem`. The caller checks the cache for
/// leaked blocks afterwards.
template <class S, class K, class SetTime>
SimulationReport simulate(S& scheduler, K& kv, const std::vector<SimulatedStream>& streams,
                          const StepCostModel& cost, const SimulatedAudio& format, SetTime set_time,
                          std::size_t max_steps = 1000000) {
  struct Live {
    std::size_t spec = 0;
    std::size_t frames_done = 0;
    std::size_t undelivered = 0;
    bool delivered_any = false;
    std::size_t next_window = 0;  ///< frames the next window waits for (0: the first window's)
    std::vector<std::pair<double, double>> deliveries;
  };
  SimulationReport report;
  std::vector<std::size_t> order(streams.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return streams[a].arrival_seconds < streams[b].arrival_seconds;
  });
  report.streams.resize(streams.size());
  std::map<RequestId, Live> live;
  std::size_t next_arrival = 0;
  double t = 0.0;
  StepResult result;

  const auto id_of = [](std::size_t spec) { return static_cast<RequestId>(spec + 1); };
  const auto close = [&](RequestId id, bool completed) {
    Live& l = live.at(id);
    StreamOutcome& o = report.streams[l.spec];
    o.completed = completed;
    o.finished_at = t;
    if (const auto* state = scheduler.find(id)) o.num_preemptions = state->num_preemptions;
    listen(l.deliveries, o);
    live.erase(id);
  };

  while (report.steps < max_steps) {
    for (; next_arrival < order.size() && streams[order[next_arrival]].arrival_seconds <= t + 1e-12; ++next_arrival) {
      const std::size_t spec = order[next_arrival];
      const SimulatedStream& s = streams[spec];
      Request r;
      r.id = id_of(spec);
      r.task = s.audio ? Task::tts : Task::completion;
      for (std::size_t k = 0; k < s.prompt_tokens; ++k) r.prompt_tokens.push_back(static_cast<TokenId>(k % 1000));
      r.sampling.max_tokens = static_cast<std::uint32_t>(s.frames);
      r.sampling.seed = spec;
      r.arrival_time = simulated_time(s.arrival_seconds);
      report.streams[spec] = StreamOutcome{.id = r.id, .audio = s.audio, .arrival_seconds = s.arrival_seconds};
      Live fresh;
      fresh.spec = spec;
      live.emplace(r.id, std::move(fresh));
      scheduler.add(std::move(r));
    }
    if (live.empty()) {
      if (next_arrival == order.size()) break;
      t = streams[order[next_arrival]].arrival_seconds;
      continue;
    }
    set_time(simulated_time(t));
    const StepPlan& plan = scheduler.schedule(kv);
    ++report.steps;
    if (report.problem.empty()) {
      // Every plan keeps the budget, the seat cap and the slot mapping right.
      const std::string p = check_plan(plan, kv.block_size(), scheduler.config().max_num_batched_tokens,
                                       scheduler.config().max_num_seqs);
      if (!p.empty()) report.problem = "step " + std::to_string(report.steps) + ": " + p;
    }
    for (RequestId id : plan.failed) close(id, false);
    if (plan.empty()) {
      if (next_arrival == order.size()) {
        report.problem = "stuck: live requests but an empty plan and no arrival to wait for";
        break;
      }
      t = std::max(t, streams[order[next_arrival]].arrival_seconds);
      continue;
    }

    // The synthetic executor: one frame per sampling sequence, windows decoded when due.
    double step_cost = cost.per_step;
    result.clear();
    result.audio_sample_rate = format.sample_rate;
    for (const ScheduledSequence& seq : plan.sequences) {
      const std::size_t extra = seq.samples ? seq.num_tokens - 1 : seq.num_tokens;
      step_cost += cost.per_prefill_token * static_cast<double>(extra);
      if (!seq.samples) continue;
      step_cost += cost.per_sampling_sequence;
      Live& l = live.at(seq.id);
      const SimulatedStream& spec = streams[l.spec];
      SequenceOutput out{.id = seq.id, .token = static_cast<TokenId>(l.frames_done % 2048)};
      ++l.frames_done;
      ++l.undelivered;
      const bool last = l.frames_done == spec.frames;
      const std::size_t window = l.next_window ? l.next_window : format.first_window_frames;
      if (spec.audio && (l.undelivered >= window || last)) {
        l.next_window = std::min<std::size_t>(2 * window, format.window_frames);
        out.audio_begin = static_cast<std::uint32_t>(result.audio.size());
        out.audio_count = static_cast<std::uint32_t>(l.undelivered * format.samples_per_frame);
        result.audio.resize(result.audio.size() + out.audio_count, 0.0f);
      }
      result.outputs.push_back(out);
    }
    t += step_cost;
    set_time(simulated_time(t));
    scheduler.update(result, kv);

    for (const SequenceOutput& out : result.outputs) {
      Live& l = live.at(out.id);
      const SimulatedStream& spec = streams[l.spec];
      StreamOutcome& o = report.streams[l.spec];
      if (!spec.audio && l.frames_done == 1) o.time_to_first_audio = t - spec.arrival_seconds;
      if (out.audio_count > 0) {
        if (!l.delivered_any) o.time_to_first_audio = t - spec.arrival_seconds;
        l.delivered_any = true;
        l.deliveries.emplace_back(t, static_cast<double>(out.audio_count) / format.sample_rate);
        l.undelivered = 0;
      }
      if (l.frames_done == spec.frames) {
        close(out.id, true);
        scheduler.finish(out.id, FinishReason::length, kv);
      }
    }
  }
  if (report.problem.empty() && !live.empty()) report.problem = "gave up after max_steps with requests still live";
  report.simulated_seconds = t;
  return report;
}

}  // namespace izwi::test
