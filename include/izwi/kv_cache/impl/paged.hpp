#pragma once

#include <algorithm>
#include <cstring>

#include "izwi/kv_cache/memory_pressure.hpp"

namespace izwi {

template <std::size_t BlockSize>
std::size_t PagedKVCache<BlockSize>::committable(std::size_t bytes, const PagedKVCacheConfig& config) {
  if (!config.commit_memory) return bytes;
  if (const std::optional<std::size_t> physical = physical_memory_bytes(); physical && bytes > *physical)
    throw invalid_argument("byte_budget", "a KV pool of " + std::to_string(bytes >> 20) +
                                              " MiB to commit is more than this machine's " +
                                              std::to_string(*physical >> 20) + " MiB of memory");
  return bytes;
}

template <std::size_t BlockSize>
std::size_t PagedKVCache<BlockSize>::usable_blocks(const KVCacheShape& shape, const PagedKVCacheConfig& config) {
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
PagedKVCache<BlockSize>::PagedKVCache(KVCacheShape shape, PagedKVCacheConfig config)
    : shape_(shape),
      config_(config),
      bytes_per_block_((detail::validate_kv_cache_shape(shape), detail::kv_bytes_per_block(shape, BlockSize))),
      blocks_(BlockSize, usable_blocks(shape, config), config.enable_prefix_caching, config.reuse_partial_blocks),
      layout_(shape, BlockSize, blocks_.pool().num_usable_blocks() + 1, detail::kv_array_alignment),
      storage_(committable(layout_.total_bytes(), config), detail::kv_array_alignment) {
  if (config.commit_memory) {
    std::memset(storage_.data(), 0, storage_.size());
    return;
  }
  // The null block is what padded slots point at: keep it zero so a kernel
  // that reads it sees no garbage. Other blocks are written before they are read.
  layout_.for_each_block_range(null_block, 1, [&](std::size_t offset, std::size_t length) {
    std::memset(storage_.data() + offset, 0, length);
  });
}

template <std::size_t BlockSize>
KVCacheStats PagedKVCache<BlockSize>::stats() const noexcept {
  KVCacheStats s;
  blocks_.fill_stats(s);
  s.bytes_per_block = bytes_per_block_;
  s.total_bytes = layout_.total_bytes();
  return s;
}

}  // namespace izwi
