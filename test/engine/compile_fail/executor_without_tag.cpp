// Must not compile: an Engine given an executor that does not opt into
// izwi::executor_tag, even though it has every member an executor needs.
// Run by CTest as engine.compile_fail.executor_without_tag (label compile-fail).
#include "../toy_model.hpp"
#include "izwi/engine/engine.hpp"
#include "izwi/kv_cache/paged.hpp"
#include "izwi/scheduler/fcfs.hpp"

namespace {
struct LookalikeExecutor : izwi::testing::ToyExecutor {
#ifndef IZWI_COMPILE_FAIL_CONTROL
  using policy_category = void;
#endif
};
}  // namespace

int main() {
  return sizeof(izwi::Engine<izwi::FcfsScheduler, izwi::PagedKVCache<>, LookalikeExecutor>) > 0 ? 0 : 1;
}
