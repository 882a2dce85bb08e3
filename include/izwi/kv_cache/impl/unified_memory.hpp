#pragma once
// Bodies of kv_cache/unified_memory.hpp.

#include <sys/mman.h>

#include <cstdint>

#include "izwi/kv_cache/detail/mapped_region.hpp"

namespace izwi {

inline std::byte* HostMappedMemory::allocate(std::size_t bytes) {
  detail::MappedRegion region(bytes);
  std::byte* p = region.data();
  static_cast<void>(region.detach());  // owned by the caller now; deallocate() unmaps it
  return p;
}

inline void HostMappedMemory::deallocate(std::byte* memory, std::size_t bytes) noexcept {
  if (memory) ::munmap(memory, bytes);
}

inline std::size_t HostMappedMemory::release(std::byte* begin, std::size_t length) noexcept {
  return detail::give_back_pages(begin, length);
}

namespace detail {

inline std::size_t give_back_pages(std::byte* begin, std::size_t length) noexcept {
  const std::uintptr_t page = MappedRegion::page_size();
  const auto start = reinterpret_cast<std::uintptr_t>(begin);
  const std::uintptr_t first = (start + page - 1) / page * page;
  const std::uintptr_t last = (start + length) / page * page;
  if (last <= first) return 0;
#if defined(MADV_DONTNEED)
  if (::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED) != 0) return 0;
  return last - first;
#else
  return 0;
#endif
}

}  // namespace detail
}  // namespace izwi
