#pragma once
// The handler izwi::io::parse_json gives Boost.JSON's basic_parser: it builds
// the boost::json::value tree through Boost's value_stack (as boost::json::parser
// does) and adds the checks that parser lacks (duplicate keys, numbers beyond
// a double) plus the context a refused document is described with.

#include <izwi/io/json.hpp>

#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/value_stack.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace izwi::io::detail {

class JsonTreeBuilder {
 public:
  using error_code = boost::system::error_code;
  using string_view = boost::json::string_view;

  static constexpr std::size_t max_object_size = boost::json::object::max_size();
  static constexpr std::size_t max_array_size = boost::json::array::max_size();
  static constexpr std::size_t max_key_size = boost::json::string::max_size();
  static constexpr std::size_t max_string_size = boost::json::string::max_size();

  /// The last thing the parser finished, for describing what it expected next.
  enum class Last : std::uint8_t { nothing, container_begin, key, value };

  /// `find_duplicates`: keep every object's keys to name the first repeated
  /// one (a second pass, run only once a repeat is known to exist).
  JsonTreeBuilder(boost::json::storage_ptr storage, bool find_duplicates)
      : find_duplicates_(find_duplicates) {
    stack_.reset(std::move(storage));
  }

  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }
  bool on_object_begin(error_code&) { return open('{'); }
  bool on_object_end(std::size_t n, error_code&) {
    stack_.push_object(n);
    members_parsed_ += n;
    if (find_duplicates_) keys_.pop_back();
    return close();
  }
  bool on_array_begin(error_code&) { return open('['); }
  bool on_array_end(std::size_t n, error_code&) {
    stack_.push_array(n);
    return close();
  }
  bool on_key_part(string_view s, std::size_t, error_code&) {
    stack_.push_chars(s);
    if (find_duplicates_) key_.append(s.data(), s.size());
    return true;
  }
  bool on_key(string_view s, std::size_t, error_code& ec) {
    stack_.push_key(s);
    last_ = Last::key;
    if (!find_duplicates_) return true;
    key_.append(s.data(), s.size());
    const bool fresh = keys_.back().insert(key_).second;
    if (!fresh) return refuse(ec, "duplicate key '" + key_ + "' in an object");
    key_.clear();
    return true;
  }
  bool on_string_part(string_view s, std::size_t, error_code&) {
    stack_.push_chars(s);
    return true;
  }
  bool on_string(string_view s, std::size_t, error_code&) {
    stack_.push_string(s);
    return value();
  }
  bool on_number_part(string_view, error_code&) { return true; }
  bool on_int64(std::int64_t i, string_view, error_code&) {
    stack_.push_int64(i);
    return value();
  }
  bool on_uint64(std::uint64_t u, string_view, error_code&) {
    stack_.push_uint64(u);
    return value();
  }
  bool on_double(double d, string_view, error_code& ec) {
    // Underflow to zero is harmless (1e-400 is 0 for every model); overflow
    // is not a number izwi can use.
    if (!std::isfinite(d)) return refuse(ec, "number out of the range of a double");
    stack_.push_double(d);
    return value();
  }
  bool on_bool(bool b, error_code&) {
    stack_.push_bool(b);
    return value();
  }
  bool on_null(error_code&) {
    stack_.push_null();
    return value();
  }
  bool on_comment_part(string_view, error_code&) { return true; }
  bool on_comment(string_view, error_code&) { return true; }

  JsonValue release() { return stack_.release(); }
  /// Members of all objects as written, repeated keys included.
  std::size_t members_parsed() const noexcept { return members_parsed_; }
  /// Set when this handler (not the grammar) refused the document.
  const std::string& refusal() const noexcept { return refusal_; }
  /// Innermost open container ('{' or '[', 0 at the top level) and the last
  /// thing finished in it.
  char container() const noexcept { return containers_.empty() ? '\0' : containers_.back(); }
  Last last() const noexcept { return last_; }

 private:
  bool open(char bracket) {
    containers_.push_back(bracket);
    last_ = Last::container_begin;
    if (find_duplicates_ && bracket == '{') keys_.emplace_back();
    return true;
  }
  bool close() {
    containers_.pop_back();
    return value();
  }
  bool value() {
    last_ = Last::value;
    return true;
  }
  bool refuse(error_code& ec, std::string problem) {
    refusal_ = std::move(problem);
    ec = boost::json::error::exception;  // any code: refusal_ says what happened
    return false;
  }

  boost::json::value_stack stack_;
  bool find_duplicates_;
  std::size_t members_parsed_ = 0;
  std::vector<char> containers_;
  Last last_ = Last::nothing;
  std::string refusal_;
  std::string key_;
  std::vector<std::unordered_set<std::string>> keys_;
};

