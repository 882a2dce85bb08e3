#pragma once
// A strict parser for the JSON header of a safetensors file.
//
// The header is a restricted JSON document, so it is parsed by hand against
// that shape rather than into a general JSON tree: an object whose members are
// either "__metadata__" (an object of strings) or a tensor (an object with
// exactly "dtype": string, "shape": [non-negative integers],
// "data_offsets": [begin, end]). Anything else -- unknown keys, duplicate
// keys, fractions, negative numbers, bad escapes, invalid UTF-8, trailing
// bytes other than the spaces writers pad with -- is rejected. Nesting is
// fixed by that shape, so malicious input cannot recurse deeply.

#include <izwi/io/detail/utf8.hpp>
#include <izwi/io/format_error.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace izwi::io::detail {

struct HeaderTensor {
  std::string name;
  std::string dtype;
  std::vector<std::uint64_t> shape;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

struct ParsedHeader {
  std::vector<HeaderTensor> tensors;  ///< in header order
  std::map<std::string, std::string, std::less<>> metadata;
};

class SafetensorsHeaderParser {
 public:
  SafetensorsHeaderParser(std::string_view text, const std::string& file) : text_(text), file_(file) {}

  ParsedHeader parse() {
    ParsedHeader header;
    skip_whitespace();
    expect('{', "the header must be a JSON object");
    std::map<std::string, bool, std::less<>> seen;
    skip_whitespace();
    if (!consume('}')) {
      for (;;) {
        skip_whitespace();
        std::string key = parse_string();
        if (!seen.emplace(key, true).second) fail_tensor(key, "duplicate name in the header");
        skip_whitespace();
        expect(':', "expected ':' after a key");
        skip_whitespace();
        if (key == "__metadata__") {
          parse_metadata(header.metadata);
        } else {
          header.tensors.push_back(parse_tensor(std::move(key)));
        }
        skip_whitespace();
        if (consume(',')) continue;
        expect('}', "expected ',' or '}' in the header object");
        break;
      }
    }
    // Writers pad the header to an alignment with spaces; nothing else may follow.
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') fail("unexpected bytes after the header object");
      ++pos_;
    }
    return header;
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const {
    throw format_error(file_, "", "invalid header JSON at byte " + std::to_string(pos_ + 8) + ": " + problem);
  }
  [[noreturn]] void fail_tensor(const std::string& tensor, const std::string& problem) const {
    throw format_error(file_, tensor, problem);
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
    if (!consume(c)) fail(problem);
  }

  void parse_metadata(std::map<std::string, std::string, std::less<>>& metadata) {
    expect('{', "__metadata__ must be an object of strings");
    skip_whitespace();
    if (consume('}')) return;
    for (;;) {
      skip_whitespace();
      std::string key = parse_string();
      skip_whitespace();
      expect(':', "expected ':' after a key");
      skip_whitespace();
      if (pos_ >= text_.size() || text_[pos_] != '"') fail("__metadata__ value of '" + key + "' is not a string");
      std::string value = parse_string();
      if (!metadata.emplace(std::move(key), std::move(value)).second) fail("duplicate key in __metadata__");
      skip_whitespace();
      if (consume(',')) continue;
      expect('}', "expected ',' or '}' in __metadata__");
      return;
    }
  }

  HeaderTensor parse_tensor(std::string name) {
    HeaderTensor tensor;
    tensor.name = std::move(name);
    if (!consume('{')) fail_tensor(tensor.name, "entry is not an object");
    bool have_dtype = false, have_shape = false, have_offsets = false;
    skip_whitespace();
    if (!consume('}')) {
      for (;;) {
        skip_whitespace();
        const std::string key = parse_string();
        skip_whitespace();
        expect(':', "expected ':' after a key");
        skip_whitespace();
        if (key == "dtype") {
          if (have_dtype) fail_tensor(tensor.name, "duplicate key 'dtype'");
          if (pos_ >= text_.size() || text_[pos_] != '"') fail_tensor(tensor.name, "'dtype' is not a string");
          tensor.dtype = parse_string();
          have_dtype = true;
        } else if (key == "shape") {
          if (have_shape) fail_tensor(tensor.name, "duplicate key 'shape'");
          tensor.shape = parse_integer_array(tensor.name, "shape");
          have_shape = true;
        } else if (key == "data_offsets") {
          if (have_offsets) fail_tensor(tensor.name, "duplicate key 'data_offsets'");
          const auto offsets = parse_integer_array(tensor.name, "data_offsets");
          if (offsets.size() != 2) fail_tensor(tensor.name, "'data_offsets' must hold exactly [begin, end]");
          tensor.begin = offsets[0];
          tensor.end = offsets[1];
          have_offsets = true;
        } else {
          fail_tensor(tensor.name, "unknown key '" + key + "' (expected dtype, shape, data_offsets)");
        }
        skip_whitespace();
        if (consume(',')) continue;
        expect('}', "expected ',' or '}' in a tensor entry");
        break;
      }
    }
    if (!have_dtype) fail_tensor(tensor.name, "missing 'dtype'");
    if (!have_shape) fail_tensor(tensor.name, "missing 'shape'");
    if (!have_offsets) fail_tensor(tensor.name, "missing 'data_offsets'");
    return tensor;
  }

