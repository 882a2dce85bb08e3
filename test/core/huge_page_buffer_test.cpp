// detail::HugePageBuffer: the memory models read their checkpoints into
// (io::FileMemory::read) and Whisper copies its weights into.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

#include "izwi/core/detail/huge_page_buffer.hpp"

TEST_CASE("huge-page buffer: 2-MiB aligned, zeroed, writable to its end, moved not copied", "[core][memory]") {
  using izwi::detail::HugePageBuffer;
  constexpr std::size_t huge = HugePageBuffer::huge_page_bytes;
  HugePageBuffer empty(0, "nothing");
  CHECK(empty.data() == nullptr);
  CHECK(empty.size() == 0);

  HugePageBuffer buffer(huge + 123, "a test buffer");
  REQUIRE(buffer.data() != nullptr);
  CHECK(buffer.size() == huge + 123);
  CHECK(reinterpret_cast<std::uintptr_t>(buffer.data()) % huge == 0);
  CHECK(std::all_of(buffer.data(), buffer.data() + buffer.size(), [](std::byte b) { return b == std::byte{0}; }));
  std::memset(buffer.data(), 0x5a, buffer.size());
  CHECK(buffer.data()[buffer.size() - 1] == std::byte{0x5a});

  std::byte* const data = buffer.data();
  HugePageBuffer moved(std::move(buffer));
  CHECK(moved.data() == data);
  CHECK(buffer.data() == nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state is the point
  buffer = std::move(moved);
  CHECK(buffer.data() == data);

  // More than any address space holds: a clear error naming what it was for.
  CHECK_THROWS_WITH(HugePageBuffer(std::size_t{1} << 62, "an impossible model"),
                    Catch::Contains("cannot allocate 4611686018427387904 bytes for an impossible model"));
  // Sizes that would wrap when rounded up to whole huge pages are refused, not wrapped.
  CHECK_THROWS_WITH(HugePageBuffer(std::numeric_limits<std::size_t>::max() - 1, "a wrapped size"),
                    Catch::Contains("for a wrapped size: more than the address space"));
}
