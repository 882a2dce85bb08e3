// Must not compile: a stream notifier whose notify() cannot be called on a
// const notifier (the engine calls it through a shared pointer to const, from
// the stepping thread while the consumer may replace it). The diagnostic must
// name the failing requirement, notifier_notify.
// Run by CTest as concepts.compile_fail.notifier_mutable_notify (label compile-fail).
#include "../concept_types.hpp"

template <izwi::StreamNotifier N>
void wake(const N& notifier) {
  notifier.notify();
}

void instantiate(const izwi_test::NotifierMutableNotify& mutable_only, const izwi_test::WakingNotifier& good) {
#ifndef IZWI_COMPILE_FAIL_CONTROL
  (void)good;
  wake(mutable_only);
#else
  (void)mutable_only;
  wake(good);
#endif
}
