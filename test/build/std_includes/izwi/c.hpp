#pragma once
#include <map>
#include <string>

#include "izwi/b.hpp"

namespace fixture {
inline std::map<std::string, int, std::less<>> table;  // <map> declares std::less
inline std::optional<int> first() { return parse("1"); }  // gap: b's body is not followed
}  // namespace fixture
