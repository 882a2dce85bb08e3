#pragma once
// The OpenCL side of izwi: one device, its context and in-order queue, the
// program of izwi's kernels (built once per context, its binary cached on
// disk), and device buffers that carry a *device address*.
//
// Device addresses. A model family is written against `float*` (BackendOps),
// and a KV cache hands out `KVLayerView{std::byte*, std::byte*}`. Memory on an
// OpenCL device has no host address, so each DeviceBuffer reserves an
// inaccessible range of the host's address space (mmap PROT_NONE, no memory
// behind it) of its own size and registers it: a pointer into that range,
// with ordinary pointer arithmetic, names (buffer, byte offset) on the
// device. OpenClOps resolves every pointer it is given; one that resolves to
// nothing is host memory and is copied. A host dereference of a device
// address faults at once instead of reading garbage.
//
//   auto ctx = izwi::opencl::Context::create({});          // first GPU, else first device
//   izwi::opencl::DeviceBuffer buf(*ctx, 1024);
//   float* p = buf.address<float>();                      // a device address
//
// Errors: izwi::opencl::opencl_error with the failing call and the OpenCL
// status name; no platform or device is izwi::unavailable with the reason.

// 2.0 declares the shared-virtual-memory calls (unified_memory.hpp), which
// are only called where a device reports SVM; the kernels stay OpenCL C 1.2
// and the 1.2 calls (clCreateCommandQueue) stay in use, undeprecated.
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 200
#endif
#ifndef CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#endif
#include <CL/cl.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "izwi/core/error.hpp"

namespace izwi::opencl {

/// An OpenCL call failed; what() names the call and the status.
class opencl_error : public izwi::error {
 public:
  opencl_error(const std::string& call, cl_int status);
  cl_int status() const noexcept { return status_; }

 private:
  cl_int status_;
};

/// Name of an OpenCL status code ("CL_OUT_OF_RESOURCES").
const char* status_name(cl_int status) noexcept;

/// Throws opencl_error(call, status) unless status is CL_SUCCESS.
inline void check(cl_int status, const char* call) {
  if (status != CL_SUCCESS) throw opencl_error(call, status);
}
inline void check(cl_int status, const std::string& call) {
  if (status != CL_SUCCESS) throw opencl_error(call, status);
}

/// What a device says about sharing memory with the host (read once by
/// Context::create). Decides how a unified-memory KV cache reaches it
/// (unified_memory.hpp).
struct DeviceMemorySharing {
  /// CL_DEVICE_HOST_UNIFIED_MEMORY: the device and the host use one physical
  /// memory (CPU devices, integrated GPUs); false on a discrete GPU.
  bool host_unified_memory = false;
  /// CL_DEVICE_SVM_CAPABILITIES (CL_DEVICE_SVM_COARSE_GRAIN_BUFFER, ...); 0
  /// before OpenCL 2.0 or where the device has no shared virtual memory.
  cl_device_svm_capabilities svm_capabilities = 0;
};

struct ContextOptions {
  /// Index into clGetPlatformIDs; none: every platform, GPUs first.
  std::optional<std::size_t> platform;
  /// Index into the platform's devices; none: its first GPU, else its first device.
  std::optional<std::size_t> device;
  /// Where program binaries are cached; empty: $IZWI_OPENCL_CACHE, else
  /// $XDG_CACHE_HOME/izwi/opencl, else ~/.cache/izwi/opencl. "-" disables the cache.
  std::filesystem::path program_cache_dir;
  /// Tests only: what the device is taken to report about memory sharing
  /// (a discrete GPU on a CPU device); none: what it reports.
  std::optional<DeviceMemorySharing> memory_sharing_override;
};

/// How the kernel program was obtained (the cache's observable behaviour, for tests).
enum class ProgramOrigin { built_from_source, loaded_from_cache };

/// One device, its context, one in-order queue and the built kernel program.
/// Shared (shared_ptr) by the executor, its ops and every DeviceKVCache on it;
/// immutable after create(), so several threads may share it (OpenCL queues
/// are thread-safe; kernel objects are per OpenClOps).
class Context {
 public:
  /// Picks the device, builds (or loads) izwi's kernels. Throws
  /// izwi::unavailable when there is no platform or no such device.
  static std::shared_ptr<Context> create(const ContextOptions& options);

