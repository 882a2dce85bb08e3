#pragma once
// MappedRegion: address space reserved with mmap for the unified-memory KV
// cache. MAP_NORESERVE and anonymous pages mean a block costs resident memory
// only once it is written, and release() hands whole pages back to the system
// (madvise MADV_DONTNEED: the next touch sees fresh zero pages), which is how
// the cache gives memory back under pressure without unmapping anything.

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string>
#include <utility>

#include <sys/mman.h>
#include <unistd.h>

#include "izwi/core/error.hpp"

namespace izwi::detail {

class MappedRegion {
 public:
  MappedRegion() = default;
  /// Reserves `bytes` of zeroed, page-aligned memory. Throws izwi::error when
  /// the system refuses the reservation.
  explicit MappedRegion(std::size_t bytes);
  ~MappedRegion();
  MappedRegion(MappedRegion&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  MappedRegion& operator=(MappedRegion&& other) noexcept;
  MappedRegion(const MappedRegion&) = delete;
  MappedRegion& operator=(const MappedRegion&) = delete;

  std::byte* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  /// Gives up ownership: the caller munmaps data() (HostMappedMemory does).
  [[nodiscard]] std::byte* detach() noexcept {
    size_ = 0;
    return std::exchange(data_, nullptr);
  }

  /// Gives back the pages lying wholly inside [offset, offset + length); a page
  /// shared with bytes outside the range is kept. Returns the bytes released.
  std::size_t release(std::size_t offset, std::size_t length) noexcept;

  static std::size_t page_size() noexcept {
    static const std::size_t size = [] {
      const long p = ::sysconf(_SC_PAGESIZE);
      return p > 0 ? static_cast<std::size_t>(p) : std::size_t{4096};
    }();
    return size;
  }

 private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

inline MappedRegion::MappedRegion(std::size_t bytes) : size_(bytes) {
  int flags = MAP_PRIVATE | MAP_ANONYMOUS;
#ifdef MAP_NORESERVE
  flags |= MAP_NORESERVE;
#endif
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    size_ = 0;
    throw error("cannot reserve " + std::to_string(bytes) + " bytes of address space for the KV cache: " +
                std::strerror(err) + " (lower memory_fraction or set num_blocks)");
  }
  data_ = static_cast<std::byte*>(p);
}

inline MappedRegion::~MappedRegion() {
  if (data_) ::munmap(data_, size_);
}

inline MappedRegion& MappedRegion::operator=(MappedRegion&& other) noexcept {
  if (this != &other) {
    if (data_) ::munmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

inline std::size_t MappedRegion::release(std::size_t offset, std::size_t length) noexcept {
  const std::size_t page = page_size();
  const std::size_t begin = (offset + page - 1) / page * page;
  const std::size_t end = (offset + length) / page * page;
  if (end <= begin) return 0;
#if defined(MADV_DONTNEED)
  if (::madvise(data_ + begin, end - begin, MADV_DONTNEED) != 0) return 0;
#endif
  return end - begin;
}

}  // namespace izwi::detail
