#pragma once
// Bodies of izwi/kernels/cpu/elementwise.hpp: the variant chosen at start-up
// (dispatch.hpp) runs the kernels of detail/elementwise_kernels.hpp.

#include <cassert>
#include <cstddef>

#include "izwi/kernels/cpu/dispatch.hpp"

namespace izwi::kernels::cpu {

inline void rms_norm(const float* x, std::size_t ldx, std::size_t rows, std::size_t n, const float* weight, float eps,
                     float* y, std::size_t ldy) noexcept {
  active_kernels().rms_norm(x, ldx, rows, n, weight, eps, y, ldy);
}
inline void rms_norm_heads(float* x, std::size_t ld, std::size_t rows, std::size_t heads, std::size_t head_dim,
                           const float* weight, float eps) noexcept {
  active_kernels().rms_norm_heads(x, ld, rows, heads, head_dim, weight, eps);
}
inline void silu_mul(const float* gate, const float* up, float* out, std::size_t n) noexcept {
  active_kernels().silu_mul(gate, up, out, n);
}
inline void softmax(float* x, std::size_t n) noexcept { active_kernels().softmax(x, n); }
inline void add_inplace(float* y, const float* x, std::size_t n) noexcept { active_kernels().add_inplace(y, x, n); }
inline void layer_norm(const float* x, std::size_t ldx, std::size_t rows, std::size_t n, const float* weight,
                       const float* bias, float eps, float* y, std::size_t ldy) noexcept {
  active_kernels().layer_norm(x, ldx, rows, n, weight, bias, eps, y, ldy);
}
inline void gelu(float* x, std::size_t n) noexcept { active_kernels().gelu(x, n); }
inline void embedding_gather(const WeightMatrix& table, std::span<const TokenId> ids, float* out,
                             std::size_t ld) noexcept {
  const KernelTable& kernels = active_kernels();
  for (std::size_t t = 0; t < ids.size(); ++t) {
    assert(ids[t] >= 0 && static_cast<std::size_t>(ids[t]) < table.rows);
    kernels.dequantize_row(table, static_cast<std::size_t>(ids[t]), out + t * ld);
  }
}

}  // namespace izwi::kernels::cpu
