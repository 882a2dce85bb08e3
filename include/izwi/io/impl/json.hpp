#pragma once
// Bodies of include/izwi/io/json.hpp (the parser itself is
// detail/json_parser.hpp, included after this file).

#include <functional>

namespace izwi::io {

inline json_error::json_error(std::string file, std::size_t line, std::size_t column, const std::string& problem)
    : izwi::error(file + ": invalid JSON at line " + std::to_string(line) + ", column " + std::to_string(column) + ": " +
                  problem),
      file_(std::move(file)),
      line_(line),
      column_(column) {}

inline std::string_view to_string(JsonKind kind) noexcept {
  switch (kind) {
    case JsonKind::null: return "null";
    case JsonKind::boolean: return "boolean";
    case JsonKind::number: return "number";
    case JsonKind::string: return "string";
    case JsonKind::array: return "array";
    case JsonKind::object: return "object";
  }
  return "unknown";
}

namespace detail {
/// Objects up to this size are scanned rather than indexed.
inline constexpr std::size_t json_object_scan_limit = 16;
inline std::size_t json_key_hash(std::string_view key) noexcept { return std::hash<std::string_view>{}(key); }
}  // namespace detail

inline const JsonValue* JsonObject::find(std::string_view key) const noexcept {
  if (slots_.empty()) {  // small object (or one under construction): scan
    for (const auto& member : members_)
      if (member.first == key) return &member.second;
    return nullptr;
  }
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = detail::json_key_hash(key) & mask;; i = (i + 1) & mask) {
    const std::uint32_t slot = slots_[i];
    if (slot == 0) return nullptr;
    if (members_[slot - 1].first == key) return &members_[slot - 1].second;
  }
}

inline bool JsonObject::contains(std::string_view key) const noexcept { return find(key) != nullptr; }
inline std::size_t JsonObject::size() const noexcept { return members_.size(); }
inline bool JsonObject::empty() const noexcept { return members_.empty(); }
inline std::vector<JsonObject::Member>::const_iterator JsonObject::begin() const noexcept { return members_.begin(); }
inline std::vector<JsonObject::Member>::const_iterator JsonObject::end() const noexcept { return members_.end(); }

inline bool JsonObject::insert(std::string key, JsonValue value) {
  if (find(key) != nullptr) return false;
  members_.emplace_back(std::move(key), std::move(value));
  build_index();
  return true;
}

inline const std::string* JsonObject::build_index() {
  slots_.clear();
  if (members_.size() <= detail::json_object_scan_limit) {
    for (std::size_t i = 1; i < members_.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (members_[i].first == members_[j].first) return &members_[i].first;
    return nullptr;
  }
  std::size_t capacity = 2;
  while (capacity < 2 * members_.size()) capacity *= 2;
  slots_.assign(capacity, 0);
  const std::size_t mask = capacity - 1;
  for (std::size_t m = 0; m < members_.size(); ++m) {
    std::size_t i = detail::json_key_hash(members_[m].first) & mask;
    for (; slots_[i] != 0; i = (i + 1) & mask)
      if (members_[slots_[i] - 1].first == members_[m].first) {
        slots_.clear();
        return &members_[m].first;
      }
    slots_[i] = static_cast<std::uint32_t>(m + 1);
  }
  return nullptr;
}

namespace detail {
/// "a string", "an array", "null": for messages ("is an array, not a string").
inline std::string json_kind_phrase(JsonKind kind) {
  switch (kind) {
    case JsonKind::null: return "null";
    case JsonKind::array: return "an array";
    case JsonKind::object: return "an object";
    default: return "a " + std::string(to_string(kind));
  }
}
[[noreturn]] inline void json_kind_mismatch(JsonKind have, std::string_view want) {
  throw izwi::error("is " + json_kind_phrase(have) + ", not " + std::string(want));
}
}  // namespace detail

inline bool JsonValue::is_integer() const noexcept {
  const auto* n = std::get_if<JsonNumber>(&data_);
  return n != nullptr && n->integer.has_value();
}

inline bool JsonValue::as_bool() const {
  if (const auto* b = std::get_if<bool>(&data_)) return *b;
  detail::json_kind_mismatch(kind(), "a boolean");
}

inline const JsonNumber& JsonValue::as_number() const {
  if (const auto* n = std::get_if<JsonNumber>(&data_)) return *n;
  detail::json_kind_mismatch(kind(), "a number");
}

inline double JsonValue::as_double() const { return as_number().value; }

inline std::int64_t JsonValue::as_int64() const {
  const JsonNumber& n = as_number();
  if (!n.integer) throw izwi::error("is the number " + std::to_string(n.value) + ", not an integer that fits in 64 bits");
  return *n.integer;
}

inline const std::string& JsonValue::as_string() const {
  if (const auto* s = std::get_if<std::string>(&data_)) return *s;
  detail::json_kind_mismatch(kind(), "a string");
}

inline const JsonArray& JsonValue::as_array() const {
  if (const auto* a = std::get_if<JsonArray>(&data_)) return *a;
  detail::json_kind_mismatch(kind(), "an array");
}

inline const JsonObject& JsonValue::as_object() const {
  if (const auto* o = std::get_if<JsonObject>(&data_)) return *o;
  detail::json_kind_mismatch(kind(), "an object");
}

inline const JsonValue* JsonValue::find(std::string_view key) const noexcept {
  const auto* o = std::get_if<JsonObject>(&data_);
  return o == nullptr ? nullptr : o->find(key);
}

inline std::string json_quote(std::string_view text) {
  std::string out = "\"";
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"') {
      out += "\\\"";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c < 0x20) {
      static constexpr char hex[] = "0123456789abcdef";
      out += "\\u00";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

}  // namespace izwi::io

#include <izwi/io/detail/json_parser.hpp>
