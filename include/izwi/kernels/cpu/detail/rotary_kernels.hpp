#pragma once
// Rotary embedding of izwi/kernels/cpu/rotary.hpp, written once over the SIMD
// architecture (see simd.hpp); reached through dispatch.hpp.

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <span>

#include "izwi/kernels/cpu/detail/simd.hpp"
#include "izwi/kernels/cpu/rotary.hpp"

namespace izwi::kernels::cpu::detail::inline IZWI_KERNELS_VARIANT {

template <class Arch>
inline void apply_rotary(float* x, std::size_t ld, std::size_t heads, std::size_t head_dim,
                         std::span<const std::int64_t> positions, const RotaryTable& table) noexcept {
  using S = Simd<Arch>;
  constexpr std::size_t L = S::lanes;
  const std::size_t half = table.rotary_dim() / 2;
  for (std::size_t r = 0; r < positions.size(); ++r) {
    assert(positions[r] >= 0 && static_cast<std::size_t>(positions[r]) < table.max_positions());
    const float* c = table.cos(static_cast<std::size_t>(positions[r]));
    const float* s = table.sin(static_cast<std::size_t>(positions[r]));
    for (std::size_t h = 0; h < heads; ++h) {
      float* x1 = x + r * ld + h * head_dim;
      float* x2 = x1 + half;
      std::size_t i = 0;
      for (; i + L <= half; i += L) {
        const auto a = S::load(x1 + i), b = S::load(x2 + i), vc = S::load(c + i), vs = S::load(s + i);
        S::store(x1 + i, a * vc - b * vs);
        S::store(x2 + i, b * vc + a * vs);
      }
      for (; i < half; ++i) {
        const float a = x1[i], b = x2[i];
        x1[i] = a * c[i] - b * s[i];
        x2[i] = b * c[i] + a * s[i];
      }
    }
  }
}

}  // namespace izwi::kernels::cpu::detail::inline IZWI_KERNELS_VARIANT
