#pragma once
// DeviceKVCache: the paged KV cache with its K/V tensors in an OpenCL
// device's memory. Satisfies izwi::KVCachePolicy with
// memory_space = device_space, so only an executor that runs on the device
// (OpenClExecutor) may be paired with it; CpuExecutor with it fails to compile
// (concepts/memory_space.hpp).
//
//   auto ctx = izwi::opencl::Context::create({});
//   izwi::OpenClExecutor<izwi::Qwen3> executor(std::move(model), ctx);
//   izwi::DeviceKVCache<> kv(ctx, executor.kv_cache_shape(), {.byte_budget = 1ull << 30});
//
// The block bookkeeping is PagedKVCache's own (detail::BlockManager: null
// block 0, LRU free list, reference counts, chained-hash prefix caching, tail
// first frees), so prefix caching and preemption behave identically; only the
// bytes live elsewhere. One device buffer holds every layer's K and V arrays in
// PagedKVCache's layout (detail::KVStorageLayout); layer(l) returns *device
// addresses* into it (see kernels/opencl/context.hpp), which the host must not
// dereference and OpenClOps resolves. Not thread-safe, like PagedKVCache.

#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "izwi/concepts/kv_cache.hpp"
#include "izwi/concepts/memory_space.hpp"
#include "izwi/concepts/tags.hpp"
#include "izwi/core/ids.hpp"
#include "izwi/core/kv_cache_shape.hpp"
#include "izwi/core/request.hpp"
#include "izwi/kernels/opencl/context.hpp"
#include "izwi/kv_cache/detail/block_manager.hpp"
#include "izwi/kv_cache/detail/kv_storage.hpp"
#include "izwi/kv_cache/paged.hpp"

namespace izwi {

/// PagedKVCacheConfig's fields mean the same here; byte_budget is device memory.
using DeviceKVCacheConfig = PagedKVCacheConfig;

template <std::size_t BlockSize = 16>
class DeviceKVCache {
  static_assert(BlockSize > 0, "DeviceKVCache needs at least one token per block");

 public:
  using policy_category = kv_cache_tag;
  using memory_space = device_space;
  using config_type = DeviceKVCacheConfig;
  static constexpr std::size_t block_size_v = BlockSize;

  /// Allocates the device storage and zeroes the null block. Throws
  /// izwi::invalid_argument for an unusable shape or budget (as PagedKVCache),
  /// izwi::opencl::opencl_error when the device cannot hold the budget.
  DeviceKVCache(std::shared_ptr<opencl::Context> context, KVCacheShape shape, DeviceKVCacheConfig config = {});

  DeviceKVCache(DeviceKVCache&&) noexcept = default;
  DeviceKVCache& operator=(DeviceKVCache&&) noexcept = default;

  std::size_t block_size() const noexcept { return BlockSize; }
  const KVCacheShape& shape() const noexcept { return shape_; }
  const DeviceKVCacheConfig& config() const noexcept { return config_; }
  /// The device the tensors live on.
  const std::shared_ptr<opencl::Context>& context() const noexcept { return context_; }

  PrefixHit find_cached_prefix(const SequenceView& seq) { return blocks_.find_cached_prefix(seq); }
  bool allocate_slots(const SequenceView& seq, std::size_t num_computed, std::size_t num_new, PrefixHit hit = {}) {
    return blocks_.allocate_slots(seq, num_computed, num_new, hit);
  }
  void free(RequestId id) noexcept { blocks_.free(id); }
  /// free(id) for a sequence preempted after its step was planned: blocks past
  /// its first num_written_tokens tokens lose their prefix-cache keys (unwritten).
  void free_unwritten(RequestId id, std::size_t num_written_tokens) noexcept {
    blocks_.free_unwritten(id, num_written_tokens);
  }
  std::span<const BlockId> block_table(RequestId id) const noexcept { return blocks_.block_table(id); }
  KVCacheStats stats() const noexcept;

  /// Device addresses of layer `layer`'s K and V arrays; both null past the last layer.
  KVLayerView layer(std::uint32_t layer) noexcept { return layout_.view(storage_.address<std::byte>(), layer); }

  /// Copies layer `layer`'s K (values = false) or V array to the host, for tests.
  std::vector<std::byte> read_layer(std::uint32_t layer, bool values) const;

  std::uint32_t ref_count(BlockId b) const noexcept { return blocks_.ref_count(b); }
  std::size_t num_sequences() const noexcept { return blocks_.num_sequences(); }
  std::string check_invariants() const { return blocks_.check_invariants(); }

 private:
  static std::size_t usable_blocks(const KVCacheShape& shape, const DeviceKVCacheConfig& config);

  std::shared_ptr<opencl::Context> context_;
  KVCacheShape shape_;
  DeviceKVCacheConfig config_;
  std::size_t bytes_per_block_;
  detail::BlockManager blocks_;
  detail::KVStorageLayout layout_;
  opencl::DeviceBuffer storage_;
};

}  // namespace izwi

#include "izwi/kv_cache/impl/device.hpp"
