// Must not compile: a type with every member of a scheduler but no opt-in tag
// is not a scheduler. The diagnostic must name the failing requirement, opts_into.
// Run by CTest as concepts.compile_fail.scheduler_without_tag (label compile-fail).
#include "../concept_types.hpp"

template <izwi::SchedulerPolicy S>
std::size_t queue_length(const S& scheduler) {
  return scheduler.num_waiting() + scheduler.num_running();
}

std::size_t instantiate(const izwi_test::UntaggedScheduler& untagged, const izwi_test::GoodScheduler& good) {
#ifndef IZWI_COMPILE_FAIL_CONTROL
  return queue_length(untagged);
#else
  (void)untagged;
  return queue_length(good);
#endif
}