/// Members of every object in the tree (fewer than were parsed if a key was repeated).
inline std::size_t json_members_kept(const JsonValue& value) noexcept {
  std::size_t n = 0;
  if (const auto* object = value.if_object()) {
    n += object->size();
    for (const auto& member : *object) n += json_members_kept(member.value());
  } else if (const auto* array = value.if_array()) {
    for (const auto& element : *array) n += json_members_kept(element);
  }
  return n;
}

/// Whether text[at] lies inside a string literal, and whether it directly
/// follows that string's unescaped backslash. Boost.JSON accepted
/// text[0, at), so quotes and backslashes there have their JSON meaning.
struct JsonStringPosition {
  bool in_string = false;
  bool after_backslash = false;
};
inline JsonStringPosition json_string_position(std::string_view text, std::size_t at) noexcept {
  JsonStringPosition where;
  for (std::size_t i = 0; i < at && i < text.size(); ++i) {
    const char c = text[i];
    if (where.after_backslash) {
      where.after_backslash = false;
    } else if (where.in_string && c == '\\') {
      where.after_backslash = true;
    } else if (c == '"') {
      where.in_string = !where.in_string;
    }
  }
  return where;
}

/// True if a \u escape of a high surrogate (D800-DBFF) ends within the few
/// bytes before `at`.
inline bool json_high_surrogate_before(std::string_view text, std::size_t at) noexcept {
  const std::size_t from = at >= 12 ? at - 12 : 0;
  for (std::size_t i = from; i + 6 <= at && i + 6 <= text.size(); ++i) {
    if (text[i] != '\\' || (text[i + 1] != 'u') || (text[i + 2] != 'd' && text[i + 2] != 'D')) continue;
    const char c = text[i + 3];
    if (c == '8' || c == '9' || c == 'a' || c == 'b' || c == 'A' || c == 'B') return true;
  }
  return false;
}

/// What is wrong inside a string literal at text[at].
inline std::string json_string_problem(std::string_view text, std::size_t at, bool after_backslash,
                                       boost::system::error_code ec) {
  using boost::json::error;
  if (ec == error::incomplete) return "unterminated string";
  if (ec == error::expected_hex_digit) return "bad hex digit in a \\u escape";
  // Boost.JSON says "syntax error" for a high surrogate not followed by an
  // escape, "illegal trailing surrogate" for the other two cases.
  if (json_high_surrogate_before(text, at)) return "high surrogate in a \\u escape without its low half";
  if (ec == error::illegal_leading_surrogate || ec == error::illegal_trailing_surrogate)
    return "lone low surrogate in a \\u escape";
  if (after_backslash) return "unknown escape in a string (JSON allows \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u)";
  if (at < text.size()) {
    const auto c = static_cast<unsigned char>(text[at]);
    if (c < 0x20) return "control character inside a string (must be escaped)";
    if (c >= 0x80) return "invalid UTF-8 in a string";
  }
  return "malformed string";
}

/// What is wrong inside a number whose previous byte is text[at - 1], or "".
inline std::string json_number_problem(std::string_view text, std::size_t at) {
  if (at == 0 || at > text.size()) return "";
  const char before = text[at - 1];
  const auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  // A '0' that begins the integer part (not preceded by a digit or '.') and a digit after it.
  const bool zero_starts_number = before == '0' && (at < 2 || (!is_digit(text[at - 2]) && text[at - 2] != '.'));
  if (zero_starts_number && at < text.size() && is_digit(text[at])) return "number with a leading zero";
  if (before == '-' && (at < 2 || (text[at - 2] != 'e' && text[at - 2] != 'E'))) return "a '-' must be followed by digits";
  if (before == '.') return "a '.' in a number must be followed by digits";
  if (before == 'e' || before == 'E' || before == '+' || before == '-') return "an exponent in a number must have digits";
  return "";
}

