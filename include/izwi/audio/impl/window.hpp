#pragma once
// Bodies of izwi/audio/window.hpp.

#include <cmath>
#include <numbers>

namespace izwi::audio {

template <class Real>
std::vector<Real> hann_window(std::size_t length, WindowSymmetry symmetry) {
  std::vector<Real> window(length);
  if (length == 1) window[0] = Real(1);  // torch's convention; the formula would divide by zero (symmetric)
  if (length <= 1) return window;
  const double denominator =
      static_cast<double>(symmetry == WindowSymmetry::periodic ? length : length - 1);
  for (std::size_t n = 0; n < length; ++n) {
    window[n] = static_cast<Real>(0.5 - 0.5 * std::cos(2.0 * std::numbers::pi * static_cast<double>(n) / denominator));
  }
  return window;
}

}  // namespace izwi::audio