  /// True when at least one OpenCL device exists; `reason` says why not.
  static bool any_device(std::string* reason = nullptr);

  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  cl_context context() const noexcept { return context_; }
  cl_device_id device() const noexcept { return device_; }
  cl_command_queue queue() const noexcept { return queue_; }
  cl_program program() const noexcept { return program_; }
  /// "PoCL 3.1 / pthread-skylake-avx512 (driver 3.1)", for logs.
  const std::string& description() const noexcept { return description_; }
  ProgramOrigin program_origin() const noexcept { return program_origin_; }
  /// Whether the device has cl_khr_subgroups: the program is then built with
  /// IZWI_HAVE_SUBGROUPS and its reductions may use sub-group functions.
  bool has_subgroups() const noexcept { return has_subgroups_; }
  /// Whether the device shares the host's memory, and its SVM abilities.
  const DeviceMemorySharing& memory_sharing() const noexcept { return memory_sharing_; }
  /// The options the program was built with (part of the cache key).
  const std::string& build_options() const noexcept { return build_options_; }
  /// The cache file of this device's program ("" when caching is off).
  const std::filesystem::path& program_cache_file() const noexcept { return cache_file_; }

  /// Waits for every enqueued command.
  void finish() const { check(clFinish(queue_), "clFinish"); }

 private:
  Context() = default;
  void build_program(const std::filesystem::path& cache_dir);

  cl_platform_id platform_ = nullptr;
  cl_device_id device_ = nullptr;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  cl_program program_ = nullptr;
  std::string description_;
  std::string build_options_;
  bool has_subgroups_ = false;
  DeviceMemorySharing memory_sharing_;
  ProgramOrigin program_origin_ = ProgramOrigin::built_from_source;
  std::filesystem::path cache_file_;
};

/// Where a device address points: a buffer and a byte offset into it.
struct DeviceLocation {
  cl_mem buffer = nullptr;
  std::size_t offset = 0;
  /// Bytes from offset to the end of the buffer.
  std::size_t available = 0;
};

/// The buffer behind a device address, or nullopt for any other pointer.
std::optional<DeviceLocation> resolve_device_address(const void* address) noexcept;

/// A cl_mem of `bytes` with a device address range of its own (see above).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  /// Throws opencl_error (CL_MEM_OBJECT_ALLOCATION_FAILURE, ...) when the
  /// device cannot hold it.
  DeviceBuffer(Context& context, std::size_t bytes);
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& other) noexcept { swap(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    DeviceBuffer(std::move(other)).swap(*this);
    return *this;
  }

  cl_mem get() const noexcept { return mem_; }
  std::size_t size() const noexcept { return bytes_; }
  template <class T = std::byte>
  T* address() const noexcept {
    return static_cast<T*>(address_);
  }
  /// Blocking copies between the host and [offset, offset + bytes).
  void write(Context& context, const void* host, std::size_t bytes, std::size_t offset = 0);
  void read(Context& context, void* host, std::size_t bytes, std::size_t offset = 0) const;
  /// Sets [offset, offset + bytes) to zero bytes.
  void zero(Context& context, std::size_t bytes, std::size_t offset = 0);

 private:
  void reset() noexcept;
  void swap(DeviceBuffer& other) noexcept;
  cl_mem mem_ = nullptr;
  void* address_ = nullptr;
  std::size_t bytes_ = 0;
};

/// A cl_mem over host memory the caller owns (CL_MEM_USE_HOST_PTR: zero copy
/// where the device shares the host's memory, as PoCL's CPU device and
/// integrated GPUs do), registered like a device address range so that
/// pointers into [host, host + bytes) resolve to it. This is how a
/// unified-memory KV cache (UnifiedKVCache, memory_space = unified_space) is
/// read and written by OpenCL kernels in place. The memory must outlive the
/// alias; nothing else may use it while kernels run.
class HostMemoryAlias {
 public:
  HostMemoryAlias(Context& context, void* host, std::size_t bytes);
  ~HostMemoryAlias();
  HostMemoryAlias(const HostMemoryAlias&) = delete;
  HostMemoryAlias& operator=(const HostMemoryAlias&) = delete;

  const void* host() const noexcept { return host_; }
  std::size_t size() const noexcept { return bytes_; }

 private:
  cl_mem mem_ = nullptr;
  void* host_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace izwi::opencl

#include "izwi/kernels/opencl/impl/context.hpp"