/// What the grammar wanted at text[at], outside strings and numbers.
inline std::string json_structure_problem(std::string_view text, std::size_t at, const JsonTreeBuilder& builder) {
  using Last = JsonTreeBuilder::Last;
  std::size_t p = at;
  while (p > 0 && (text[p - 1] == ' ' || text[p - 1] == '\t' || text[p - 1] == '\n' || text[p - 1] == '\r')) --p;
  const char previous = p > 0 ? text[p - 1] : '\0';
  const char here = at < text.size() ? text[at] : '\0';
  const char container = builder.container();
  const Last last = builder.last();
  if (container == '{') {
    if (last == Last::key) {
      if (previous != ':') return "expected ':' after an object key";
    } else if (last == Last::container_begin || previous == ',') {
      if (previous == ',' && here == '}') return "expected a string key after ',' (no trailing commas in JSON)";
      return "expected a string key in an object";
    } else {
      return "expected ',' or '}' in an object";
    }
  } else if (container == '[' && last == Last::value && previous != ',') {
    return "expected ',' or ']' in an array";
  }
  if (previous == ',' && here == ']') return "expected a value after ',' (no trailing commas in JSON)";
  if (here == '/') return "expected a value, found a comment (comments are not JSON)";
  return "unexpected character, expected a value (object, array, string, number, true, false or null)";
}

/// Describes why Boost.JSON stopped at text[at] with `ec`.
inline std::string json_problem(std::string_view text, std::size_t at, boost::system::error_code ec,
                                const JsonTreeBuilder& builder) {
  using boost::json::error;
  if (!builder.refusal().empty()) return builder.refusal();
  if (ec == error::too_deep) return "nesting deeper than " + std::to_string(json_max_depth) + " levels";
  if (ec == error::extra_data) return "unexpected bytes after the JSON value";
  if (ec == error::exponent_overflow) return "number out of the range of a double";
  const JsonStringPosition where = json_string_position(text, at);
  if (where.in_string) return json_string_problem(text, at, where.after_backslash, ec);
  if (ec == error::incomplete) {
    std::string wanted = json_structure_problem(text, at, builder);
    const std::string_view generic = "unexpected character, ";
    if (wanted.compare(0, generic.size(), generic) == 0) wanted.erase(0, generic.size());
    return "unexpected end of the document, " + wanted;
  }
  if (std::string number = json_number_problem(text, at); !number.empty()) return number;
  return json_structure_problem(text, at, builder);
}

/// Turns a byte offset into the json_error for it.
[[noreturn]] inline void throw_json_error(std::string_view text, std::string_view file, std::size_t at,
                                          const std::string& problem) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < at && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  throw json_error(std::string(file), line, column, problem, at);
}

/// One pass of Boost.JSON over the whole of `text`.
inline JsonValue parse_json_pass(std::string_view text, std::string_view file, boost::json::storage_ptr storage,
                                 bool find_duplicates, std::size_t& members_parsed) {
  boost::json::parse_options options;  // strict: no comments, trailing commas or invalid UTF-8
  options.max_depth = json_max_depth;
  boost::json::basic_parser<JsonTreeBuilder> parser(options, std::move(storage), find_duplicates);
  boost::system::error_code ec;
  const std::size_t consumed = parser.write_some(false, text.data(), text.size(), ec);
  if (ec) throw_json_error(text, file, consumed, json_problem(text, consumed, ec, parser.handler()));
  if (consumed != text.size()) throw_json_error(text, file, consumed, "unexpected bytes after the JSON value");
  members_parsed = parser.handler().members_parsed();
  return parser.handler().release();
}

}  // namespace izwi::io::detail

namespace izwi::io {

IZWI_DECL JsonValue parse_json(std::string_view text, std::string_view display_name, boost::json::storage_ptr storage) {
  // A UTF-8 byte order mark is not JSON (RFC 8259 §8.1 lets parsers ignore
  // it; Python writes none): refuse it with a clear word rather than "unexpected character".
  if (text.substr(0, 3) == "\xef\xbb\xbf")
    detail::throw_json_error(text, display_name, 0, "byte order mark at the start of the document");
  std::size_t members_parsed = 0;
  JsonValue doc = detail::parse_json_pass(text, display_name, storage, false, members_parsed);
  // Boost.JSON keeps the last of repeated keys. Fewer members in the tree
  // than were parsed means a key was repeated: parse again, keeping each
  // object's keys, to name it and its position.
  if (detail::json_members_kept(doc) != members_parsed) {
    detail::parse_json_pass(text, display_name, std::move(storage), true, members_parsed);
    detail::throw_json_error(text, display_name, 0, "duplicate key in an object");  // not reached
  }
  return doc;
}

}  // namespace izwi::io
