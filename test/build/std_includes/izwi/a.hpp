#pragma once
// Fixture of scripts/check_std_includes.py's test (test/build/CMakeLists.txt).
// Names std::mutex in a comment only: not a use.
#include <vector>

namespace fixture {
inline const char* name() { return "std::thread in a string is not a use"; }
inline int smaller(std::vector<int> v) { return std::min(v[0], v[1]); }  // gap: <algorithm>
}  // namespace fixture
