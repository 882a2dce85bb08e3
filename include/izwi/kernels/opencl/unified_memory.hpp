#pragma once
// A unified-memory KV cache (UnifiedKVCache, memory_space = unified_space) on
// an OpenCL device: memory the host and the device both use in place.
//
// Three ways, chosen once at start-up from what the device reports
// (Context::memory_sharing()), best first:
//   fine_grained_svm    clSVMAlloc(CL_MEM_SVM_FINE_GRAIN_BUFFER): host and
//                       kernels use it without maps (the engine never
//                       touches K/V while a step runs);
//   coarse_grained_svm  clSVMAlloc: the host holds it mapped (clEnqueueSVMMap)
//                       between steps, the executor unmaps it for each step's
//                       kernels and maps it back after, as the spec requires;
//   host_alias          the cache's own mmap memory wrapped in a
//                       CL_MEM_USE_HOST_PTR buffer (devices without SVM).
// In every way the K/V bytes stay where they are: zero copy, and the cache's
// page release (madvise) frees memory the device uses too. That holds only
// on a device that shares the host's physical memory (CPU devices, integrated
// GPUs: CL_DEVICE_HOST_UNIFIED_MEMORY, or fine-grained *system* SVM). A
// discrete GPU keeps its own copy of SVM and aliased buffers, so released
// pages would free nothing there: the unified cache is refused on it (one
// sentence, izwi::unavailable), and DeviceKVCache is the cache to use.
//
//   auto ctx = izwi::opencl::Context::create({});
//   izwi::UnifiedKVCacheConfig kv_config;
//   kv_config.memory = izwi::opencl::unified_memory_for(ctx);   // SVM where the device has it
//   izwi::UnifiedKVCache<> kv(executor.kv_cache_shape(), kv_config);
//
// SVM memory is wrapped, once per allocation, in a CL_MEM_USE_HOST_PTR buffer
// over the SVM pointer (OpenCL 2.0: the buffer then uses the SVM memory) and
// registered like a device address range, so the kernels and OpenClOps'
// pointer resolution are the same for every way.

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "izwi/kernels/opencl/context.hpp"
#include "izwi/kv_cache/unified_memory.hpp"

namespace izwi::opencl {

enum class UnifiedMemoryMode { fine_grained_svm, coarse_grained_svm, host_alias };

/// "fine-grained SVM", "coarse-grained SVM", "host-pointer alias".
const char* to_string(UnifiedMemoryMode mode) noexcept;

/// Whether a device with `sharing` uses the host's own memory (see above).
bool shares_host_memory(const DeviceMemorySharing& sharing) noexcept;

/// The way a unified-memory cache reaches a device with `sharing` (the best
/// it offers, or `forced`). Throws izwi::unavailable, naming `device`, when
/// the device does not share the host's memory or lacks the forced way.
UnifiedMemoryMode choose_unified_memory_mode(const DeviceMemorySharing& sharing, const std::string& device,
                                             std::optional<UnifiedMemoryMode> forced = std::nullopt);

/// Shared virtual memory of one context, as a UnifiedKVCache's storage.
/// Thread-safe; allocations must be freed before the context goes (it holds it).
class SvmMemory final : public UnifiedMemoryResource {
 public:
  /// `mode`: fine_grained_svm or coarse_grained_svm, which the device must have.
  SvmMemory(std::shared_ptr<Context> context, UnifiedMemoryMode mode);
  ~SvmMemory() override;

  std::byte* allocate(std::size_t bytes) override;
  void deallocate(std::byte* memory, std::size_t bytes) noexcept override;
  /// madvise(MADV_DONTNEED) on whole pages: the device shares host memory
  /// (checked at construction), so this frees the device's memory too where
  /// the driver's SVM is private host memory (PoCL); a driver whose SVM pages
  /// are a shared mapping keeps them (the call then changes nothing).
  std::size_t release(std::byte* begin, std::size_t length) noexcept override;
  std::string description() const override;

  UnifiedMemoryMode mode() const noexcept { return mode_; }
  const std::shared_ptr<Context>& context() const noexcept { return context_; }
  /// Coarse-grained: unmaps the allocation holding `memory` for the kernels
  /// (enqueued) / maps it back for the host (blocking). Fine-grained: nothing.
  void hand_to_device(const std::byte* memory);
  void hand_to_host(const std::byte* memory);
  /// Whether the host holds the allocation holding `memory` mapped (tests).
  bool host_mapped(const std::byte* memory) const;

 private:
  struct Allocation {
    void* svm = nullptr;  // what clSVMAlloc returned
    std::size_t bytes = 0;
    cl_mem buffer = nullptr;
    bool host_mapped = false;
  };
  Allocation& find(const std::byte* memory);
  const Allocation& find(const std::byte* memory) const;

  std::shared_ptr<Context> context_;
  UnifiedMemoryMode mode_;
  mutable std::mutex mutex_;
  std::map<const std::byte*, Allocation> allocations_;  // keyed by the page-aligned pointer handed out
};

/// UnifiedKVCacheConfig::memory for `context`'s device: an SvmMemory in an
/// SVM way, null (the cache's mmap memory, aliased by the executor) in the
/// host_alias way. Throws izwi::unavailable as choose_unified_memory_mode.
std::shared_ptr<UnifiedMemoryResource> unified_memory_for(const std::shared_ptr<Context>& context,
                                                          std::optional<UnifiedMemoryMode> forced = std::nullopt);

}  // namespace izwi::opencl

#include "izwi/kernels/opencl/impl/unified_memory.hpp"
