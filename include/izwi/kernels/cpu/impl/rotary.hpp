#pragma once
// Bodies of izwi/kernels/cpu/rotary.hpp.

#include <cassert>
#include <cmath>
#include <cstddef>
#include <vector>

#include "izwi/kernels/cpu/dispatch.hpp"

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

inline void apply_rotary(float* x, std::size_t ld, std::size_t heads, std::size_t head_dim,
                         std::span<const std::int64_t> positions, const RotaryTable& table) noexcept {
  assert(table.rotary_dim() <= head_dim);
  active_kernels().apply_rotary(x, ld, heads, head_dim, positions, table);
}

}  // namespace izwi::kernels::cpu
