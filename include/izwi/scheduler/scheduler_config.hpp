#pragma once
// SchedulerConfig: the knobs of the token-budget loop shared by FcfsScheduler,
// PriorityScheduler and PlaybackDeadlineScheduler (DESIGN §3). Defaults are
// vLLM's CPU-serving ones.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "izwi/core/error.hpp"

namespace izwi {

struct SchedulerConfig {
  /// Tokens computed per step, prefill chunks and decode tokens together. Range >= 1.
  std::size_t max_num_batched_tokens = 2048;
  /// Sequences per step (and requests holding KV blocks). Range >= 1.
  std::size_t max_num_seqs = 128;
  /// Split a prompt that does not fit the step's remaining budget across steps.
  /// Off: a prompt is admitted only whole, and a prompt longer than
  /// max_num_batched_tokens is ended with FinishReason::error.
  bool enable_chunked_prefill = true;
  /// 0: off. Otherwise the most tokens one prefill chunk may take in a step, so
  /// that one long prompt cannot take the whole budget from the others
  /// (vLLM's long_prefill_token_threshold). Applies only with chunked prefill.
  std::size_t long_prefill_token_threshold = 0;
  /// PriorityScheduler only: priority levels a waiting request gains per second
  /// it has waited (lower value is served sooner, so waiting lowers it). With
  /// 0.1, a request at priority 10 overtakes fresh priority-0 arrivals after
  /// 100 s: high priorities matter, yet nothing waits forever. 0 turns aging
  /// off (strict priority, then arrival). Range [0, inf), finite.
  double priority_aging_per_second = 0.1;
  /// PlaybackDeadlineScheduler only: a request nobody has heard yet is due this
  /// many seconds after its arrival (its time-to-first-audio target; a
  /// request that produces no audio is due then for its first token). Range
  /// [0, inf), finite.
  double playback_first_audio_seconds = 1.0;
  /// PlaybackDeadlineScheduler only: a stream with more than this many seconds
  /// of delivered, unplayed audio sits out steps in which other requests are
  /// served, so they get the batch. Range (0, inf), finite.
  double playback_horizon_seconds = 2.0;
  /// PlaybackDeadlineScheduler only: streams above the horizon sit out only
  /// while some speech request has not been heard yet or has less than this
  /// many seconds of audio left; otherwise every stream is served, since a
  /// larger batch makes more audio per second. Range [0, playback_horizon_seconds).
  double playback_low_water_seconds = 0.1;
  /// PlaybackDeadlineScheduler only: 0 (the default) turns seat swapping off.
  /// Otherwise, when every seat (max_num_seqs) is taken, a waiting request due
  /// within the horizon takes the seat of the running stream with the most
  /// audio in hand, if that is more than this (and the horizon): the stream is
  /// preempted and recomputed later. Time to first audio drops under a seat
  /// limit, but under sustained overload displaced streams may stall when they
  /// come back (docs/concepts/playback_deadline.md). Range [0, inf), finite.
  double playback_displace_seconds = 0.0;
  /// Seeds the generator that draws a seed for each request whose
  /// SamplingParams::seed is unset. Unset: std::random_device.
  std::optional<std::uint64_t> seed;

  /// Throws izwi::invalid_argument naming the first field out of range.
  void validate() const {
    if (max_num_batched_tokens < 1)
      throw invalid_argument("max_num_batched_tokens", "max_num_batched_tokens must be >= 1, got 0");
    if (max_num_seqs < 1) throw invalid_argument("max_num_seqs", "max_num_seqs must be >= 1, got 0");
    if (!std::isfinite(priority_aging_per_second) || priority_aging_per_second < 0.0)
      throw invalid_argument("priority_aging_per_second",
                             "priority_aging_per_second must be finite and in [0, inf), got " +
                                 std::to_string(priority_aging_per_second));
    if (!std::isfinite(playback_first_audio_seconds) || playback_first_audio_seconds < 0.0)
      throw invalid_argument("playback_first_audio_seconds",
                             "playback_first_audio_seconds must be finite and in [0, inf), got " +
                                 std::to_string(playback_first_audio_seconds));
    if (!std::isfinite(playback_horizon_seconds) || playback_horizon_seconds <= 0.0)
      throw invalid_argument("playback_horizon_seconds", "playback_horizon_seconds must be finite and > 0, got " +
                                                             std::to_string(playback_horizon_seconds));
    if (!(playback_low_water_seconds >= 0.0 && playback_low_water_seconds < playback_horizon_seconds))
      throw invalid_argument("playback_low_water_seconds",
                             "playback_low_water_seconds must be in [0, playback_horizon_seconds), got " +
                                 std::to_string(playback_low_water_seconds));
    if (!std::isfinite(playback_displace_seconds) || playback_displace_seconds < 0.0)
      throw invalid_argument("playback_displace_seconds",
                             "playback_displace_seconds must be finite and in [0, inf), got " +
                                 std::to_string(playback_displace_seconds));
  }
};

}  // namespace izwi
