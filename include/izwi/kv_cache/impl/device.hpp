#pragma once

#include <algorithm>
#include <vector>

namespace izwi {

template <std::size_t BlockSize>
std::size_t DeviceKVCache<BlockSize>::usable_blocks(const KVCacheShape& shape, const DeviceKVCacheConfig& config) {
  detail::validate_kv_cache_shape(shape);
  const std::size_t per_block = detail::kv_bytes_per_block(shape, BlockSize);
  if (config.num_blocks) {
    if (*config.num_blocks == 0) throw invalid_argument("num_blocks", "num_blocks must be at least 1");
    return *config.num_blocks;
  }
  const std::size_t blocks = detail::kv_blocks_for_budget(config.byte_budget, per_block, "byte_budget");
  return std::max<std::size_t>(1, std::min(blocks, config.max_num_blocks));
}

template <std::size_t BlockSize>
DeviceKVCache<BlockSize>::DeviceKVCache(std::shared_ptr<opencl::Context> context, KVCacheShape shape,
                                        DeviceKVCacheConfig config)
    : context_((context ? void() : throw invalid_argument("context", "DeviceKVCache needs an OpenCL context"),
                std::move(context))),
      shape_(shape),
      config_(config),
      bytes_per_block_((detail::validate_kv_cache_shape(shape), detail::kv_bytes_per_block(shape, BlockSize))),
      blocks_(BlockSize, usable_blocks(shape, config), config.enable_prefix_caching),
      layout_(shape, BlockSize, blocks_.pool().num_usable_blocks() + 1, detail::kv_array_alignment),
      storage_(*context_, layout_.total_bytes()) {
  // The null block is what padded slots point at: zero, as in PagedKVCache.
  layout_.for_each_block_range(null_block, 1, [&](std::size_t offset, std::size_t length) {
    storage_.zero(*context_, length, offset);
  });
  context_->finish();
}

template <std::size_t BlockSize>
KVCacheStats DeviceKVCache<BlockSize>::stats() const noexcept {
  KVCacheStats s;
  blocks_.fill_stats(s);
  s.bytes_per_block = bytes_per_block_;
  s.total_bytes = layout_.total_bytes();
  return s;
}

template <std::size_t BlockSize>
std::vector<std::byte> DeviceKVCache<BlockSize>::read_layer(std::uint32_t layer, bool values) const {
  std::vector<std::byte> out(layout_.array_bytes);
  if (layer >= layout_.num_layers) return {};
  storage_.read(*context_, out.data(), out.size(), (2u * layer + (values ? 1u : 0u)) * layout_.array_bytes);
  return out;
}

}  // namespace izwi
