#pragma once
// The recursive-descent parser behind izwi::io::parse_json. Every read is
// bounds-checked against the text; recursion depth is capped by
// json_max_depth; errors carry the byte offset, turned into line/column only
// when a document is refused.
//
// parse_json() and read_json_file() are defined here, after the parser, so
// that this header and json.hpp each compile on their own whichever comes first.

#include <izwi/io/detail/utf8.hpp>
#include <izwi/io/json.hpp>

#include <charconv>
#include <fstream>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

namespace izwi::io::detail {

class JsonParser {
 public:
  JsonParser(std::string_view text, std::string_view file) : text_(text), file_(file) {}

  JsonValue parse_document() {
    // A UTF-8 byte order mark is not JSON (RFC 8259 §8.1 lets parsers ignore
    // it; Python writes none): refuse it with a clear word rather than "unexpected byte".
    if (text_.substr(0, 3) == "\xef\xbb\xbf") fail("byte order mark at the start of the document");
    skip_whitespace();
    JsonValue value = parse_value(0);
    skip_whitespace();
    if (pos_ != text_.size()) fail("unexpected bytes after the JSON value");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const { fail_at(pos_, problem); }
  [[noreturn]] void fail_at(std::size_t offset, const std::string& problem) const {
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i < offset && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    throw json_error(std::string(file_), line, column, problem);
  }

  void skip_whitespace() noexcept {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
      ++pos_;
    }
  }

  bool consume_literal(std::string_view word) noexcept {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  JsonValue parse_value(std::size_t depth) {
    if (pos_ >= text_.size()) fail("unexpected end of the document, expected a value");
    switch (text_[pos_]) {
      case '{': return parse_object(depth + 1);
      case '[': return parse_array(depth + 1);
      case '"': return JsonValue(parse_string());
      case 't':
        if (consume_literal("true")) return JsonValue(true);
        break;
      case 'f':
        if (consume_literal("false")) return JsonValue(false);
        break;
      case 'n':
        if (consume_literal("null")) return JsonValue(nullptr);
        break;
      default:
        if (text_[pos_] == '-' || (text_[pos_] >= '0' && text_[pos_] <= '9')) return JsonValue(parse_number());
        break;
    }
    fail("unexpected character, expected a value (object, array, string, number, true, false or null)");
  }

  JsonValue parse_object(std::size_t depth) {
    if (depth > json_max_depth) fail("nesting deeper than " + std::to_string(json_max_depth) + " levels");
    ++pos_;  // '{'
    JsonObject object;
    skip_whitespace();
    if (pos_ < text_.size() && text_[pos_] == '}') {
      ++pos_;
      return JsonValue(std::move(object));
    }
    for (;;) {
      skip_whitespace();
      const std::size_t key_at = pos_;
      if (pos_ >= text_.size() || text_[pos_] != '"') fail("expected a string key in an object");
      std::string key = parse_string();
      skip_whitespace();
      if (pos_ >= text_.size() || text_[pos_] != ':') fail("expected ':' after an object key");
      ++pos_;
      skip_whitespace();
      JsonValue value = parse_value(depth);
      // Small objects check for a repeated key as they go, to point at it;
      // large ones find repeats when the index is built at the end.
      if (object.members_.size() < detail::json_object_scan_limit) {
        for (const auto& member : object.members_)
          if (member.first == key) fail_at(key_at, "duplicate key '" + key + "' in an object");
      }
      object.members_.emplace_back(std::move(key), std::move(value));
      skip_whitespace();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == '}') {
        ++pos_;
        break;
      }
      fail("expected ',' or '}' in an object");
    }
    if (object.members_.size() >= UINT32_MAX) fail("object with 2^32 or more members");
    if (const std::string* repeated = object.build_index()) fail("duplicate key '" + *repeated + "' in an object");
    return JsonValue(std::move(object));
  }

  JsonValue parse_array(std::size_t depth) {
    if (depth > json_max_depth) fail("nesting deeper than " + std::to_string(json_max_depth) + " levels");
    ++pos_;  // '['
    JsonArray array;
    skip_whitespace();
    if (pos_ < text_.size() && text_[pos_] == ']') {
      ++pos_;
      return JsonValue(std::move(array));
    }
    for (;;) {
      skip_whitespace();
      array.push_back(parse_value(depth));
      skip_whitespace();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == ']') {
        ++pos_;
        return JsonValue(std::move(array));
      }
      fail("expected ',' or ']' in an array");
    }
  }

  static bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

