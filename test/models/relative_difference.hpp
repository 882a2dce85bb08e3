#pragma once
// The comparison the model tests state their float tolerances in.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <span>

namespace izwi::testing {

/// max |a - b| relative to max |b|.
inline double relative_difference(std::span<const float> a, std::span<const float> b) {
  REQUIRE(a.size() == b.size());
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  }
  return diff / scale;
}

}  // namespace izwi::testing
