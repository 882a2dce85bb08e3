#pragma once
// Bodies of izwi/kernels/cpu/rotary.hpp.

#include <cassert>
#include <cmath>
#include <cstddef>

#include "izwi/kernels/cpu/detail/simd.hpp"

namespace izwi::kernels::cpu {

inline RotaryTable::RotaryTable(std::size_t rotary_dim, double theta, std::size_t max_positions)
    : rotary_dim_(rotary_dim), max_positions_(max_positions) {
  const std::size_t half = rotary_dim / 2;
  cos_.resize(max_positions * half);
  sin_.resize(max_positions * half);
  std::vector<double> inv_freq(half);
  for (std::size_t i = 0; i < half; ++i)
    inv_freq[i] = std::pow(theta, -static_cast<double>(2 * i) / static_cast<double>(rotary_dim));
  for (std::size_t p = 0; p < max_positions; ++p)
    for (std::size_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(p) * inv_freq[i];
      cos_[p * half + i] = static_cast<float>(std::cos(angle));
      sin_[p * half + i] = static_cast<float>(std::sin(angle));
    }
}

namespace detail {

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

}  // namespace detail

inline void apply_rotary(float* x, std::size_t ld, std::size_t heads, std::size_t head_dim,
                         std::span<const std::int64_t> positions, const RotaryTable& table) noexcept {
  assert(table.rotary_dim() <= head_dim);
  detail::apply_rotary<detail::KernelArch>(x, ld, heads, head_dim, positions, table);
}

}  // namespace izwi::kernels::cpu
