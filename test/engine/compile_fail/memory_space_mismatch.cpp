// Must not compile: an Engine pairing a CPU executor with a KV cache whose
// tensors live in device memory. The engine must say so in one sentence.
// Run by CTest as engine.compile_fail.memory_space_mismatch (label compile-fail).
#include "../toy_model.hpp"
#include "izwi/engine/engine.hpp"
#include "izwi/kv_cache/paged.hpp"
#include "izwi/scheduler/fcfs.hpp"

namespace {
/// A paged cache that claims to live in device memory.
struct DeviceKV : izwi::PagedKVCache<4> {
  using PagedKVCache::PagedKVCache;
#ifndef IZWI_COMPILE_FAIL_CONTROL
  using memory_space = izwi::device_space;
#endif
};
}  // namespace

int main() {
  return sizeof(izwi::Engine<izwi::FcfsScheduler, DeviceKV, izwi::testing::ToyExecutor>) > 0 ? 0 : 1;
}
