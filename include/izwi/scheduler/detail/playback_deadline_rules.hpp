#pragma once
// The three parts of PlaybackDeadlineScheduler plugged into the token-budget
// loop (waiting queue, victim rule, step order). Every request carries one
// deadline, SequenceState::playback.deadline: the time by which it should next
// be served. Before its first audio that is arrival + playback_first_audio_seconds
// (a request that produces no audio keeps it for its whole life); afterwards
// it is when its delivered audio runs out at real-time playback. Earliest
// deadline first, everywhere: admission, the running order, and (latest
// first) the victim.

#include <cstddef>
#include <cstdint>
#include <span>
#include <tuple>
#include <vector>

#include "izwi/core/ids.hpp"
#include "izwi/core/step.hpp"
#include "izwi/scheduler/detail/waiting_queues.hpp"
#include "izwi/scheduler/scheduler_config.hpp"
#include "izwi/scheduler/sequence_state.hpp"
#include "izwi/scheduler/time_source.hpp"

namespace izwi::detail {

/// Seconds as the engine clock's duration.
Clock::duration clock_duration(double seconds) noexcept;

/// A request whose output a listener plays (Task::tts, or speech conditioning).
bool is_speech(const SequenceState& s) noexcept;

/// Key of a waiting request: its deadline, then arrival, then id. A waiting
/// request's deadline does not move (no audio arrives while it waits), so the
/// queue is never re-sorted; a preempted stream goes back under the time its
/// listener runs dry, which new arrivals' first-audio deadlines overtake as
/// time passes, so nothing waits forever.
struct DeadlineOrder {
  using key_type = std::tuple<std::int64_t, std::int64_t, RequestId>;
  explicit DeadlineOrder(const SchedulerConfig&) noexcept {}
  static key_type key(const SequenceState& s) noexcept {
    return {s.playback.deadline.time_since_epoch().count(), s.request.arrival_time.time_since_epoch().count(),
            s.request.id};
  }
};

/// Waiting requests by deadline. push() sets the deadline of a request not
/// yet heard (arrival + playback_first_audio_seconds), so every request has
/// one before it can be admitted.
class DeadlineWaitingQueue {
 public:
  explicit DeadlineWaitingQueue(const SchedulerConfig& config)
      : first_audio_(clock_duration(config.playback_first_audio_seconds)), entries_(config) {}
  void push(SequenceState& s);
  bool erase(const SequenceState& s) { return entries_.erase(s); }
  SequenceState* front() const noexcept { return entries_.front(); }
  void pop_front() { entries_.pop_front(); }
  std::size_t size() const noexcept { return entries_.size(); }
  bool empty() const noexcept { return entries_.empty(); }

 private:
  Clock::duration first_audio_;
  OrderedWaitingQueue<DeadlineOrder> entries_;
};

/// The request with the most slack gives way: the latest deadline (for a
/// stream, the most buffered audio), then the newest admission.
struct MostSlackVictim {
  std::size_t operator()(std::span<SequenceState* const> running) const noexcept;
};

/// Which running requests compute this step: earliest deadline first. Streams
/// with more than playback_horizon_seconds of unplayed audio sit out while a
/// listener is short of sound (a speech request not heard yet, or one with
/// less than playback_low_water_seconds left), and then are served only in a
/// step that would otherwise be empty; otherwise everyone is served (a larger
/// batch makes more audio per second). Learns each
/// step's delivered audio from the StepResult and keeps the listener model
/// (SequenceState::playback) at the time source's now().
template <TimeSource Time>
class PlaybackStepOrder {
 public:
  explicit PlaybackStepOrder(const SchedulerConfig& config)
      : horizon_(clock_duration(config.playback_horizon_seconds)),
        low_water_(clock_duration(config.playback_low_water_seconds)),
        displace_(clock_duration(config.playback_displace_seconds)) {}

  std::size_t arrange(std::span<SequenceState* const> running, std::vector<SequenceState*>& serve) const;
  void observe(SequenceState& s, const SequenceOutput& out, const StepResult& result) const;
  /// With every seat taken, and only if playback_displace_seconds > 0: the
  /// running stream with the most audio in hand, if that is more than
  /// max(horizon, playback_displace_seconds) and its deadline is later than
  /// the head's, and the head is not far ahead itself (so two far-ahead
  /// streams never trade seats). Its buffer covers its recomputation.
  std::size_t seat_for(std::span<SequenceState* const> running, const SequenceState& head) const;

  Time& time_source() noexcept { return time_; }
  const Time& time_source() const noexcept { return time_; }

 private:
  Clock::duration horizon_;
  Clock::duration low_water_;
  Clock::duration displace_;
  [[no_unique_address]] Time time_;
};

}  // namespace izwi::detail

#include "izwi/scheduler/impl/playback_deadline_rules.hpp"
