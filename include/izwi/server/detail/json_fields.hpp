#pragma once
// Typed reads of JSON request fields that fail with an ApiError 400 naming
// the field by its JSON path ("messages[1].content"). Used by the OpenAI
// request parsers; the messages say what was expected and what came instead,
// so a client can fix the request without reading our source.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "izwi/io/detail/utf8.hpp"
#include "izwi/server/api_error.hpp"

namespace izwi::server::detail {

inline std::string json_path(std::string_view parent, std::string_view key) {
  std::string path(parent);
  if (!path.empty()) path += '.';
  path += key;
  return path;
}

inline std::string json_path(std::string_view parent, std::size_t index) {
  std::string path(parent);
  path += '[';
  path += std::to_string(index);
  path += ']';
  return path;
}

/// The field's value, or nullptr when it is absent or null (OpenAI clients
/// send null for "not set").
inline const boost::json::value* find_field(const boost::json::object& object, std::string_view key) noexcept {
  const boost::json::value* value = object.if_contains(key);
  return value && !value->is_null() ? value : nullptr;
}

inline std::string_view json_kind(const boost::json::value& value) noexcept {
  switch (value.kind()) {
    case boost::json::kind::null: return "null";
    case boost::json::kind::bool_: return "a boolean";
    case boost::json::kind::int64:
    case boost::json::kind::uint64: return "an integer";
    case boost::json::kind::double_: return "a number";
    case boost::json::kind::string: return "a string";
    case boost::json::kind::array: return "an array";
    case boost::json::kind::object: return "an object";
  }
  return "a value";
}

[[noreturn]] inline void throw_type_error(const std::string& path, std::string_view expected,
                                          const boost::json::value& got) {
  std::string message = "'" + path + "' must be ";
  message += expected;
  message += ", got ";
  message += json_kind(got);
  throw ApiError::bad_request(message, path);
}

[[noreturn]] inline void throw_invalid(const std::string& path, const std::string& message) {
  throw ApiError::bad_request(message, path);
}

/// A string that must be well-formed UTF-8 (the body is parsed with
/// invalid UTF-8 allowed so that this error can name the field).
inline std::string read_string(const boost::json::value& value, const std::string& path) {
  if (!value.is_string()) throw_type_error(path, "a string", value);
  const boost::json::string& s = value.get_string();
  const std::string_view text(s.data(), s.size());
  if (!izwi::io::detail::is_valid_utf8(text)) throw_invalid(path, "'" + path + "' is not valid UTF-8");
  return std::string(text);
}

inline bool read_bool(const boost::json::value& value, const std::string& path) {
  if (!value.is_bool()) throw_type_error(path, "a boolean", value);
  return value.get_bool();
}

inline double read_number(const boost::json::value& value, const std::string& path) {
  switch (value.kind()) {
    case boost::json::kind::int64: return static_cast<double>(value.get_int64());
    case boost::json::kind::uint64: return static_cast<double>(value.get_uint64());
    case boost::json::kind::double_: return value.get_double();
    default: throw_type_error(path, "a number", value);
  }
}

/// An integer in [min, max]; a number with an integral value (2.0) counts.
inline std::int64_t read_integer(const boost::json::value& value, const std::string& path, std::int64_t min,
                                 std::int64_t max) {
  std::int64_t result = 0;
  bool in_range = true;
  switch (value.kind()) {
    case boost::json::kind::int64: result = value.get_int64(); break;
    case boost::json::kind::uint64:
      if (value.get_uint64() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) in_range = false;
      else result = static_cast<std::int64_t>(value.get_uint64());
      break;
    case boost::json::kind::double_: {
      const double d = value.get_double();
      if (!(std::isfinite(d) && d == std::floor(d))) throw_type_error(path, "an integer", value);
      if (!(d >= -9.2e18 && d <= 9.2e18)) in_range = false;
      else result = static_cast<std::int64_t>(d);
      break;
    }
    default: throw_type_error(path, "an integer", value);
  }
  if (!in_range || result < min || result > max) {
    std::string message = "'" + path + "' must be an integer ";
    if (max == std::numeric_limits<std::int64_t>::max()) message += ">= " + std::to_string(min);
    else message += "in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
    if (in_range) message += ", got " + std::to_string(result);
    throw_invalid(path, message);
  }
  return result;
}

inline const boost::json::array& read_array(const boost::json::value& value, const std::string& path) {
  if (!value.is_array()) throw_type_error(path, "an array", value);
  return value.get_array();
}

inline const boost::json::object& read_object(const boost::json::value& value, const std::string& path) {
  if (!value.is_object()) throw_type_error(path, "an object", value);
  return value.get_object();
}

}  // namespace izwi::server::detail
