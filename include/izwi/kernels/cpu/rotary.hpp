#pragma once
// Rotary position embedding in the NeoX / Hugging Face "rotate_half" layout
// (Llama, Qwen2/3): a head's first rotary_dim values are two halves x1, x2,
// and dimension pair (i, i + rotary_dim/2) is rotated by the angle
// pos * theta^(-2i / rotary_dim):
//   x1' = x1 cos - x2 sin,   x2' = x2 cos + x1 sin.
// Values past rotary_dim (partial rotary) are left alone.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace izwi::kernels::cpu {

/// cos and sin of every angle for positions [0, max_positions), computed once
/// in double precision (then rounded to float) when a model is loaded.
class RotaryTable {
 public:
  RotaryTable() = default;
  /// rotary_dim even; theta is the model's rope_theta (1e6 for Qwen3).
  RotaryTable(std::size_t rotary_dim, double theta, std::size_t max_positions);

  std::size_t rotary_dim() const noexcept { return rotary_dim_; }
  std::size_t max_positions() const noexcept { return max_positions_; }
  /// rotary_dim / 2 values for position pos (< max_positions()).
  const float* cos(std::size_t pos) const noexcept { return cos_.data() + pos * (rotary_dim_ / 2); }
  const float* sin(std::size_t pos) const noexcept { return sin_.data() + pos * (rotary_dim_ / 2); }

 private:
  std::size_t rotary_dim_ = 0;
  std::size_t max_positions_ = 0;
  std::vector<float> cos_, sin_;
};

/// Rotates, in place, `heads` heads of head_dim values in each of
/// positions.size() rows (row r starts at x + r * ld, its heads back to back)
/// by the row's position. Positions must be below table.max_positions() and
/// table.rotary_dim() <= head_dim.
inline void apply_rotary(float* x, std::size_t ld, std::size_t heads, std::size_t head_dim,
                         std::span<const std::int64_t> positions, const RotaryTable& table) noexcept;

}  // namespace izwi::kernels::cpu

#include "izwi/kernels/cpu/impl/rotary.hpp"
