#pragma once
// Where K/V bytes go, shared by both caches: the sizing rules (shape checks,
// block bytes, how many blocks a budget holds), the layout of one allocation
// into per-layer K and V arrays, and a 64-byte-aligned heap buffer.
//
// One allocation holds, layer after layer, that layer's K array then its V
// array. Each array is [block][position in block][kv head][head dim] for every
// block including the null block 0, padded to the allocation's alignment, so
// every array starts aligned and slot s of a layer starts at s * row_bytes.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "izwi/concepts/kv_cache.hpp"
#include "izwi/core/error.hpp"
#include "izwi/core/ids.hpp"
#include "izwi/core/kv_cache_shape.hpp"

namespace izwi::detail {

/// Alignment of the paged cache's arrays: a cache line, and enough for any SIMD load.
inline constexpr std::size_t kv_array_alignment = 64;

/// Throws invalid_argument naming the first unusable field of `shape`.
void validate_kv_cache_shape(const KVCacheShape& shape);

/// K plus V bytes of one block across all layers; throws if that overflows.
std::size_t kv_bytes_per_block(const KVCacheShape& shape, std::size_t block_size);

/// Usable blocks that fit `budget` bytes when the null block's storage is paid
/// from the same budget. Throws invalid_argument(`field`) when not even one fits.
std::size_t kv_blocks_for_budget(std::size_t budget, std::size_t bytes_per_block, const char* field);

/// How one allocation is cut into per-layer K and V arrays.
struct KVStorageLayout {
  std::uint32_t num_layers = 0;
  /// Bytes of one block in one layer's K (or V) array.
  std::size_t block_bytes = 0;
  /// Bytes of one layer's K (or V) array, padded to the alignment.
  std::size_t array_bytes = 0;

  /// Lays out `num_blocks_with_null` blocks (the null block included).
  KVStorageLayout(const KVCacheShape& shape, std::size_t block_size, std::size_t num_blocks_with_null,
                  std::size_t alignment);

  std::size_t total_bytes() const noexcept { return array_bytes * 2u * num_layers; }
  KVLayerView view(std::byte* base, std::uint32_t layer) const noexcept {
    if (layer >= num_layers) return {};
    std::byte* keys = base + 2u * layer * array_bytes;
    return {keys, keys + array_bytes};
  }
  /// Copies the first `rows` token positions of block `from` into block `to`,
  /// in every layer's K and V array (`row_bytes`: one position's bytes).
  void copy_block_rows(std::byte* base, BlockId from, BlockId to, std::size_t rows,
                       std::size_t row_bytes) const noexcept {
    for (std::size_t array = 0; array < 2u * num_layers; ++array) {
      std::byte* start = base + array * array_bytes;
      std::memcpy(start + to * block_bytes, start + from * block_bytes, rows * row_bytes);
    }
  }
  /// Calls f(offset, length) for the bytes of blocks [first, first + count) in
  /// each of the 2 × num_layers arrays.
  template <class F>
  void for_each_block_range(BlockId first, std::size_t count, F&& f) const {
    for (std::size_t array = 0; array < 2u * num_layers; ++array) {
      f(array * array_bytes + first * block_bytes, count * block_bytes);
    }
  }
};

/// Heap memory for the paged cache: aligned, uninitialised except what the
/// owner zeroes, released with the matching aligned delete.
class AlignedHostBuffer {
 public:
  AlignedHostBuffer() = default;
  AlignedHostBuffer(std::size_t bytes, std::size_t alignment)
      : data_(static_cast<std::byte*>(::operator new(bytes, std::align_val_t{alignment})), Deleter{alignment}),
        size_(bytes) {}
  std::byte* data() const noexcept { return data_.get(); }
  std::size_t size() const noexcept { return size_; }

 private:
  struct Deleter {
    std::size_t alignment;
    void operator()(std::byte* p) const noexcept { ::operator delete(p, std::align_val_t{alignment}); }
  };
  std::unique_ptr<std::byte, Deleter> data_{nullptr, Deleter{kv_array_alignment}};
  std::size_t size_ = 0;
};

}  // namespace izwi::detail

#include "izwi/kv_cache/detail/impl/kv_storage.hpp"
