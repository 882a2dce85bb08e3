#pragma once

#include <limits>

namespace izwi::detail {

namespace kv_storage_detail {
inline std::size_t checked_mul(std::size_t a, std::size_t b, const char* field) {
  std::size_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) {
    throw invalid_argument(field, std::string("the KV cache size overflows: ") + std::to_string(a) + " x " +
                                      std::to_string(b) + " bytes");
  }
  return r;
}
inline std::size_t round_up(std::size_t n, std::size_t to, const char* field) {
  const std::size_t r = n % to;
  if (r == 0) return n;
  if (n > std::numeric_limits<std::size_t>::max() - (to - r)) throw invalid_argument(field, "the KV cache size overflows");
  return n + (to - r);
}
}  // namespace kv_storage_detail

inline void validate_kv_cache_shape(const KVCacheShape& shape) {
  if (shape.num_layers == 0) throw invalid_argument("num_layers", "a KV cache shape needs at least one layer");
  if (shape.num_kv_heads == 0) throw invalid_argument("num_kv_heads", "a KV cache shape needs at least one KV head");
  if (shape.head_dim == 0) throw invalid_argument("head_dim", "a KV cache shape needs head_dim > 0");
  if (dtype_size(shape.dtype) == 0) {
    throw invalid_argument("dtype", std::string("a KV cache holds f32, f16 or bf16, not ") +
                                        std::string(to_string(shape.dtype)));
  }
}

inline std::size_t kv_bytes_per_block(const KVCacheShape& shape, std::size_t block_size) {
  using kv_storage_detail::checked_mul;
  std::size_t b = checked_mul(shape.row_elements(), dtype_size(shape.dtype), "head_dim");
  b = checked_mul(b, 2u * std::size_t{shape.num_layers}, "num_layers");
  return checked_mul(b, block_size, "block_size");
}

inline std::size_t kv_blocks_for_budget(std::size_t budget, std::size_t bytes_per_block, const char* field) {
  const std::size_t whole = budget / bytes_per_block;
  if (whole < 2) {
    throw invalid_argument(field, std::string(field) + " of " + std::to_string(budget) +
                                      " bytes holds no usable KV block: one block takes " +
                                      std::to_string(bytes_per_block) +
                                      " bytes and the reserved null block takes another, so at least " +
                                      std::to_string(2 * bytes_per_block) + " bytes are needed");
  }
  return whole - 1;
}

inline KVStorageLayout::KVStorageLayout(const KVCacheShape& shape, std::size_t block_size,
                                        std::size_t num_blocks_with_null, std::size_t alignment)
    : num_layers(shape.num_layers) {
  using kv_storage_detail::checked_mul;
  block_bytes = checked_mul(checked_mul(shape.row_elements(), dtype_size(shape.dtype), "head_dim"), block_size,
                            "block_size");
  array_bytes = kv_storage_detail::round_up(checked_mul(block_bytes, num_blocks_with_null, "num_blocks"), alignment,
                                            "num_blocks");
  checked_mul(checked_mul(array_bytes, 2, "num_blocks"), num_layers, "num_layers");
}

}  // namespace izwi::detail
