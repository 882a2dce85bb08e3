// Must not compile: an Engine given a stream notifier that does not opt into
// izwi::stream_notifier_tag, even though it has notify().
// Run by CTest as engine.compile_fail.notifier_without_tag (label compile-fail).
#include "../toy_model.hpp"
#include "izwi/engine/engine.hpp"
#include "izwi/kv_cache/paged.hpp"
#include "izwi/scheduler/fcfs.hpp"

namespace {
struct LookalikeNotifier {
#ifdef IZWI_COMPILE_FAIL_CONTROL
  using policy_category = izwi::stream_notifier_tag;
#endif
  void notify() const {}
};
}  // namespace

int main() {
  return sizeof(izwi::Engine<izwi::FcfsScheduler, izwi::PagedKVCache<>, izwi::testing::ToyExecutor,
                             LookalikeNotifier>) > 0
             ? 0
             : 1;
}
