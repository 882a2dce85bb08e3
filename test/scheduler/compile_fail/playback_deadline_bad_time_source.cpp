// Must not compile: PlaybackDeadlineScheduler's clock must be a TimeSource
// (now() returning izwi::TimePoint); one whose now() returns seconds as a
// double is rejected, and the diagnostic names the TimeSource requirement.
// Run by CTest as scheduler.compile_fail.playback_deadline_bad_time_source.
#include <cstddef>

#include "izwi/scheduler/playback_deadline.hpp"

struct SecondsClock {
  double now() const { return 0.0; }
};

std::size_t instantiate() {
#ifndef IZWI_COMPILE_FAIL_CONTROL
  izwi::BasicPlaybackDeadlineScheduler<SecondsClock> scheduler;
#else
  izwi::BasicPlaybackDeadlineScheduler<izwi::ManualTimeSource> scheduler;
#endif
  return scheduler.num_waiting();
}
