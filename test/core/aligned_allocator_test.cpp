// AlignedAllocator: the storage of vectors that hold activations starts on a
// 64-byte boundary, through growth, and the executors' scratch (CpuOps) is
// built on it.

#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "izwi/core/aligned_allocator.hpp"
#include "izwi/executor/detail/cpu_ops.hpp"

namespace {

bool on_64_bytes(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 64 == 0; }

}  // namespace

TEST_CASE("AlignedAllocator: every allocation starts on the alignment, through growth", "[core]") {
  std::vector<float, izwi::AlignedAllocator<float>> v;
  for (std::size_t n : {1, 3, 17, 1000, 4099, 100000}) {
    v.resize(n, 1.0f);
    INFO("size " << n);
    REQUIRE(on_64_bytes(v.data()));
    REQUIRE(v[n - 1] == 1.0f);
  }
  std::vector<double, izwi::AlignedAllocator<double, 4096>> page(3);
  REQUIRE(reinterpret_cast<std::uintptr_t>(page.data()) % 4096 == 0);
  REQUIRE(izwi::AlignedAllocator<float>{} == izwi::AlignedAllocator<double>{});
}

TEST_CASE("CpuOps: its scratch buffers are 64-byte aligned, as the kernels' vector loads want", "[core][executor]") {
  izwi::detail::ThreadPool pool(1);
  izwi::detail::CpuOps ops(pool);
  for (std::size_t slot = 0; slot < 9; ++slot)
    for (std::size_t floats : {1, 5, 1024, 3 * 1024 + 1}) {
      INFO("slot " << slot << ", " << floats << " floats");
      REQUIRE(on_64_bytes(ops.buffer(slot, floats)));
    }
}
