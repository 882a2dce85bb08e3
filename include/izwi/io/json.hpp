#pragma once
// A small strict JSON reader for the JSON files of a model directory
// (config.json, generation_config.json, tokenizer_config.json,
// model.safetensors.index.json, tokenizer.json).
//
// Why not Boost.JSON: in Boost 1.81 (Debian 12) Boost.JSON is header-only only
// if exactly one translation unit of the program includes
// <boost/json/src.hpp>; a header-only library cannot promise that for its
// users (two of izwi's headers in two TUs would define the same symbols twice,
// none would leave them undefined). This reader is plain inline C++20 instead.
//
// Strict RFC 8259: one value per document, no comments, no trailing commas, no
// NaN/Infinity, no leading zeros, strings must be valid UTF-8 (no overlong
// forms, no surrogates, escapes paired correctly), duplicate object keys are
// refused, nesting is capped (json_max_depth) so hostile input cannot exhaust
// the stack. A refused document throws json_error with the file, line and column.
//
//   izwi::io::JsonValue doc = izwi::io::read_json_file("config.json");
//   if (const auto* h = doc.find("hidden_size")) h->as_int64();
//
// Numbers keep both their double value and, when the literal is an integer
// (no fraction, no exponent) that fits in int64, the exact integer, so token
// ids and sizes survive without a round trip through double.

#include <izwi/core/error.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace izwi::io {

/// A JSON document was refused. `what()` reads
/// "<file>: invalid JSON at line L, column C: <problem>".
class json_error : public izwi::error {
 public:
  json_error(std::string file, std::size_t line, std::size_t column, const std::string& problem);
  const std::string& file() const noexcept { return file_; }
  std::size_t line() const noexcept { return line_; }      ///< 1-based
  std::size_t column() const noexcept { return column_; }  ///< 1-based, in bytes

 private:
  std::string file_;
  std::size_t line_;
  std::size_t column_;
};

/// Deepest nesting of arrays and objects accepted.
inline constexpr std::size_t json_max_depth = 256;
/// Largest file read_json_file() accepts (tokenizer.json files are ~10 MB).
inline constexpr std::uintmax_t json_max_file_bytes = 512u << 20;

enum class JsonKind : std::uint8_t { null, boolean, number, string, array, object };

/// "null", "boolean", "number", "string", "array", "object".
std::string_view to_string(JsonKind kind) noexcept;

class JsonValue;
namespace detail {
class JsonParser;
}

/// A JSON number: its double value and, for integer literals that fit, the
/// exact int64.
struct JsonNumber {
  double value = 0;
  std::optional<std::int64_t> integer;
};

/// An object: members in document order, keys unique, lookup by key through
/// a hash index built once, when parsing finishes (tokenizer.json's vocabulary
/// object has ~150k keys); small objects are scanned.
class JsonObject {
 public:
  using Member = std::pair<std::string, JsonValue>;

  // (Bodies out of line: JsonValue is incomplete here.)
  const JsonValue* find(std::string_view key) const noexcept;
  bool contains(std::string_view key) const noexcept;
  std::size_t size() const noexcept;
  bool empty() const noexcept;
  std::vector<Member>::const_iterator begin() const noexcept;
  std::vector<Member>::const_iterator end() const noexcept;

  /// Adds a member (for code that builds documents). Returns false, adding
  /// nothing, if the key is already present.
  bool insert(std::string key, JsonValue value);

 private:
  friend class detail::JsonParser;
  // Builds the hash index; returns the first repeated key, if any.
  const std::string* build_index();

  std::vector<Member> members_;
  /// Open-addressing table of member positions + 1 (0 = empty slot), a power
  /// of two at least twice the member count; empty for small objects.
  std::vector<std::uint32_t> slots_;
};

using JsonArray = std::vector<JsonValue>;

/// One JSON value. Accessors `as_*` throw izwi::error "is a <kind>, not a
/// <kind>" when the kind differs; the config layer (config.hpp) turns that
/// into an error naming the file and key.
class JsonValue {
 public:
  JsonValue() noexcept = default;  ///< null
  JsonValue(std::nullptr_t) noexcept {}
  JsonValue(bool b) noexcept : data_(b) {}
  JsonValue(JsonNumber n) noexcept : data_(n) {}
  JsonValue(std::string s) noexcept : data_(std::move(s)) {}
  JsonValue(JsonArray a) noexcept : data_(std::move(a)) {}
  JsonValue(JsonObject o) noexcept : data_(std::move(o)) {}

  JsonKind kind() const noexcept { return static_cast<JsonKind>(data_.index()); }
  bool is_null() const noexcept { return kind() == JsonKind::null; }
  bool is_bool() const noexcept { return kind() == JsonKind::boolean; }
  bool is_number() const noexcept { return kind() == JsonKind::number; }
  /// A number written as an integer literal that fits in int64.
  bool is_integer() const noexcept;
  bool is_string() const noexcept { return kind() == JsonKind::string; }
  bool is_array() const noexcept { return kind() == JsonKind::array; }
  bool is_object() const noexcept { return kind() == JsonKind::object; }

  bool as_bool() const;
  const JsonNumber& as_number() const;
  double as_double() const;
  /// Throws unless is_integer().
  std::int64_t as_int64() const;
  const std::string& as_string() const;
  const JsonArray& as_array() const;
  const JsonObject& as_object() const;

  /// Member `key` of an object; nullptr if absent or if this is no object.
  const JsonValue* find(std::string_view key) const noexcept;

 private:
  std::variant<std::monostate, bool, JsonNumber, std::string, JsonArray, JsonObject> data_;
};

/// Parses a whole document; `display_name` stands for it in errors.
JsonValue parse_json(std::string_view text, std::string_view display_name = "<memory>");

/// Reads and parses a file (izwi::error if it cannot be read or exceeds
/// json_max_file_bytes; json_error if it is not valid JSON).
JsonValue read_json_file(const std::filesystem::path& path);

/// `text` as a JSON string literal, quotes included (for writers).
std::string json_quote(std::string_view text);

}  // namespace izwi::io

#include <izwi/io/impl/json.hpp>
