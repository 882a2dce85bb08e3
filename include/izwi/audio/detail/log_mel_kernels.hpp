#pragma once
// The elementwise passes of a log-mel frontend, over whole feature matrices,
// in xsimd batches (the widest the compile flags allow; SSE2 at minimum on
// x86-64). xsimd's log10 is within a couple of float ulps of std::log10.

#include <xsimd/xsimd.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace izwi::audio::detail {

/// values[i] = log10(max(values[i], floor)); returns the largest result.
inline float log10_with_floor(float* values, std::size_t count, float floor) noexcept {
  using batch = xsimd::batch<float>;
  constexpr std::size_t width = batch::size;
  const batch floor_batch(floor);
  batch max_batch(std::log10(floor));
  std::size_t i = 0;
  for (; i + width <= count; i += width) {
    const batch v = xsimd::log10(xsimd::max(batch::load_unaligned(values + i), floor_batch));
    max_batch = xsimd::max(max_batch, v);
    v.store_unaligned(values + i);
  }
  alignas(64) float lanes[width];
  max_batch.store_aligned(lanes);
  float largest = *std::max_element(lanes, lanes + width);
  for (; i < count; ++i) {
    values[i] = std::log10(std::max(values[i], floor));
    largest = std::max(largest, values[i]);
  }
  return largest;
}

/// values[i] = (max(values[i], lowest) + offset) * scale.
inline void clamp_shift_scale(float* values, std::size_t count, float lowest, float offset, float scale) noexcept {
  using batch = xsimd::batch<float>;
  constexpr std::size_t width = batch::size;
  const batch lowest_batch(lowest), offset_batch(offset), scale_batch(scale);
  std::size_t i = 0;
  for (; i + width <= count; i += width) {
    const batch v = (xsimd::max(batch::load_unaligned(values + i), lowest_batch) + offset_batch) * scale_batch;
    v.store_unaligned(values + i);
  }
  for (; i < count; ++i) values[i] = (std::max(values[i], lowest) + offset) * scale;
}

/// power[k] = re^2 + im^2 of interleaved (re, im) doubles, rounded to float.
/// Unrolled by two for the straight-line vectoriser (see windowed_frame).
inline void power_to_float(const double* __restrict interleaved, float* __restrict power, std::size_t bins) noexcept {
  std::size_t k = 0;
  for (; k + 2 <= bins; k += 2) {
    const double* c = interleaved + 2 * k;
    power[k] = static_cast<float>(c[0] * c[0] + c[1] * c[1]);
    power[k + 1] = static_cast<float>(c[2] * c[2] + c[3] * c[3]);
  }
  for (; k < bins; ++k) {
    const double* c = interleaved + 2 * k;
    power[k] = static_cast<float>(c[0] * c[0] + c[1] * c[1]);
  }
}

}  // namespace izwi::audio::detail
