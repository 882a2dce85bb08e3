#pragma once
// Bodies of kernels/opencl/context.hpp.

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <system_error>
#include <utility>
#include <vector>

#include "izwi/core/hash.hpp"
#include "izwi/kernels/opencl/sources.hpp"

namespace izwi::opencl {

inline const char* status_name(cl_int status) noexcept {
  switch (status) {
    case CL_DEVICE_NOT_FOUND: return "CL_DEVICE_NOT_FOUND";
    case CL_DEVICE_NOT_AVAILABLE: return "CL_DEVICE_NOT_AVAILABLE";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case CL_OUT_OF_RESOURCES: return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY: return "CL_OUT_OF_HOST_MEMORY";
    case CL_BUILD_PROGRAM_FAILURE: return "CL_BUILD_PROGRAM_FAILURE";
    case CL_INVALID_VALUE: return "CL_INVALID_VALUE";
    case CL_INVALID_BINARY: return "CL_INVALID_BINARY";
    case CL_INVALID_BUFFER_SIZE: return "CL_INVALID_BUFFER_SIZE";
    case CL_INVALID_KERNEL_NAME: return "CL_INVALID_KERNEL_NAME";
    case CL_INVALID_KERNEL_ARGS: return "CL_INVALID_KERNEL_ARGS";
    case CL_INVALID_ARG_SIZE: return "CL_INVALID_ARG_SIZE";
    case CL_INVALID_ARG_VALUE: return "CL_INVALID_ARG_VALUE";
    case CL_INVALID_WORK_GROUP_SIZE: return "CL_INVALID_WORK_GROUP_SIZE";
    case CL_INVALID_GLOBAL_WORK_SIZE: return "CL_INVALID_GLOBAL_WORK_SIZE";
    case CL_INVALID_MEM_OBJECT: return "CL_INVALID_MEM_OBJECT";
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: return "an OpenCL error";
  }
}

inline opencl_error::opencl_error(const std::string& call, cl_int status)
    : izwi::error("OpenCL: " + call + " failed with " + status_name(status) + " (" + std::to_string(status) + ")"),
      status_(status) {}

namespace detail {

inline std::string device_info_string(cl_device_id device, cl_device_info what) {
  std::size_t size = 0;
  if (clGetDeviceInfo(device, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return {};
  std::string s(size, '\0');
  clGetDeviceInfo(device, what, size, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

inline std::string platform_info_string(cl_platform_id platform, cl_platform_info what) {
  std::size_t size = 0;
  if (clGetPlatformInfo(platform, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return {};
  std::string s(size, '\0');
  clGetPlatformInfo(platform, what, size, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

inline DeviceMemorySharing read_memory_sharing(cl_device_id device) {
  DeviceMemorySharing sharing;
  cl_bool unified = CL_FALSE;
  if (clGetDeviceInfo(device, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, nullptr) == CL_SUCCESS)
    sharing.host_unified_memory = unified == CL_TRUE;
  // An OpenCL 1.x device does not know the query: it answers CL_INVALID_VALUE, and has no SVM.
  const std::string version = device_info_string(device, CL_DEVICE_VERSION);  // "OpenCL 3.0 ..."
  if (version.rfind("OpenCL 1.", 0) == 0) return sharing;
  cl_device_svm_capabilities caps = 0;
  if (clGetDeviceInfo(device, CL_DEVICE_SVM_CAPABILITIES, sizeof caps, &caps, nullptr) == CL_SUCCESS)
    sharing.svm_capabilities = caps;
  return sharing;
}

inline std::vector<cl_platform_id> platforms() {
  cl_uint count = 0;
  if (clGetPlatformIDs(0, nullptr, &count) != CL_SUCCESS || count == 0) return {};
  std::vector<cl_platform_id> ids(count);
  clGetPlatformIDs(count, ids.data(), nullptr);
  return ids;
}

inline std::vector<cl_device_id> devices(cl_platform_id platform, cl_device_type type) {
  cl_uint count = 0;
  if (clGetDeviceIDs(platform, type, 0, nullptr, &count) != CL_SUCCESS || count == 0) return {};
  std::vector<cl_device_id> ids(count);
  clGetDeviceIDs(platform, type, count, ids.data(), nullptr);
  return ids;
}

inline std::filesystem::path default_program_cache_dir() {
  if (const char* dir = std::getenv("IZWI_OPENCL_CACHE"); dir && *dir) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::filesystem::path(xdg) / "izwi/opencl";
  if (const char* home = std::getenv("HOME"); home && *home) return std::filesystem::path(home) / ".cache/izwi/opencl";
  return {};
}

/// The process's map from device address ranges to buffers.
struct AddressRegistry {
  struct Entry {
    cl_mem buffer;
    std::size_t bytes;
  };
  std::mutex mutex;
  std::map<std::uintptr_t, Entry> ranges;  // keyed by the range's first address
  static AddressRegistry& instance() {
    static AddressRegistry registry;
    return registry;
  }
};

// A cached program binary: magic, the hash of the binary, its size, the bytes.
// A file whose hash does not match is rebuilt, never handed to the driver.
inline constexpr std::uint64_t program_cache_magic = 0x315a4f4c43575a49ull;  // "IZWCLOZ1"

inline std::optional<std::vector<unsigned char>> read_program_cache(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::uint64_t header[3] = {};
  if (!in.read(reinterpret_cast<char*>(header), sizeof header) || header[0] != program_cache_magic) return std::nullopt;
  if (header[2] == 0 || header[2] > (std::uint64_t{1} << 31)) return std::nullopt;
  std::vector<unsigned char> binary(header[2]);
  if (!in.read(reinterpret_cast<char*>(binary.data()), static_cast<std::streamsize>(binary.size()))) return std::nullopt;
  if (hash64(binary.data(), binary.size()) != header[1]) return std::nullopt;
  return binary;
}

inline void write_program_cache(const std::filesystem::path& file, const std::vector<unsigned char>& binary) {
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  const std::filesystem::path temp = file.string() + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) return;  // an unwritable cache only costs the next start a build
    const std::uint64_t header[3] = {program_cache_magic, hash64(binary.data(), binary.size()), binary.size()};
    out.write(reinterpret_cast<const char*>(header), sizeof header);
    out.write(reinterpret_cast<const char*>(binary.data()), static_cast<std::streamsize>(binary.size()));
    if (!out) return;
  }
  std::filesystem::rename(temp, file, ec);  // atomic: concurrent starts never see half a file
  if (ec) std::filesystem::remove(temp, ec);
}

}  // namespace detail

inline bool Context::any_device(std::string* reason) {
  const auto ids = detail::platforms();
  if (ids.empty()) {
    if (reason) *reason = "no OpenCL platform is installed (Debian: pocl-opencl-icd, or a GPU vendor's ICD)";
    return false;
  }
  for (cl_platform_id p : ids)
    if (!detail::devices(p, CL_DEVICE_TYPE_ALL).empty()) return true;
  if (reason) *reason = "the OpenCL platforms report no device";
  return false;
}

inline std::shared_ptr<Context> Context::create(const ContextOptions& options) {
  const auto platform_ids = detail::platforms();
  if (platform_ids.empty()) throw unavailable("OpenCL: no platform is installed (Debian: pocl-opencl-icd, or a GPU vendor's ICD)");
  std::shared_ptr<Context> ctx(new Context());
  if (options.platform) {
    if (*options.platform >= platform_ids.size())
      throw unavailable("OpenCL: platform " + std::to_string(*options.platform) + " does not exist (" +
                        std::to_string(platform_ids.size()) + " installed)");
    const cl_platform_id p = platform_ids[*options.platform];
    auto all = detail::devices(p, CL_DEVICE_TYPE_ALL);
    if (all.empty()) throw unavailable("OpenCL: platform " + std::to_string(*options.platform) + " has no device");
    if (options.device && *options.device >= all.size())
      throw unavailable("OpenCL: platform " + std::to_string(*options.platform) + " has no device " +
                        std::to_string(*options.device) + " (" + std::to_string(all.size()) + " devices)");
    auto gpus = detail::devices(p, CL_DEVICE_TYPE_GPU);
    ctx->platform_ = p;
    ctx->device_ = options.device ? all[*options.device] : (gpus.empty() ? all.front() : gpus.front());
  } else {
    for (cl_device_type type : {cl_device_type{CL_DEVICE_TYPE_GPU}, cl_device_type{CL_DEVICE_TYPE_ALL}}) {
      for (cl_platform_id p : platform_ids) {
        auto found = detail::devices(p, type);
        if (found.empty()) continue;
        if (options.device && *options.device >= found.size()) continue;
        ctx->platform_ = p;
        ctx->device_ = found[options.device.value_or(0)];
        break;
      }
      if (ctx->device_) break;
    }
    if (!ctx->device_) throw unavailable("OpenCL: no device found on any platform");
  }
  cl_int status = CL_SUCCESS;
  ctx->context_ = clCreateContext(nullptr, 1, &ctx->device_, nullptr, nullptr, &status);
  check(status, "clCreateContext");
  ctx->queue_ = clCreateCommandQueue(ctx->context_, ctx->device_, 0, &status);
  check(status, "clCreateCommandQueue");
  ctx->description_ = detail::platform_info_string(ctx->platform_, CL_PLATFORM_NAME) + " / " +
                      detail::device_info_string(ctx->device_, CL_DEVICE_NAME) + " (driver " +
                      detail::device_info_string(ctx->device_, CL_DRIVER_VERSION) + ")";
  // Sub-groups: the kernels' reductions use them where the device says it
  // has them (OpenCL 1.2 kernels see them only through cl_khr_subgroups).
  const std::string extensions = " " + detail::device_info_string(ctx->device_, CL_DEVICE_EXTENSIONS) + " ";
  ctx->has_subgroups_ = extensions.find(" cl_khr_subgroups ") != std::string::npos;
  ctx->memory_sharing_ = options.memory_sharing_override ? *options.memory_sharing_override
                                                         : detail::read_memory_sharing(ctx->device_);
  ctx->build_options_ = ctx->has_subgroups_ ? "-cl-std=CL1.2 -DIZWI_HAVE_SUBGROUPS=1" : "-cl-std=CL1.2";
  std::filesystem::path cache_dir = options.program_cache_dir;
  if (cache_dir.empty()) cache_dir = detail::default_program_cache_dir();
  if (cache_dir == "-") cache_dir.clear();
  ctx->build_program(cache_dir);
  return ctx;
}

inline void Context::build_program(const std::filesystem::path& cache_dir) {
  const char* build_options = build_options_.c_str();
  if (!cache_dir.empty()) {
    // Keyed by everything that changes the binary: device, driver, platform, source, options.
    std::string key = description_ + '\n' + detail::platform_info_string(platform_, CL_PLATFORM_VERSION) + '\n' +
                      detail::device_info_string(device_, CL_DEVICE_VERSION) + '\n' + build_options + '\n' +
                      kernel_source;
    char name[40];
    std::snprintf(name, sizeof name, "izwi-%016llx.bin", static_cast<unsigned long long>(hash64(key)));
    cache_file_ = cache_dir / name;
    if (auto binary = detail::read_program_cache(cache_file_)) {
      const unsigned char* data = binary->data();
      const std::size_t size = binary->size();
      cl_int binary_status = CL_SUCCESS, status = CL_SUCCESS;
      cl_program program = clCreateProgramWithBinary(context_, 1, &device_, &size, &data, &binary_status, &status);
      if (status == CL_SUCCESS && binary_status == CL_SUCCESS &&
          clBuildProgram(program, 1, &device_, build_options, nullptr, nullptr) == CL_SUCCESS) {
        program_ = program;
        program_origin_ = ProgramOrigin::loaded_from_cache;
        return;
      }
      if (program) clReleaseProgram(program);  // the driver refused it: build from source and replace it
    }
  }
  cl_int status = CL_SUCCESS;
  const char* source = kernel_source;
  program_ = clCreateProgramWithSource(context_, 1, &source, nullptr, &status);
  check(status, "clCreateProgramWithSource");
  if (clBuildProgram(program_, 1, &device_, build_options, nullptr, nullptr) != CL_SUCCESS) {
    std::size_t size = 0;
    clGetProgramBuildInfo(program_, device_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
    std::string log(size, '\0');
    clGetProgramBuildInfo(program_, device_, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
    throw opencl_error("clBuildProgram (izwi's kernels on " + description_ + "): " + log, CL_BUILD_PROGRAM_FAILURE);
  }
  program_origin_ = ProgramOrigin::built_from_source;
  if (cache_file_.empty()) return;
  std::size_t size = 0;
  if (clGetProgramInfo(program_, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr) != CL_SUCCESS || size == 0)
    return;
  std::vector<unsigned char> binary(size);
  unsigned char* data = binary.data();
  if (clGetProgramInfo(program_, CL_PROGRAM_BINARIES, sizeof data, &data, nullptr) == CL_SUCCESS)
    detail::write_program_cache(cache_file_, binary);
}

inline Context::~Context() {
  if (program_) clReleaseProgram(program_);
  if (queue_) clReleaseCommandQueue(queue_);
  if (context_) clReleaseContext(context_);
}

inline std::optional<DeviceLocation> resolve_device_address(const void* address) noexcept {
  auto& registry = detail::AddressRegistry::instance();
  const auto a = reinterpret_cast<std::uintptr_t>(address);
  std::lock_guard lock(registry.mutex);
  auto it = registry.ranges.upper_bound(a);
  if (it == registry.ranges.begin()) return std::nullopt;
  --it;
  const std::size_t offset = a - it->first;
  if (offset >= it->second.bytes) return std::nullopt;
  return DeviceLocation{it->second.buffer, offset, it->second.bytes - offset};
}

inline DeviceBuffer::DeviceBuffer(Context& context, std::size_t bytes) : bytes_(bytes) {
  if (bytes == 0) throw invalid_argument("bytes", "OpenCL: a device buffer needs at least one byte");
  cl_int status = CL_SUCCESS;
  mem_ = clCreateBuffer(context.context(), CL_MEM_READ_WRITE, bytes, nullptr, &status);
  check(status, "clCreateBuffer(" + std::to_string(bytes) + " bytes)");
  // Address space only: no access, no backing, no swap reservation.
  void* range = ::mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (range == MAP_FAILED) {
    clReleaseMemObject(mem_);
    mem_ = nullptr;
    throw opencl_error("mmap of a device address range", CL_OUT_OF_HOST_MEMORY);
  }
  address_ = range;
  auto& registry = detail::AddressRegistry::instance();
  std::lock_guard lock(registry.mutex);
  registry.ranges[reinterpret_cast<std::uintptr_t>(address_)] = {mem_, bytes_};
}

inline void DeviceBuffer::reset() noexcept {
  if (address_) {
    auto& registry = detail::AddressRegistry::instance();
    {
      std::lock_guard lock(registry.mutex);
      registry.ranges.erase(reinterpret_cast<std::uintptr_t>(address_));
    }
    ::munmap(address_, bytes_);
  }
  if (mem_) clReleaseMemObject(mem_);
  mem_ = nullptr;
  address_ = nullptr;
  bytes_ = 0;
}

inline HostMemoryAlias::HostMemoryAlias(Context& context, void* host, std::size_t bytes) : host_(host), bytes_(bytes) {
  if (!host || bytes == 0) throw invalid_argument("host", "OpenCL: a host memory alias needs memory");
  cl_int status = CL_SUCCESS;
  mem_ = clCreateBuffer(context.context(), CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, bytes, host, &status);
  check(status, "clCreateBuffer(CL_MEM_USE_HOST_PTR, " + std::to_string(bytes) + " bytes)");
  auto& registry = detail::AddressRegistry::instance();
  std::lock_guard lock(registry.mutex);
  registry.ranges[reinterpret_cast<std::uintptr_t>(host_)] = {mem_, bytes_};
}

inline HostMemoryAlias::~HostMemoryAlias() {
  auto& registry = detail::AddressRegistry::instance();
  {
    std::lock_guard lock(registry.mutex);
    registry.ranges.erase(reinterpret_cast<std::uintptr_t>(host_));
  }
  clReleaseMemObject(mem_);
}

inline void DeviceBuffer::swap(DeviceBuffer& other) noexcept {
  std::swap(mem_, other.mem_);
  std::swap(address_, other.address_);
  std::swap(bytes_, other.bytes_);
}

inline void DeviceBuffer::write(Context& context, const void* host, std::size_t bytes, std::size_t offset) {
  if (bytes == 0) return;
  check(clEnqueueWriteBuffer(context.queue(), mem_, CL_TRUE, offset, bytes, host, 0, nullptr, nullptr),
        "clEnqueueWriteBuffer");
}

inline void DeviceBuffer::read(Context& context, void* host, std::size_t bytes, std::size_t offset) const {
  if (bytes == 0) return;
  check(clEnqueueReadBuffer(context.queue(), mem_, CL_TRUE, offset, bytes, host, 0, nullptr, nullptr),
        "clEnqueueReadBuffer");
}

inline void DeviceBuffer::zero(Context& context, std::size_t bytes, std::size_t offset) {
  if (bytes == 0) return;
  const unsigned char zero_byte = 0;
  check(clEnqueueFillBuffer(context.queue(), mem_, &zero_byte, 1, offset, bytes, 0, nullptr, nullptr),
        "clEnqueueFillBuffer");
}

}  // namespace izwi::opencl
