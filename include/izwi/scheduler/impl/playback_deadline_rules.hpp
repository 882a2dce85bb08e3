#pragma once
// Bodies of the PlaybackDeadlineScheduler parts (declared in
// izwi/scheduler/detail/playback_deadline_rules.hpp).

#include <algorithm>
#include <chrono>
#include <cstddef>

namespace izwi::detail {

inline Clock::duration clock_duration(double seconds) noexcept {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

inline bool is_speech(const SequenceState& s) noexcept {
  return s.request.task == Task::tts || s.request.speech != nullptr;
}

inline void DeadlineWaitingQueue::push(SequenceState& s) {
  if (!s.playback.started) s.playback.deadline = s.request.arrival_time + first_audio_;
  entries_.push(s);
}

inline std::size_t MostSlackVictim::operator()(std::span<SequenceState* const> running) const noexcept {
  std::size_t victim = 0;
  for (std::size_t i = 1; i < running.size(); ++i) {
    const SequenceState& a = *running[i];
    const SequenceState& b = *running[victim];
    if (a.playback.deadline != b.playback.deadline ? a.playback.deadline > b.playback.deadline
                                                   : a.admission_order > b.admission_order)
      victim = i;
  }
  return victim;
}

template <TimeSource Time>
std::size_t PlaybackStepOrder<Time>::arrange(std::span<SequenceState* const> running,
                                             std::vector<SequenceState*>& serve) const {
  serve.assign(running.begin(), running.end());  // capacity kept: no allocation in steady state
  // A stream is far ahead when its listener will not run dry within the horizon.
  const TimePoint now = time_.now();
  const TimePoint sit_out_after = now + horizon_;
  const auto far_ahead = [sit_out_after](const SequenceState* s) noexcept {
    return s->playback.started && s->playback.deadline > sit_out_after;
  };
  // Those within the horizon first, each group earliest deadline first (ties:
  // the older admission). At most max_num_seqs entries: sorting costs little.
  std::sort(serve.begin(), serve.end(), [&](const SequenceState* a, const SequenceState* b) noexcept {
    const bool a_far = far_ahead(a);
    const bool b_far = far_ahead(b);
    if (a_far != b_far) return b_far;
    if (a->playback.deadline != b->playback.deadline) return a->playback.deadline < b->playback.deadline;
    return a->admission_order < b->admission_order;
  });
  const std::size_t num_near =
      static_cast<std::size_t>(std::find_if(serve.begin(), serve.end(), far_ahead) - serve.begin());
  // Sitting out costs throughput (the step's fixed cost is shared by fewer
  // sequences), so the streams far ahead sit out only while a listener is
  // short of sound: a speech request not heard yet, or one with less than the
  // low-water mark left. A paused one does not count: it is not served, and
  // its client is not reading (stream back-pressure).
  const TimePoint short_before = now + low_water_;
  const auto starving = [short_before](const SequenceState* s) noexcept {
    return is_speech(*s) && !s->paused && (!s->playback.started || s->playback.deadline <= short_before);
  };
  const bool sit_out = std::any_of(serve.begin(), serve.begin() + static_cast<std::ptrdiff_t>(num_near), starving);
  return sit_out ? num_near : serve.size();
}

template <TimeSource Time>
std::size_t PlaybackStepOrder<Time>::seat_for(std::span<SequenceState* const> running,
                                              const SequenceState& head) const {
  if (displace_ == Clock::duration::zero()) return running.size();  // off
  const TimePoint now = time_.now();
  if (head.playback.deadline > now + horizon_) return running.size();
  const TimePoint displace_after = now + std::max(horizon_, displace_);
  std::size_t seat = running.size();
  for (std::size_t i = 0; i < running.size(); ++i) {
    const PlaybackState& p = running[i]->playback;
    if (!p.started || p.deadline <= displace_after || p.deadline <= head.playback.deadline) continue;
    if (seat == running.size() || p.deadline > running[seat]->playback.deadline) seat = i;
  }
  return seat;
}

/// The listener model: playback starts with the first delivered audio and runs
/// at real time; audio arriving after the buffer ran dry counts an underrun
/// of the gap, and playback resumes from the arrival.
template <TimeSource Time>
void PlaybackStepOrder<Time>::observe(SequenceState& s, const SequenceOutput& out, const StepResult& result) const {
  if (out.audio_count == 0 || result.audio_sample_rate == 0) return;
  const double seconds = static_cast<double>(out.audio_count) / static_cast<double>(result.audio_sample_rate);
  const TimePoint now = time_.now();
  PlaybackState& p = s.playback;
  if (!p.started) {
    p.started = true;
    p.first_audio_at = now;
    p.deadline = now;
  } else if (now > p.deadline) {
    ++p.num_underruns;
    p.underrun_seconds += seconds_between(p.deadline, now);
    p.deadline = now;
  }
  p.delivered_seconds += seconds;
  p.deadline += clock_duration(seconds);
}

}  // namespace izwi::detail