  std::vector<std::uint64_t> parse_integer_array(const std::string& tensor, const char* what) {
    if (!consume('[')) fail_tensor(tensor, std::string("'") + what + "' is not an array");
    std::vector<std::uint64_t> values;
    skip_whitespace();
    if (consume(']')) return values;
    for (;;) {
      skip_whitespace();
      values.push_back(parse_unsigned(tensor, what));
      if (values.size() > 64) fail_tensor(tensor, std::string("'") + what + "' has more than 64 entries");
      skip_whitespace();
      if (consume(',')) continue;
      if (!consume(']')) fail_tensor(tensor, std::string("expected ',' or ']' in '") + what + "'");
      return values;
    }
  }

  std::uint64_t parse_unsigned(const std::string& tensor, const char* what) {
    const std::size_t start = pos_;
    std::uint64_t value = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      const auto digit = static_cast<std::uint64_t>(text_[pos_] - '0');
      if (value > (UINT64_MAX - digit) / 10) fail_tensor(tensor, std::string("'") + what + "' value overflows 64 bits");
      value = value * 10 + digit;
      ++pos_;
    }
    const std::size_t digits = pos_ - start;
    if (digits == 0) fail_tensor(tensor, std::string("'") + what + "' holds something other than a non-negative integer");
    if (digits > 1 && text_[start] == '0') fail_tensor(tensor, std::string("'") + what + "' has a number with a leading zero");
    if (pos_ < text_.size() && (text_[pos_] == '.' || text_[pos_] == 'e' || text_[pos_] == 'E'))
      fail_tensor(tensor, std::string("'") + what + "' holds a non-integer number");
    return value;
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
      else fail("bad hex digit in \\u escape");
    }
    return value;
  }

  // Copies one raw UTF-8 sequence starting at pos_, validating it (no
  // overlongs, no surrogates, nothing above U+10FFFF).
  void copy_utf8_sequence(std::string& out) {
    const auto lead = static_cast<unsigned char>(text_[pos_]);
    std::size_t length = 0;
    std::uint32_t cp = 0, min = 0;
    if (lead >= 0xc2 && lead <= 0xdf) length = 2, cp = lead & 0x1f, min = 0x80;
    else if (lead >= 0xe0 && lead <= 0xef) length = 3, cp = lead & 0x0f, min = 0x800;
    else if (lead >= 0xf0 && lead <= 0xf4) length = 4, cp = lead & 0x07, min = 0x10000;
    else fail("invalid UTF-8 in a string");
    if (text_.size() - pos_ < length) fail("truncated UTF-8 sequence in a string");
    for (std::size_t i = 1; i < length; ++i) {
      const auto c = static_cast<unsigned char>(text_[pos_ + i]);
      if ((c & 0xc0) != 0x80) fail("invalid UTF-8 in a string");
      cp = (cp << 6) | (c & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) fail("invalid UTF-8 in a string");
    out.append(text_.substr(pos_, length));
    pos_ += length;
  }

  std::string parse_string() {
    if (!consume('"')) fail("expected a string");
    std::string out;
    for (;;) {
      if (pos_ >= text_.size()) fail("unterminated string");
      const auto c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c < 0x20) fail("control character inside a string");
      if (c >= 0x80) {
        copy_utf8_sequence(out);
        continue;
      }
      ++pos_;
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (pos_ >= text_.size()) fail("unterminated escape");
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
          if (cp >= 0xdc00 && cp <= 0xdfff) fail("lone low surrogate in \\u escape");
          if (cp >= 0xd800 && cp <= 0xdbff) {
            if (text_.size() - pos_ < 2 || text_[pos_] != '\\' || text_[pos_ + 1] != 'u')
              fail("high surrogate without its low half");
            pos_ += 2;
            const std::uint32_t low = parse_hex4();
            if (low < 0xdc00 || low > 0xdfff) fail("high surrogate without its low half");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          }
          append_utf8(out, cp);
          break;
        }
        default: fail("unknown escape in a string");
      }
    }
  }

  std::string_view text_;
  const std::string& file_;
  std::size_t pos_ = 0;
};

}  // namespace izwi::io::detail
