#pragma once
// PlaybackDeadlineScheduler: serves first the audio streams whose listeners
// are closest to running out of audio, so that N concurrent listeners hear
// uninterrupted audio for as long as the machine's aggregate speed allows.
// Documented in docs/concepts/playback_deadline.md.
//
//   izwi::PlaybackDeadlineScheduler scheduler({.max_num_seqs = 32,
//                                              .playback_first_audio_seconds = 1.0,
//                                              .playback_horizon_seconds = 2.0});
//   // used exactly like FcfsScheduler: add, schedule(kv), update(result, kv), finish
//
// The listener of a request starts playing when its first audio is delivered
// (the scheduler sees it in StepResult: SequenceOutput::audio_count samples at
// StepResult::audio_sample_rate) and plays at real time, stalling when the
// delivered audio runs out. Every request has one deadline
// (SequenceState::playback.deadline), the time by which it should next be
// served:
//  - before its first audio: arrival + playback_first_audio_seconds (its
//    time-to-first-audio target). A request that produces no audio (chat,
//    transcription) keeps this deadline for good; once past it, it ranks ahead
//    of every stream with audio in hand, so it is served every step, as under
//    FCFS, and it finishes.
//  - after: the time its delivered audio runs out, i.e. now + buffered seconds.
//
// Earliest deadline first, in every decision of the token-budget loop:
//  - admission (waiting -> running): waiting requests by deadline. A
//    preempted stream waits under the time its listener runs dry, so it comes
//    back before a new arrival only if it is more urgent; since new arrivals'
//    deadlines grow with time, it cannot wait forever.
//  - the step's budget and seats: running requests by deadline. A stream
//    with more than playback_horizon_seconds of unplayed audio sits out the
//    step, so that the batch is smaller and faster for the others; it is
//    served only in a step that would otherwise be empty. Its buffer drains at
//    real time, so it comes back within the horizon and is served again:
//    sitting out never starves it.
//  - preemption victim: the most slack first (the latest deadline: for a
//    stream, the most buffered audio), then the newest admission.
// Request::priority is ignored. The running set is capped by max_num_seqs as
// with FCFS; the cache decides how many requests can hold blocks.
//
// The clock is a template parameter: SteadyTimeSource (izwi::Clock) in an
// engine, ManualTimeSource for simulations and tests, advanced by hand
// (scheduler.time_source().set(t)). schedule() reads it to decide who is far
// ahead; update() reads it as the moment the step's audio was delivered.

#include <utility>

#include "izwi/concepts/tags.hpp"
#include "izwi/scheduler/detail/playback_deadline_rules.hpp"
#include "izwi/scheduler/detail/token_budget_scheduler.hpp"
#include "izwi/scheduler/scheduler_config.hpp"
#include "izwi/scheduler/time_source.hpp"

namespace izwi {

template <TimeSource Time = SteadyTimeSource>
class BasicPlaybackDeadlineScheduler
    : public detail::TokenBudgetScheduler<detail::DeadlineWaitingQueue, detail::MostSlackVictim,
                                          detail::PlaybackStepOrder<Time>> {
  using Base = detail::TokenBudgetScheduler<detail::DeadlineWaitingQueue, detail::MostSlackVictim,
                                            detail::PlaybackStepOrder<Time>>;

 public:
  using policy_category = scheduler_tag;

  /// Throws izwi::invalid_argument naming the field out of range.
  explicit BasicPlaybackDeadlineScheduler(SchedulerConfig config = {}) : Base(std::move(config)) {}

  /// The clock the scheduler plans by (set a ManualTimeSource through it).
  Time& time_source() noexcept { return this->step_order().time_source(); }
  const Time& time_source() const noexcept { return this->step_order().time_source(); }
};

/// The playback-deadline scheduler on the engine's clock.
using PlaybackDeadlineScheduler = BasicPlaybackDeadlineScheduler<>;

}  // namespace izwi
