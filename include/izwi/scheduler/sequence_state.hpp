#pragma once
// SequenceState: everything a scheduler keeps about one request between steps.
// Engines and tests read it through a scheduler's find(id); only the
// scheduler changes it.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "izwi/core/ids.hpp"
#include "izwi/core/random.hpp"
#include "izwi/core/request.hpp"

namespace izwi {

/// What a listener of an audio-producing request has heard, as a scheduler
/// models it (PlaybackDeadlineScheduler keeps it; the other policies leave it
/// untouched). Playback starts when the first audio is delivered and runs at
/// real time; when delivered audio runs out the listener stalls until more
/// arrives (an underrun), then playback resumes.
struct PlaybackState {
  /// The time by which this request should next be served: when its
  /// delivered audio runs out if playback has started, else its arrival plus
  /// the scheduler's time-to-first-audio target. Fixed while the request
  /// waits, so it can key a waiting queue.
  TimePoint deadline{};
  /// Playback started: some audio has been delivered.
  bool started = false;
  /// When the first audio was delivered.
  TimePoint first_audio_at{};
  /// Audio delivered so far, in seconds.
  double delivered_seconds = 0.0;
  /// Underruns so far: how often the listener ran dry, and for how long in all.
  std::uint32_t num_underruns = 0;
  double underrun_seconds = 0.0;
};

struct SequenceState {
  /// The request as added. Its prompt_tokens were moved into `tokens` (empty here).
  Request request;
  /// Prompt, then generated output: the sequence the KV cache holds.
  std::vector<TokenId> tokens;
  std::size_t num_prompt_tokens = 0;
  /// Tokens whose K/V are in the cache. Reset to 0 by preemption (recompute).
  std::size_t num_computed_tokens = 0;
  /// Derived once in add(); see PrefixCacheKeys.
  PrefixCacheKeys prefix_keys;
  /// This request's sampling generator. Lives as long as the request, so its
  /// stream continues unchanged across preemption.
  SequenceRng rng;
  RequestStatus status = RequestStatus::waiting;
  /// A paused request keeps its place and its blocks but is not scheduled.
  bool paused = false;
  /// Order of the latest admission into the running set (larger is newer).
  std::uint64_t admission_order = 0;
  /// Times this request was preempted.
  std::uint32_t num_preemptions = 0;
  /// The listener model of an audio-producing request (see PlaybackState).
  PlaybackState playback;

  RequestId id() const noexcept { return request.id; }
  std::span<const TokenId> prompt_tokens() const noexcept {
    return std::span<const TokenId>(tokens).first(num_prompt_tokens);
  }
  std::span<const TokenId> output_tokens() const noexcept {
    return std::span<const TokenId>(tokens).subspan(num_prompt_tokens);
  }
  std::size_t num_output_tokens() const noexcept { return tokens.size() - num_prompt_tokens; }
  SequenceView view() const noexcept { return SequenceView{request.id, tokens, &prefix_keys}; }
};

}  // namespace izwi
