#pragma once
// Reading the JSON files of a model directory (config.json,
// generation_config.json, tokenizer_config.json, model.safetensors.index.json,
// tokenizer.json) through Boost.JSON, the one JSON library of izwi (the server
// speaks it too).
//
// Boost.JSON does the parsing (strict RFC 8259 by default: no comments, no
// trailing commas, no NaN/Infinity, strings validated as UTF-8, surrogate
// escapes paired); this layer adds what a model loader needs on top:
//   - a refused document throws json_error naming the file, line and column
//     and saying what is wrong there ("expected ':' after an object key",
//     "invalid UTF-8 in a string", ...), not only "syntax error";
//   - duplicate object keys are refused (Boost.JSON would keep the last);
//   - numbers beyond the range of a double are refused (Boost.JSON would
//     give infinity); a UTF-8 byte order mark is refused with its name;
//   - nesting is capped (json_max_depth) and files are size-capped.
//
//   izwi::io::JsonValue doc = izwi::io::read_json_file("config.json");
//   if (const auto* h = izwi::io::json_find(doc, "hidden_size")) izwi::io::json_integer(*h);
//
// Linking: Boost.JSON has a compiled part. The izwi::izwi CMake target links
// Boost::json (Debian: libboost-json1.81-dev). A program built without CMake
// links -lboost_json, or instead compiles <boost/json/src.hpp> in exactly one
// of its translation units (Boost.JSON's header-only mode).

#include <izwi/config.hpp>
#include <izwi/core/error.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/storage_ptr.hpp>
#include <boost/json/string.hpp>
#include <boost/json/value.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace izwi::io {

using JsonValue = boost::json::value;
using JsonObject = boost::json::object;
using JsonArray = boost::json::array;

/// A JSON document was refused. `what()` reads
/// "<file>: invalid JSON at line L, column C: <problem>".
class json_error : public izwi::error {
 public:
  json_error(std::string file, std::size_t line, std::size_t column, const std::string& problem,
             std::size_t offset = 0);
  const std::string& file() const noexcept { return file_; }
  std::size_t line() const noexcept { return line_; }      ///< 1-based
  std::size_t column() const noexcept { return column_; }  ///< 1-based, in bytes
  std::size_t offset() const noexcept { return offset_; }  ///< 0-based, in bytes from the document's start
  /// What is wrong, without the file and position.
  const std::string& problem() const noexcept { return problem_; }

 private:
  std::string file_;
  std::size_t line_;
  std::size_t column_;
  std::size_t offset_;
  std::string problem_;
};

/// Deepest nesting of arrays and objects accepted.
inline constexpr std::size_t json_max_depth = 256;
/// Largest file read_json_file() accepts (tokenizer.json files are ~10 MB).
inline constexpr std::uintmax_t json_max_file_bytes = 512u << 20;

/// Parses a whole document; `display_name` stands for it in errors. The tree
/// allocates from `storage` (a boost::json::monotonic_resource makes a large
/// document, such as tokenizer.json, quick to build and to free).
JsonValue parse_json(std::string_view text, std::string_view display_name = "<memory>",
                     boost::json::storage_ptr storage = {});

/// Reads and parses a file (izwi::error if it cannot be read or exceeds
/// json_max_file_bytes; json_error if it is not valid JSON).
JsonValue read_json_file(const std::filesystem::path& path, boost::json::storage_ptr storage = {});

/// `text` as a JSON string literal, quotes included (for writers).
std::string json_quote(std::string_view text);

// --- reading a tree --------------------------------------------------------

/// Member `key` of an object; nullptr if absent or if `value` is no object.
const JsonValue* json_find(const JsonValue& value, std::string_view key) noexcept;

/// The exact value of a number written as an integer that fits in int64;
/// nullopt for fractions, exponents, larger integers and non-numbers.
std::optional<std::int64_t> json_integer(const JsonValue& value) noexcept;

/// A number's value as a double; nullopt for non-numbers.
std::optional<double> json_number(const JsonValue& value) noexcept;

/// A string's contents; nullopt for non-strings.
std::optional<std::string_view> json_string(const JsonValue& value) noexcept;

/// "null", "a boolean", "a number", "a string", "an array", "an object":
/// for messages such as "is an array, not a string".
std::string json_kind_phrase(const JsonValue& value);

}  // namespace izwi::io

#if !defined(IZWI_SEPARATE_COMPILATION)
#include <izwi/io/impl/json.ipp>
#endif
