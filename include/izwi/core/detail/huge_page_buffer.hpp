#pragma once
// Anonymous memory laid out for transparent huge pages: the home of weights
// that decode streams through once per token.
//
// Batch-1 decode reads every weight once per token. From 4-KiB pages that is
// one TLB miss (a page walk) per 4 KiB, ~300,000 per token for a 1.2 GB
// model; from 2-MiB pages, 512 times fewer. On the 2-core Xeon of
// docs/benchmarks.md, F16 decode of Qwen3-0.6B's shape ran ~15% faster from
// huge pages than from a mapping of the file. The buffer is 2-MiB aligned and
// a whole number of 2-MiB pages long, and advised with MADV_HUGEPAGE; the
// kernel then backs it with huge pages when
// /sys/kernel/mm/transparent_hugepage/enabled says `always` or `madvise`
// (and with ordinary pages otherwise: the advice is a request, not a need).

#include <izwi/core/error.hpp>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include <sys/mman.h>

namespace izwi::detail {

class HugePageBuffer {
 public:
  static constexpr std::size_t huge_page_bytes = std::size_t{2} << 20;

  HugePageBuffer() noexcept = default;

  /// `bytes` of zeroed memory (none when 0). Throws izwi::error naming
  /// `what` ("model.gguf's contents") when the memory cannot be had.
  HugePageBuffer(std::size_t bytes, const std::string& what) : size_(bytes) {
    if (bytes == 0) return;
    if (bytes > std::numeric_limits<std::size_t>::max() - 2 * huge_page_bytes)
      throw error("cannot allocate " + std::to_string(bytes) + " bytes for " + what + ": more than the address space");
    const std::size_t rounded = (bytes + huge_page_bytes - 1) / huge_page_bytes * huge_page_bytes;
    // Over-allocate by one huge page, then give back the ends so that what
    // stays starts on a 2-MiB boundary (mmap only promises 4 KiB).
    const std::size_t padded = rounded + huge_page_bytes;
    void* raw = ::mmap(nullptr, padded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
      throw error("cannot allocate " + std::to_string(bytes) + " bytes for " + what + ": " + std::strerror(errno));
    const auto begin = reinterpret_cast<std::uintptr_t>(raw);
    const std::uintptr_t aligned = (begin + huge_page_bytes - 1) / huge_page_bytes * huge_page_bytes;
    if (aligned > begin) ::munmap(raw, aligned - begin);
    if (const std::uintptr_t end = begin + padded; end > aligned + rounded)
      ::munmap(reinterpret_cast<void*>(aligned + rounded), end - (aligned + rounded));
    data_ = reinterpret_cast<std::byte*>(aligned);
    mapped_ = rounded;
#if defined(MADV_HUGEPAGE)
    (void)::madvise(data_, mapped_, MADV_HUGEPAGE);  // EINVAL on kernels without THP: ordinary pages then
#endif
  }

  HugePageBuffer(HugePageBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)),
        mapped_(std::exchange(other.mapped_, 0)) {}
  HugePageBuffer& operator=(HugePageBuffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      mapped_ = std::exchange(other.mapped_, 0);
    }
    return *this;
  }
  HugePageBuffer(const HugePageBuffer&) = delete;
  HugePageBuffer& operator=(const HugePageBuffer&) = delete;
  ~HugePageBuffer() { release(); }

  std::byte* data() noexcept { return data_; }
  const std::byte* data() const noexcept { return data_; }
  /// The bytes asked for (the mapping is rounded up to whole huge pages).
  std::size_t size() const noexcept { return size_; }

 private:
  void release() noexcept {
    if (data_ != nullptr) ::munmap(data_, mapped_);
    data_ = nullptr;
  }

  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t mapped_ = 0;
};

}  // namespace izwi::detail
