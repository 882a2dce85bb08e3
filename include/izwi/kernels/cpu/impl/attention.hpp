#pragma once
// Bodies of izwi/kernels/cpu/attention.hpp: paged_attention runs the variant
// chosen at start-up (dispatch.hpp, detail/attention_kernels.hpp); store_kv
// is a conversion and copy, compiled here.

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "izwi/core/half.hpp"
#include "izwi/kernels/cpu/dispatch.hpp"

namespace izwi::kernels::cpu {

inline void paged_attention(const float* q, std::span<const AttentionSequence> seqs, const KVLayerView& kv,
                            const AttentionShape& shape, float* out, ThreadPool& pool) noexcept {
  assert(shape.num_kv_heads > 0 && shape.num_heads % shape.num_kv_heads == 0);
  assert(shape.cache_dtype != DType::q8_0);
  active_kernels().paged_attention(q, seqs.data(), seqs.size(), kv, shape, out, pool);
}
inline void store_kv(const float* k, std::size_t ldk, const float* v, std::size_t ldv,
                     std::span<const std::int64_t> slots, const KVLayerView& kv, std::size_t num_kv_heads,
                     std::size_t head_dim, DType cache_dtype) noexcept {
  const std::size_t n = num_kv_heads * head_dim;
  for (std::size_t t = 0; t < slots.size(); ++t) {
    if (slots[t] < 0) continue;
    const std::size_t offset = static_cast<std::size_t>(slots[t]) * n;
    const float* kr = k + t * ldk;
    const float* vr = v + t * ldv;
    switch (cache_dtype) {
      case DType::f32:
        std::memcpy(reinterpret_cast<float*>(kv.keys) + offset, kr, n * 4);
        std::memcpy(reinterpret_cast<float*>(kv.values) + offset, vr, n * 4);
        break;
      case DType::f16:
        f32_to_f16(kr, reinterpret_cast<std::uint16_t*>(kv.keys) + offset, n);
        f32_to_f16(vr, reinterpret_cast<std::uint16_t*>(kv.values) + offset, n);
        break;
      case DType::bf16:
        f32_to_bf16(kr, reinterpret_cast<std::uint16_t*>(kv.keys) + offset, n);
        f32_to_bf16(vr, reinterpret_cast<std::uint16_t*>(kv.values) + offset, n);
        break;
      case DType::q8_0: assert(false && "no quantized KV cache"); break;
    }
  }
}

}  // namespace izwi::kernels::cpu