  JsonNumber parse_number() {
    const std::size_t start = pos_;
    if (text_[pos_] == '-') ++pos_;
    if (pos_ >= text_.size() || !is_digit(text_[pos_])) fail("a '-' must be followed by digits");
    if (text_[pos_] == '0') {
      ++pos_;
      if (pos_ < text_.size() && is_digit(text_[pos_])) fail("number with a leading zero");
    } else {
      while (pos_ < text_.size() && is_digit(text_[pos_])) ++pos_;
    }
    bool integral = true;
    if (pos_ < text_.size() && text_[pos_] == '.') {
      integral = false;
      ++pos_;
      if (pos_ >= text_.size() || !is_digit(text_[pos_])) fail("a '.' in a number must be followed by digits");
      while (pos_ < text_.size() && is_digit(text_[pos_])) ++pos_;
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      integral = false;
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (pos_ >= text_.size() || !is_digit(text_[pos_])) fail("an exponent in a number must have digits");
      while (pos_ < text_.size() && is_digit(text_[pos_])) ++pos_;
    }
    const char* first = text_.data() + start;
    const char* last = text_.data() + pos_;
    JsonNumber number;
    const auto parsed = std::from_chars(first, last, number.value);
    if (parsed.ec == std::errc::result_out_of_range) {
      // Underflow to zero is harmless (1e-400 is 0 for every model); overflow is not a number izwi can use.
      bool tiny = false;
      for (const char* p = first; p != last; ++p)
        if (*p == 'e' || *p == 'E') tiny = p + 1 != last && p[1] == '-';
      if (!tiny) fail_at(start, "number out of the range of a double");
      number.value = 0.0;
    } else if (parsed.ec != std::errc() || parsed.ptr != last) {
      fail_at(start, "malformed number");
    }
    if (integral) {
      std::int64_t integer = 0;
      const auto exact = std::from_chars(first, last, integer);
      if (exact.ec == std::errc() && exact.ptr == last) number.integer = integer;
    }
    return number;
  }

  std::uint32_t parse_hex4() {
    if (text_.size() - pos_ < 4) fail("truncated \\u escape");
    std::uint32_t value = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_++];
      value <<= 4;
      if (c >= '0' && c <= '9') value |= static_cast<std::uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') value |= static_cast<std::uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') value |= static_cast<std::uint32_t>(c - 'A' + 10);
      else fail("bad hex digit in a \\u escape");
    }
    return value;
  }

  std::string parse_string() {
    ++pos_;  // opening quote
    std::string out;
    for (;;) {
      // Copy the run of plain ASCII at once.
      const std::size_t run_start = pos_;
      while (pos_ < text_.size()) {
        const auto c = static_cast<unsigned char>(text_[pos_]);
        if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
        ++pos_;
      }
      out.append(text_.substr(run_start, pos_ - run_start));
      if (pos_ >= text_.size()) fail("unterminated string");
      const auto c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c < 0x20) fail("control character inside a string (must be escaped)");
      if (c >= 0x80) {
        const std::size_t length = utf8_sequence_length(text_, pos_);
        if (length == 0) fail("invalid UTF-8 in a string");
        out.append(text_.substr(pos_, length));
        pos_ += length;
        continue;
      }
      // Backslash escape.
      ++pos_;
      if (pos_ >= text_.size()) fail("unterminated escape in a string");
      const char e = text_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          std::uint32_t cp = parse_hex4();
          if (cp >= 0xdc00 && cp <= 0xdfff) fail("lone low surrogate in a \\u escape");
          if (cp >= 0xd800 && cp <= 0xdbff) {
            if (text_.size() - pos_ < 2 || text_[pos_] != '\\' || text_[pos_ + 1] != 'u')
              fail("high surrogate in a \\u escape without its low half");
            pos_ += 2;
            const std::uint32_t low = parse_hex4();
            if (low < 0xdc00 || low > 0xdfff) fail("high surrogate in a \\u escape without its low half");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          }
          append_utf8(out, cp);
          break;
        }
        default: fail("unknown escape in a string (JSON allows \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u)");
      }
    }
  }

  std::string_view text_;
  std::string_view file_;
  std::size_t pos_ = 0;
};

}  // namespace izwi::io::detail

namespace izwi::io {

inline JsonValue parse_json(std::string_view text, std::string_view display_name) {
  return detail::JsonParser(text, display_name).parse_document();
}

inline JsonValue read_json_file(const std::filesystem::path& path) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) throw izwi::error(path.string() + ": cannot read: " + ec.message());
  if (size > json_max_file_bytes)
    throw izwi::error(path.string() + ": " + std::to_string(size) + " bytes, larger than the " +
                      std::to_string(json_max_file_bytes) + "-byte limit for a JSON file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw izwi::error(path.string() + ": cannot open");
  std::string text(static_cast<std::size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(size));
  if (static_cast<std::uintmax_t>(in.gcount()) != size) throw izwi::error(path.string() + ": short read");
  return parse_json(text, path.string());
}

}  // namespace izwi::io
