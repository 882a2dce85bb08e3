#pragma once
// Time sources for schedulers that plan by the clock (PlaybackDeadlineScheduler).
// A time source is any type with `t.now() -> izwi::TimePoint` on a const t.
// SteadyTimeSource reads the engine's clock; ManualTimeSource is set by hand,
// so a simulation or a test runs in simulated time, deterministically.

#include <concepts>

#include "izwi/core/ids.hpp"

namespace izwi {

template <class T>
concept TimeSource = requires(const T& t) {
  { t.now() } -> std::same_as<TimePoint>;
};

/// The engine's clock (izwi::Clock, steady).
struct SteadyTimeSource {
  TimePoint now() const noexcept { return Clock::now(); }
};

/// A clock that moves only when told to.
class ManualTimeSource {
 public:
  TimePoint now() const noexcept { return now_; }
  void set(TimePoint t) noexcept { now_ = t; }
  void advance(Clock::duration d) noexcept { now_ += d; }

 private:
  TimePoint now_{};
};

}  // namespace izwi
