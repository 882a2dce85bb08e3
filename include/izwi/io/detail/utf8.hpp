#pragma once
// UTF-8 validation shared by the JSON reader and the GGUF reader: well-formed
// sequences only (RFC 3629) -- no overlong forms, no UTF-16 surrogates,
// nothing above U+10FFFF, no truncated sequence.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace izwi::io::detail {

/// Length of the well-formed UTF-8 sequence starting at text[pos] (1 to 4),
/// or 0 if the bytes there are not one.
inline std::size_t utf8_sequence_length(std::string_view text, std::size_t pos) noexcept {
  const auto lead = static_cast<unsigned char>(text[pos]);
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  std::uint32_t cp = 0, min = 0;
  if (lead >= 0xc2 && lead <= 0xdf) length = 2, cp = lead & 0x1fu, min = 0x80;
  else if (lead >= 0xe0 && lead <= 0xef) length = 3, cp = lead & 0x0fu, min = 0x800;
  else if (lead >= 0xf0 && lead <= 0xf4) length = 4, cp = lead & 0x07u, min = 0x10000;
  else return 0;
  if (text.size() - pos < length) return 0;
  for (std::size_t i = 1; i < length; ++i) {
    const auto c = static_cast<unsigned char>(text[pos + i]);
    if ((c & 0xc0u) != 0x80u) return 0;
    cp = (cp << 6) | (c & 0x3fu);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return length;
}

/// True if the whole of `text` is well-formed UTF-8.
inline bool is_valid_utf8(std::string_view text) noexcept {
  std::size_t pos = 0;
  while (pos < text.size()) {
    if (static_cast<unsigned char>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const std::size_t length = utf8_sequence_length(text, pos);
    if (length == 0) return false;
    pos += length;
  }
  return true;
}

/// Appends code point `cp` (at most U+10FFFF, no surrogate) as UTF-8.
inline void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

}  // namespace izwi::io::detail
