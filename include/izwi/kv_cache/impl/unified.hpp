#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>

namespace izwi {

template <class PressureSource, std::size_t BlockSize>
std::size_t UnifiedKVCache<PressureSource, BlockSize>::usable_blocks(const KVCacheShape& shape,
                                                                     const UnifiedKVCacheConfig& config) {
  detail::validate_kv_cache_shape(shape);
  const std::size_t per_block = detail::kv_bytes_per_block(shape, BlockSize);
  if (config.num_blocks) {
    if (*config.num_blocks == 0) throw invalid_argument("num_blocks", "num_blocks must be at least 1");
    return *config.num_blocks;
  }
  if (!(config.memory_fraction > 0.0 && config.memory_fraction <= 1.0)) {
    throw invalid_argument("memory_fraction",
                           "memory_fraction must be in (0, 1], got " + std::to_string(config.memory_fraction));
  }
  const std::optional<std::size_t> physical =
      config.physical_memory_bytes ? config.physical_memory_bytes : physical_memory_bytes();
  if (!physical) {
    throw invalid_argument("physical_memory_bytes",
                           "cannot read this machine's physical memory; set physical_memory_bytes or num_blocks");
  }
  const auto budget = static_cast<std::size_t>(std::floor(config.memory_fraction * static_cast<double>(*physical)));
  const std::size_t blocks = detail::kv_blocks_for_budget(budget, per_block, "memory_fraction");
  return std::max<std::size_t>(1, std::min(blocks, config.max_num_blocks));
}

template <class PressureSource, std::size_t BlockSize>
UnifiedKVCache<PressureSource, BlockSize>::UnifiedKVCache(KVCacheShape shape, UnifiedKVCacheConfig config,
                                                          PressureSource source)
    : shape_(shape),
      config_((config.thresholds.validate(), config)),
      bytes_per_block_((detail::validate_kv_cache_shape(shape), detail::kv_bytes_per_block(shape, BlockSize))),
      blocks_(BlockSize, usable_blocks(shape, config), config.enable_prefix_caching, config.reuse_partial_blocks),
      layout_(shape, BlockSize, blocks_.pool().num_usable_blocks() + 1, detail::MappedRegion::page_size()),
      storage_(config.memory, layout_.total_bytes()),
      source_(std::move(source)) {
  if (!(config.warning_batch_fraction > 0.0 && config.warning_batch_fraction <= 1.0)) {
    throw invalid_argument("warning_batch_fraction", "warning_batch_fraction must be in (0, 1], got " +
                                                         std::to_string(config.warning_batch_fraction));
  }
  // The null block is what padded slots point at: zero, as in PagedKVCache
  // (another resource's memory need not start zeroed; one block per array).
  layout_.for_each_block_range(null_block, 1, [&](std::size_t offset, std::size_t length) {
    std::memset(storage_.data() + offset, 0, length);
  });
  // Sweeps run in noexcept paths: their scratch never grows past the pool.
  release_scratch_.reserve(blocks_.pool().num_usable_blocks());
}

template <class PressureSource, std::size_t BlockSize>
KVCacheStats UnifiedKVCache<PressureSource, BlockSize>::stats() const noexcept {
  KVCacheStats s;
  blocks_.fill_stats(s);
  s.bytes_per_block = bytes_per_block_;
  s.total_bytes = layout_.total_bytes();
  return s;
}

template <class PressureSource, std::size_t BlockSize>
void UnifiedKVCache<PressureSource, BlockSize>::poll_if_due() {
  const TimePoint now = Clock::now();
  if (last_poll_ && now - *last_poll_ < config_.poll_interval) return;
  last_poll_ = now;
  level_ = next_memory_pressure(level_, source_.read(), config_.thresholds);
  // The limits follow the sequences holding blocks at the time of the reading
  // and hold until the next one, so a sustained warning shrinks the batch by a
  // quarter per poll interval, not per step.
  const std::size_t holding = blocks_.num_sequences();
  advice_ = AdmissionAdvice{};
  advice_.pressure = level_;
  switch (level_) {
    case MemoryPressure::normal: break;
    case MemoryPressure::warning:
      advice_.max_num_seqs = std::max<std::size_t>(
          1, static_cast<std::size_t>(std::floor(static_cast<double>(holding) * config_.warning_batch_fraction)));
      break;
    case MemoryPressure::critical:
      advice_.max_num_seqs = holding;
      advice_.admit_new_requests = false;
      break;
  }
}

template <class PressureSource, std::size_t BlockSize>
AdmissionAdvice UnifiedKVCache<PressureSource, BlockSize>::admission_advice() {
  poll_if_due();
  if (level_ != MemoryPressure::normal) {
    // Cached free blocks go first: they are the memory that costs nothing to lose now.
    release_scratch_.clear();
    blocks_.evict_cached_free_blocks(release_scratch_);
    release_pages(release_scratch_);
  }
  if (level_ == MemoryPressure::critical) release_all_free_pages();
  return advice_;
}

template <class PressureSource, std::size_t BlockSize>
void UnifiedKVCache<PressureSource, BlockSize>::release_pages(std::vector<BlockId>& ids) noexcept {
  detail::BlockPool& pool = blocks_.pool();
  // Only blocks written since their last release can hold resident pages.
  ids.erase(std::remove_if(ids.begin(), ids.end(), [&](BlockId b) { return !pool.dirty(b); }), ids.end());
  std::sort(ids.begin(), ids.end());
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t j = i + 1;
    while (j < ids.size() && ids[j] == ids[j - 1] + 1) ++j;
    // One madvise per run of adjacent blocks and array, not per block.
    layout_.for_each_block_range(ids[i], j - i, [&](std::size_t offset, std::size_t length) {
      released_bytes_ += storage_.release(offset, length);
    });
    for (std::size_t k = i; k < j; ++k) pool.clear_dirty(ids[k]);
    i = j;
  }
}

template <class PressureSource, std::size_t BlockSize>
void UnifiedKVCache<PressureSource, BlockSize>::release_all_free_pages() noexcept {
  if (swept_generation_ == blocks_.free_generation()) return;  // nothing freed since the last sweep
  swept_generation_ = blocks_.free_generation();
  release_scratch_.clear();
  const detail::BlockPool& pool = blocks_.pool();
  pool.for_each_free([&](BlockId b) {
    if (pool.dirty(b)) release_scratch_.push_back(b);
  });
  release_pages(release_scratch_);
}

}  // namespace izwi
