#pragma once
// Bodies of kernels/opencl/unified_memory.hpp.

#include <cstdint>
#include <utility>

#include "izwi/kv_cache/detail/mapped_region.hpp"

namespace izwi::opencl {

inline const char* to_string(UnifiedMemoryMode mode) noexcept {
  switch (mode) {
    case UnifiedMemoryMode::fine_grained_svm: return "fine-grained SVM";
    case UnifiedMemoryMode::coarse_grained_svm: return "coarse-grained SVM";
    case UnifiedMemoryMode::host_alias: return "host-pointer alias";
  }
  return "?";
}

inline bool shares_host_memory(const DeviceMemorySharing& sharing) noexcept {
  return sharing.host_unified_memory || (sharing.svm_capabilities & CL_DEVICE_SVM_FINE_GRAIN_SYSTEM) != 0;
}

inline UnifiedMemoryMode choose_unified_memory_mode(const DeviceMemorySharing& sharing, const std::string& device,
                                                    std::optional<UnifiedMemoryMode> forced) {
  if (!shares_host_memory(sharing))
    throw unavailable("OpenCL: the unified-memory KV cache needs a device that shares the host's memory, and " +
                      device + " does not (CL_DEVICE_HOST_UNIFIED_MEMORY is false: a discrete GPU); use DeviceKVCache");
  const bool fine = (sharing.svm_capabilities & CL_DEVICE_SVM_FINE_GRAIN_BUFFER) != 0;
  const bool coarse = (sharing.svm_capabilities & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER) != 0;
  if (forced) {
    const bool offered = *forced == UnifiedMemoryMode::host_alias ||
                         (*forced == UnifiedMemoryMode::fine_grained_svm ? fine : coarse);
    if (!offered)
      throw unavailable(std::string("OpenCL: ") + device + " has no " + to_string(*forced) +
                        " (CL_DEVICE_SVM_CAPABILITIES)");
    return *forced;
  }
  if (fine) return UnifiedMemoryMode::fine_grained_svm;
  if (coarse) return UnifiedMemoryMode::coarse_grained_svm;
  return UnifiedMemoryMode::host_alias;
}

inline SvmMemory::SvmMemory(std::shared_ptr<Context> context, UnifiedMemoryMode mode)
    : context_(context ? std::move(context)
                       : throw invalid_argument("context", "SvmMemory needs an OpenCL context")),
      mode_(mode) {
  if (mode == UnifiedMemoryMode::host_alias)
    throw invalid_argument("mode", "SvmMemory is shared virtual memory: fine_grained_svm or coarse_grained_svm");
  static_cast<void>(choose_unified_memory_mode(context_->memory_sharing(), context_->description(), mode));
}

inline SvmMemory::~SvmMemory() {
  // The owners free their allocations first; anything left is freed here.
  while (!allocations_.empty()) {
    const auto it = allocations_.begin();
    deallocate(const_cast<std::byte*>(it->first), it->second.bytes);
  }
}

inline std::byte* SvmMemory::allocate(std::size_t bytes) {
  if (bytes == 0) throw invalid_argument("bytes", "OpenCL: an SVM allocation needs at least one byte");
  // clSVMAlloc aligns to at most the largest data type (128 bytes): ask one
  // page more and hand out the page-aligned part, so whole pages can be released.
  const std::size_t page = izwi::detail::MappedRegion::page_size();
  Allocation a;
  a.bytes = bytes + page;
  const cl_svm_mem_flags flags =
      CL_MEM_READ_WRITE | (mode_ == UnifiedMemoryMode::fine_grained_svm ? CL_MEM_SVM_FINE_GRAIN_BUFFER : 0);
  a.svm = clSVMAlloc(context_->context(), flags, a.bytes, 0);
  if (!a.svm)
    throw opencl_error("clSVMAlloc(" + std::to_string(a.bytes) + " bytes, " + to_string(mode_) + ")",
                       CL_MEM_OBJECT_ALLOCATION_FAILURE);
  cl_int status = CL_SUCCESS;
  a.buffer = clCreateBuffer(context_->context(), CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, a.bytes, a.svm, &status);
  if (status != CL_SUCCESS) {
    clSVMFree(context_->context(), a.svm);
    throw opencl_error("clCreateBuffer(CL_MEM_USE_HOST_PTR over SVM, " + std::to_string(a.bytes) + " bytes)", status);
  }
  if (mode_ == UnifiedMemoryMode::coarse_grained_svm) {
    status = clEnqueueSVMMap(context_->queue(), CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, a.svm, a.bytes, 0, nullptr,
                             nullptr);
    if (status != CL_SUCCESS) {
      clReleaseMemObject(a.buffer);
      clSVMFree(context_->context(), a.svm);
      throw opencl_error("clEnqueueSVMMap", status);
    }
    a.host_mapped = true;
  }
  const auto base = reinterpret_cast<std::uintptr_t>(a.svm);
  auto* aligned = reinterpret_cast<std::byte*>((base + page - 1) / page * page);
  {
    auto& registry = detail::AddressRegistry::instance();
    std::lock_guard lock(registry.mutex);
    registry.ranges[base] = {a.buffer, a.bytes};
  }
  std::lock_guard lock(mutex_);
  allocations_.emplace(aligned, a);
  return aligned;
}

inline void SvmMemory::deallocate(std::byte* memory, std::size_t) noexcept {
  Allocation a;
  {
    std::lock_guard lock(mutex_);
    const auto it = allocations_.find(memory);
    if (it == allocations_.end()) return;
    a = it->second;
    allocations_.erase(it);
  }
  {
    auto& registry = detail::AddressRegistry::instance();
    std::lock_guard lock(registry.mutex);
    registry.ranges.erase(reinterpret_cast<std::uintptr_t>(a.svm));
  }
  // Unmapped and idle before the free: the queue is in order, finish waits for both.
  if (a.host_mapped) clEnqueueSVMUnmap(context_->queue(), a.svm, 0, nullptr, nullptr);
  clFinish(context_->queue());
  clReleaseMemObject(a.buffer);
  clSVMFree(context_->context(), a.svm);
}

inline std::size_t SvmMemory::release(std::byte* begin, std::size_t length) noexcept {
  return izwi::detail::give_back_pages(begin, length);
}

inline std::string SvmMemory::description() const {
  return std::string("OpenCL ") + to_string(mode_) + " on " + context_->description();
}

inline SvmMemory::Allocation& SvmMemory::find(const std::byte* memory) {
  auto it = allocations_.upper_bound(memory);
  if (it == allocations_.begin() || memory >= std::prev(it)->first + std::prev(it)->second.bytes)
    throw invalid_argument("memory", "OpenCL: the address is not in an SVM allocation of this SvmMemory");
  return std::prev(it)->second;
}

inline const SvmMemory::Allocation& SvmMemory::find(const std::byte* memory) const {
  return const_cast<SvmMemory*>(this)->find(memory);
}

inline void SvmMemory::hand_to_device(const std::byte* memory) {
  if (mode_ != UnifiedMemoryMode::coarse_grained_svm) return;
  std::lock_guard lock(mutex_);
  Allocation& a = find(memory);
  if (!a.host_mapped) return;
  check(clEnqueueSVMUnmap(context_->queue(), a.svm, 0, nullptr, nullptr), "clEnqueueSVMUnmap");
  a.host_mapped = false;
}

inline void SvmMemory::hand_to_host(const std::byte* memory) {
  if (mode_ != UnifiedMemoryMode::coarse_grained_svm) return;
  std::lock_guard lock(mutex_);
  Allocation& a = find(memory);
  if (a.host_mapped) return;
  check(clEnqueueSVMMap(context_->queue(), CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, a.svm, a.bytes, 0, nullptr, nullptr),
        "clEnqueueSVMMap");
  a.host_mapped = true;
}

inline bool SvmMemory::host_mapped(const std::byte* memory) const {
  std::lock_guard lock(mutex_);
  return mode_ != UnifiedMemoryMode::coarse_grained_svm || find(memory).host_mapped;
}

inline std::shared_ptr<UnifiedMemoryResource> unified_memory_for(const std::shared_ptr<Context>& context,
                                                                 std::optional<UnifiedMemoryMode> forced) {
  if (!context) throw invalid_argument("context", "unified_memory_for needs an OpenCL context");
  const UnifiedMemoryMode mode =
      choose_unified_memory_mode(context->memory_sharing(), context->description(), forced);
  if (mode == UnifiedMemoryMode::host_alias) return nullptr;
  return std::make_shared<SvmMemory>(context, mode);
}

}  // namespace izwi::opencl
