#pragma once
// GPT-2's byte-level alphabet: every byte value is given a printable code
// point so that BPE vocabularies can be stored as text. Printable Latin-1
// bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') stand for themselves; the other 68 bytes
// get U+0100, U+0101, ... in byte order (so ' ' is 'Ġ' U+0120, '\n' is 'Ċ' U+010A).

#include <array>
#include <cstdint>
#include <string>

#include <izwi/tokenizer/detail/utf8.hpp>

namespace izwi::tokenizer::detail {

struct ByteLevelAlphabet {
  std::array<char32_t, 256> code_point_of_byte{};
  std::array<std::string, 256> utf8_of_byte{};  ///< code_point_of_byte as UTF-8

  ByteLevelAlphabet() {
    char32_t next_extra = 0x100;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      code_point_of_byte[b] = printable ? static_cast<char32_t>(b) : next_extra++;
      append_utf8(utf8_of_byte[b], code_point_of_byte[b]);
    }
  }

  /// The byte a code point of the alphabet stands for, or -1.
  int byte_of(char32_t cp) const noexcept {
    if (cp < 0x100) {
      return code_point_of_byte[cp] == cp ? static_cast<int>(cp) : -1;
    }
    if (cp < 0x100 + 68) {
      for (int b = 0; b < 256; ++b)
        if (code_point_of_byte[b] == cp) return b;
    }
    return -1;
  }
};

inline const ByteLevelAlphabet& byte_level_alphabet() {
  static const ByteLevelAlphabet alphabet;
  return alphabet;
}

}  // namespace izwi::tokenizer::detail
