#pragma once
// Where a UnifiedKVCache's one allocation comes from (UnifiedKVCacheConfig::memory).
//
// The default is host memory reserved with mmap (detail::MappedRegion): a CPU
// executor uses it as is, and OpenClExecutor wraps it in a CL_MEM_USE_HOST_PTR
// buffer. A GPU runtime can supply its own shared memory instead, for example
// OpenCL shared virtual memory (opencl::SvmMemory, kernels/opencl/unified_memory.hpp),
// and the cache keeps its budget, blocks and page release unchanged.
//
// The cache writes the allocation from the host only between engine steps
// (zeroing the null block once, giving pages back under memory pressure);
// a resource whose memory needs maps for host access keeps it mapped then.

#include <cstddef>
#include <memory>
#include <string>

namespace izwi {

class UnifiedMemoryResource {
 public:
  virtual ~UnifiedMemoryResource() = default;
  /// At least `bytes` of page-aligned memory the host may write between
  /// steps; contents unspecified. Throws izwi::error when there is none.
  virtual std::byte* allocate(std::size_t bytes) = 0;
  /// Frees what allocate(bytes) returned.
  virtual void deallocate(std::byte* memory, std::size_t bytes) noexcept = 0;
  /// Gives back to the system the pages lying wholly inside [begin, begin +
  /// length) of an allocation; their contents become unspecified. Returns the
  /// bytes given back (0 where this memory cannot give pages back).
  virtual std::size_t release(std::byte* begin, std::size_t length) noexcept = 0;
  /// What the memory is, for logs ("host memory (mmap)").
  virtual std::string description() const = 0;
};

/// The default: anonymous mmap(MAP_NORESERVE) host memory, pages given back
/// with madvise(MADV_DONTNEED).
class HostMappedMemory final : public UnifiedMemoryResource {
 public:
  std::byte* allocate(std::size_t bytes) override;
  void deallocate(std::byte* memory, std::size_t bytes) noexcept override;
  std::size_t release(std::byte* begin, std::size_t length) noexcept override;
  std::string description() const override { return "host memory (mmap)"; }
};

namespace detail {

/// Gives back the whole pages inside [begin, begin + length) of private
/// anonymous memory (madvise MADV_DONTNEED: the next touch sees zero pages).
/// Returns the bytes given back.
std::size_t give_back_pages(std::byte* begin, std::size_t length) noexcept;

/// One allocation of a resource, freed with it.
class UnifiedRegion {
 public:
  UnifiedRegion() = default;
  UnifiedRegion(std::shared_ptr<UnifiedMemoryResource> resource, std::size_t bytes)
      : resource_(resource ? std::move(resource) : std::make_shared<HostMappedMemory>()),
        data_(resource_->allocate(bytes)),
        size_(bytes) {}
  ~UnifiedRegion() { reset(); }
  UnifiedRegion(UnifiedRegion&& other) noexcept
      : resource_(std::move(other.resource_)), data_(other.data_), size_(other.size_) {
    other.data_ = nullptr;
    other.size_ = 0;
  }
  UnifiedRegion& operator=(UnifiedRegion&& other) noexcept {
    if (this != &other) {
      reset();
      resource_ = std::move(other.resource_);
      data_ = other.data_;
      size_ = other.size_;
      other.data_ = nullptr;
      other.size_ = 0;
    }
    return *this;
  }
  UnifiedRegion(const UnifiedRegion&) = delete;
  UnifiedRegion& operator=(const UnifiedRegion&) = delete;

  std::byte* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  const std::shared_ptr<UnifiedMemoryResource>& resource() const noexcept { return resource_; }
  /// As UnifiedMemoryResource::release, at an offset into this region.
  std::size_t release(std::size_t offset, std::size_t length) noexcept {
    return resource_->release(data_ + offset, length);
  }

 private:
  void reset() noexcept {
    if (data_) resource_->deallocate(data_, size_);
    data_ = nullptr;
  }
  std::shared_ptr<UnifiedMemoryResource> resource_;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace detail
}  // namespace izwi

#include "izwi/kv_cache/impl/unified_memory.hpp"
