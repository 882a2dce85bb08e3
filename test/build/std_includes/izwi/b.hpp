#pragma once
#include "izwi/a.hpp"

namespace fixture {
inline std::vector<int> twice(int x) { return {x, x}; }  // <vector> through a.hpp
std::optional<int> parse(const char* text);               // gap: the body's <optional> is left out
}  // namespace fixture

#if !defined(IZWI_SEPARATE_COMPILATION)
#include "izwi/impl/b.hpp"
#endif
