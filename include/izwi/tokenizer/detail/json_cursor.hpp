#pragma once
// A strict pull reader for tokenizer.json. The file is large (11 MB for
// Qwen3: 151k vocabulary entries, 151k merges), so it is read in one pass
// straight into the tokenizer's tables instead of through a JSON tree.
// Strict RFC 8259: no comments, no trailing commas, valid escapes and UTF-8
// (surrogate pairs combined, lone surrogates refused); nesting capped.

#include <izwi/tokenizer/detail/utf8.hpp>
#include <izwi/tokenizer/tokenizer_error.hpp>

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace izwi::tokenizer::detail {

class JsonCursor {
 public:
  enum class Kind { object, array, string, number, boolean, null };
  static constexpr std::size_t max_depth = 64;

  JsonCursor(std::string_view text, std::string file) : text_(text), file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& problem) const {
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    throw tokenizer_error(file_, "line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + problem);
  }
  [[noreturn]] void fail_semantic(const std::string& problem) const { throw tokenizer_error(file_, problem); }
  const std::string& file() const noexcept { return file_; }

  Kind peek() {
    skip_whitespace();
    if (pos_ >= text_.size()) fail("unexpected end of the document, expected a value");
    switch (text_[pos_]) {
      case '{': return Kind::object;
      case '[': return Kind::array;
      case '"': return Kind::string;
      case 't':
      case 'f': return Kind::boolean;
      case 'n': return Kind::null;
      default:
        if (text_[pos_] == '-' || (text_[pos_] >= '0' && text_[pos_] <= '9')) return Kind::number;
        fail(std::string("unexpected character '") + text_[pos_] + "'");
    }
  }

  void begin_object() {
    expect('{', "expected an object");
    first_ = true;
  }
  /// Reads the next member's key (and its ':'); false after the closing '}'.
  bool next_member(std::string& key) {
    skip_whitespace();
    if (consume('}')) return closed();
    if (!first_) {
      expect(',', "expected ',' or '}' in an object");
      skip_whitespace();
    }
    first_ = false;
    read_string_into(key);
    skip_whitespace();
    expect(':', "expected ':' after an object key");
    return true;
  }

  void begin_array() {
    expect('[', "expected an array");
    first_ = true;
  }
  /// Positions on the next element; false after the closing ']'.
  bool next_element() {
    skip_whitespace();
    if (consume(']')) return closed();
    if (!first_) {
      expect(',', "expected ',' or ']' in an array");
      skip_whitespace();
    }
    first_ = false;
    return true;
  }

  // `first_` is true only between a container's opening bracket and its first
  // element: every read_* and every closing bracket (the container is itself a
  // value of its parent) sets it false, so the parent then expects a ','.

  std::string read_string() {
    std::string s;
    read_string_into(s);
    return s;
  }

  void read_string_into(std::string& out) {
    skip_whitespace();
    expect('"', "expected a string");
    out.clear();
    for (;;) {
      // Copy runs of plain bytes in one go.
      std::size_t run = pos_;
      while (run < text_.size()) {
        const auto c = static_cast<unsigned char>(text_[run]);
        if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
        ++run;
      }
      out.append(text_.data() + pos_, run - pos_);
      pos_ = run;
      if (pos_ >= text_.size()) fail("unterminated string");
      const auto c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        break;
      }
      if (c < 0x20) fail("control character in a string");
      if (c >= 0x80) {
        const Utf8Step step = utf8_step(text_, pos_);
        if (step.kind != Utf8Step::complete) fail("invalid UTF-8 in a string");
        out.append(text_.data() + pos_, step.length);
        pos_ += step.length;
        continue;
      }
      // backslash
      ++pos_;
      if (pos_ >= text_.size()) fail("unterminated escape");
      const char e = text_[pos_++];
      switch (e) {
        case '"': out.push_back('"'); break;
        case '\\': out.push_back('\\'); break;
        case '/': out.push_back('/'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': {
          char32_t cp = read_hex4();
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (text_.substr(pos_, 2) != "\\u") fail("lone high surrogate in a \\u escape");
            pos_ += 2;
            const char32_t low = read_hex4();
            if (low < 0xDC00 || low > 0xDFFF) fail("high surrogate not followed by a low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            fail("lone low surrogate in a \\u escape");
          }
          append_utf8(out, cp);
          break;
        }
        default: fail(std::string("invalid escape '\\") + e + "'");
      }
    }
    first_ = false;
  }

  std::int64_t read_integer() {
    skip_whitespace();
    const char* begin = text_.data() + pos_;
    const char* end = text_.data() + text_.size();
    std::int64_t value = 0;
    const auto [ptr, ec] = std::from_chars(begin, end, value);
    if (ec != std::errc{} || ptr == begin) fail("expected an integer");
    if (ptr < end && (*ptr == '.' || *ptr == 'e' || *ptr == 'E')) fail("expected an integer, found a fraction");
    pos_ += static_cast<std::size_t>(ptr - begin);
    first_ = false;
    return value;
  }

  bool read_bool() {
    skip_whitespace();
    first_ = false;
    if (consume_word("true")) return true;
    if (consume_word("false")) return false;
    fail("expected true or false");
  }

  /// Any number, as spelled in the document (syntax checked).
  std::string read_number_text() {
    skip_whitespace();
    const std::size_t start = pos_;
    skip_number();
    first_ = false;
    return std::string(text_.substr(start, pos_ - start));
  }

  /// Consumes a null if one is next.
  bool try_null() {
    skip_whitespace();
    if (!consume_word("null")) return false;
    first_ = false;
    return true;
  }

  /// Skips one value of any kind, still checking its syntax.
  void skip_value(std::size_t depth = 0) {
    if (depth > max_depth) fail("nesting deeper than " + std::to_string(max_depth));
    switch (peek()) {
      case Kind::object: {
        begin_object();
        std::string key;
        while (next_member(key)) skip_value(depth + 1);
        break;
      }
      case Kind::array:
        begin_array();
        while (next_element()) skip_value(depth + 1);
        break;
      case Kind::string: {
        std::string ignored;
        read_string_into(ignored);
        break;
      }
      case Kind::number: read_number_text(); break;
      case Kind::boolean: read_bool(); break;
      case Kind::null: try_null(); break;
    }
    first_ = false;
  }

  void expect_end() {
    skip_whitespace();
    if (pos_ != text_.size()) fail("unexpected bytes after the JSON document");
  }

 private:
  bool closed() noexcept {
    first_ = false;
    return false;
  }
  void skip_whitespace() noexcept {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
      ++pos_;
    }
  }
  bool consume(char c) noexcept {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c, const char* problem) {
    skip_whitespace();
    if (!consume(c)) fail(problem);
  }
  bool consume_word(std::string_view word) noexcept {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  char32_t read_hex4() {
    if (pos_ + 4 > text_.size()) fail("truncated \\u escape");
    char32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<char32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<char32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<char32_t>(c - 'A' + 10);
      else fail("invalid hex digit in a \\u escape");
    }
    return v;
  }
  void skip_number() {
    // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
    auto digits = [&] {
      const std::size_t start = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      return pos_ - start;
    };
    consume('-');
    if (consume('0')) {
      if (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') fail("leading zero in a number");
    } else if (digits() == 0) {
      fail("expected a digit");
    }
    if (consume('.') && digits() == 0) fail("expected a digit after '.'");
    if (consume('e') || consume('E')) {
      if (!consume('+')) consume('-');
      if (digits() == 0) fail("expected a digit in the exponent");
    }
  }

  std::string_view text_;
  std::string file_;
  std::size_t pos_ = 0;
  bool first_ = true;
};

}  // namespace izwi::tokenizer::detail
