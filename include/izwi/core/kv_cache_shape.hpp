#pragma once
// The shape of a model's KV cache: what a KV cache needs from the model to
// size its storage. The executor reports it (ExecutorPolicy::kv_cache_shape).

#include <cstddef>
#include <cstdint>

#include "izwi/core/dtype.hpp"

namespace izwi {

struct KVCacheShape {
  std::uint32_t num_layers = 0;
  std::uint32_t num_kv_heads = 0;
  std::uint32_t head_dim = 0;
  /// f32, f16 or bf16 (a quantized KV cache would need its own block layout).
  DType dtype = DType::f32;

  /// Bytes of K plus V that one token occupies in one layer.
  constexpr std::size_t bytes_per_token_per_layer() const noexcept {
    return 2u * num_kv_heads * head_dim * dtype_size(dtype);
  }
  /// Bytes of K plus V that one token occupies across all layers.
  constexpr std::size_t bytes_per_token() const noexcept {
    return bytes_per_token_per_layer() * num_layers;
  }
  /// Elements in one token's K (or V) row for one layer: kv heads × head dim.
  constexpr std::size_t row_elements() const noexcept {
    return static_cast<std::size_t>(num_kv_heads) * head_dim;
  }
  friend constexpr bool operator==(const KVCacheShape&, const KVCacheShape&) = default;
};

}  // namespace izwi
