#pragma once
// izwi's one UTF-8 module: validation, decoding, encoding, lossy repair and
// code-point counting, shared by the JSON and GGUF readers (io/), the
// tokenizer and detokenizer (tokenizer/) and the server.
//
// Well-formed means Unicode Table 3-7 (RFC 3629): no overlong forms, no UTF-16
// surrogates, nothing above U+10FFFF, no truncated sequence. Lossy decoding
// follows the WHATWG "maximal subpart" rule (one U+FFFD per maximal invalid
// subsequence), the rule TextDecoder, ICU and Python's errors="replace" share,
// so a repaired string matches theirs. Text validated once at an API edge
// (utf8_first_invalid) can then be decoded without re-checking
// (decode_utf8_unchecked).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace izwi::detail {

inline constexpr char32_t replacement_character = 0xFFFD;

/// Outcome of looking at the bytes that start at some position.
struct Utf8Step {
  enum Kind : std::uint8_t {
    complete,    ///< a well-formed sequence of `length` bytes
    invalid,     ///< `length` bytes (>= 1) form a maximal invalid subpart: one U+FFFD
    incomplete,  ///< the bytes left are a valid prefix of a sequence that has not ended yet
  } kind;
  std::size_t length;
};

/// Classifies the sequence at bytes[pos] (pos < bytes.size()).
inline Utf8Step utf8_step(std::string_view bytes, std::size_t pos) noexcept {
  const auto b0 = static_cast<unsigned char>(bytes[pos]);
  if (b0 < 0x80) return {Utf8Step::complete, 1};
  std::size_t need;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 3;
    if (b0 == 0xE0) lo = 0xA0;  // overlong
    if (b0 == 0xED) hi = 0x9F;  // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 4;
    if (b0 == 0xF0) lo = 0x90;  // overlong
    if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return {Utf8Step::invalid, 1};
  }
  for (std::size_t i = 1; i < need; ++i) {
    if (pos + i >= bytes.size()) return {Utf8Step::incomplete, i};
    const auto b = static_cast<unsigned char>(bytes[pos + i]);
    const unsigned char l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
    if (b < l || b > h) return {Utf8Step::invalid, i};
  }
  return {Utf8Step::complete, need};
}

/// Length of the well-formed sequence starting at text[pos] (1 to 4), or 0
/// if the bytes there are not one.
inline std::size_t utf8_sequence_length(std::string_view text, std::size_t pos) noexcept {
  const Utf8Step step = utf8_step(text, pos);
  return step.kind == Utf8Step::complete ? step.length : 0;
}

/// Offset of the first byte that is not part of well-formed UTF-8, or npos.
inline std::size_t utf8_first_invalid(std::string_view text) noexcept {
  std::size_t pos = 0;
  while (pos < text.size()) {
    // ASCII runs are the common case: skip them eight bytes at a time.
    while (pos + 8 <= text.size()) {
      std::uint64_t word;
      std::memcpy(&word, text.data() + pos, 8);
      if (word & 0x8080808080808080ull) break;
      pos += 8;
    }
    if (pos >= text.size()) break;
    const Utf8Step step = utf8_step(text, pos);
    if (step.kind != Utf8Step::complete) return pos;
    pos += step.length;
  }
  return std::string_view::npos;
}

/// True if the whole of `text` is well-formed UTF-8.
inline bool is_valid_utf8(std::string_view text) noexcept { return utf8_first_invalid(text) == std::string_view::npos; }

/// Decodes the code point at text[pos] of already-validated UTF-8 and advances pos.
inline char32_t decode_utf8_unchecked(std::string_view text, std::size_t& pos) noexcept {
  const auto b0 = static_cast<unsigned char>(text[pos]);
  if (b0 < 0x80) {
    ++pos;
    return b0;
  }
  auto cont = [&](std::size_t i) { return static_cast<char32_t>(static_cast<unsigned char>(text[pos + i]) & 0x3F); };
  char32_t cp;
  if (b0 < 0xE0) {
    cp = (static_cast<char32_t>(b0 & 0x1F) << 6) | cont(1);
    pos += 2;
  } else if (b0 < 0xF0) {
    cp = (static_cast<char32_t>(b0 & 0x0F) << 12) | (cont(1) << 6) | cont(2);
    pos += 3;
  } else {
    cp = (static_cast<char32_t>(b0 & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3);
    pos += 4;
  }
  return cp;
}

/// Appends the UTF-8 encoding of cp (a Unicode scalar value).
inline void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

/// Appends bytes to out, replacing each maximal invalid subpart (and a
/// truncated sequence at the end) with U+FFFD.
inline void append_utf8_lossy(std::string& out, std::string_view bytes) {
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    const Utf8Step step = utf8_step(bytes, pos);
    if (step.kind == Utf8Step::complete) {
      out.append(bytes.data() + pos, step.length);
    } else {
      append_utf8(out, replacement_character);
    }
    pos += step.length;
  }
}

/// Code points in well-formed UTF-8 (bytes that are not continuation bytes);
/// what OpenAI's text offsets count.
inline std::size_t count_code_points(std::string_view text) noexcept {
  std::size_t n = 0;
  for (const char c : text)
    if ((static_cast<unsigned char>(c) & 0xC0u) != 0x80u) ++n;
  return n;
}

}  // namespace izwi::detail
