#pragma once
#include <optional>

namespace fixture {
// Sees b.hpp's includes (a.hpp's <vector>) and its own.
inline std::optional<int> parse(const char* text) {
  std::vector<int> digits;
  if (!*text) return std::nullopt;
  return static_cast<int>(*text - '0');
}
}  // namespace fixture
