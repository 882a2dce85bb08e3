#pragma once
// A small JSON tree for the few short parts of tokenizer.json whose shape
// varies (normalizer, pre_tokenizer, decoder, post_processor): read through
// JsonCursor, then inspected. The big parts (vocabulary, merges) never go
// through it.

#include <izwi/tokenizer/detail/json_cursor.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace izwi::tokenizer::detail {

struct JsonValue {
  JsonCursor::Kind kind = JsonCursor::Kind::null;
  std::string text;  ///< string value, or a number's spelling
  bool boolean = false;
  // Object members as two parallel vectors: a vector of pair<string, JsonValue>
  // would need JsonValue complete here, which it is not yet.
  std::vector<std::string> keys;
  std::vector<JsonValue> values;
  std::vector<JsonValue> elements;

  /// The last member named `key` (a later duplicate overrides, as in Serde), or null.
  const JsonValue* find(std::string_view key) const noexcept {
    for (std::size_t i = keys.size(); i-- > 0;)
      if (keys[i] == key) return &values[i];
    return nullptr;
  }
  bool is_null() const noexcept { return kind == JsonCursor::Kind::null; }
  bool is_string(std::string_view s) const noexcept { return kind == JsonCursor::Kind::string && text == s; }
  /// The "type" member of an object, or "".
  std::string_view type() const noexcept {
    const JsonValue* t = find("type");
    return t && t->kind == JsonCursor::Kind::string ? std::string_view(t->text) : std::string_view();
  }
  /// A boolean member, `fallback` when absent or null.
  bool flag(std::string_view key, bool fallback) const noexcept {
    const JsonValue* v = find(key);
    return v && v->kind == JsonCursor::Kind::boolean ? v->boolean : fallback;
  }
};

inline JsonValue read_json_value(JsonCursor& in, std::size_t depth = 0) {
  if (depth > JsonCursor::max_depth) in.fail("nesting too deep");
  JsonValue v;
  v.kind = in.peek();
  switch (v.kind) {
    case JsonCursor::Kind::object: {
      in.begin_object();
      std::string key;
      while (in.next_member(key)) {
        v.keys.push_back(key);
        v.values.push_back(read_json_value(in, depth + 1));
      }
      break;
    }
    case JsonCursor::Kind::array:
      in.begin_array();
      while (in.next_element()) v.elements.push_back(read_json_value(in, depth + 1));
      break;
    case JsonCursor::Kind::string: in.read_string_into(v.text); break;
    case JsonCursor::Kind::number: v.text = in.read_number_text(); break;
    case JsonCursor::Kind::boolean: v.boolean = in.read_bool(); break;
    case JsonCursor::Kind::null: in.try_null(); break;
  }
  return v;
}

}  // namespace izwi::tokenizer::detail
