#pragma once
// Unicode properties the tokenizer needs, taken from ICU (libicu, the library
// V8, Chromium and the JDK use) rather than from tables of our own: NFC
// normalization and the three character classes of the Qwen2 split pattern.
//
// Classes follow the regex engines Hugging Face tokenizers is built on
// (Oniguruma / Rust regex):
//   \p{L}  general categories Lu Ll Lt Lm Lo
//   \p{N}  general categories Nd Nl No
//   \s     the White_Space property (U+0009-000D, U+0020, U+0085, U+00A0,
//          U+1680, U+2000-200A, U+2028, U+2029, U+202F, U+205F, U+3000)
// JavaScript's \s differs on two code points (it has U+FEFF, lacks U+0085);
// docs/tokenizer.md lists that as the one known difference from transformers.js.

#include <unicode/normalizer2.h>
#include <unicode/bytestream.h>
#include <unicode/stringpiece.h>
#include <unicode/uchar.h>
#include <unicode/utypes.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <izwi/core/error.hpp>

namespace izwi::tokenizer::detail {

enum class CharClass : std::uint8_t { other, letter, number, whitespace };

inline CharClass classify_with_icu(char32_t cp) noexcept {
  const auto c = static_cast<UChar32>(cp);
  if (u_isUWhiteSpace(c)) return CharClass::whitespace;
  const std::uint32_t mask = U_GET_GC_MASK(c);
  if (mask & U_GC_L_MASK) return CharClass::letter;
  if (mask & U_GC_N_MASK) return CharClass::number;
  return CharClass::other;
}

/// Classes of the Basic Multilingual Plane, built once (64 KiB): the split
/// loop asks for every code point, and a table lookup beats a call into ICU.
inline const std::array<CharClass, 0x10000>& bmp_char_classes() {
  static const auto table = [] {
    auto t = std::make_unique<std::array<CharClass, 0x10000>>();
    for (char32_t cp = 0; cp < 0x10000; ++cp) (*t)[cp] = classify_with_icu(cp);
    return t;
  }();
  return *table;
}

inline CharClass char_class(char32_t cp) noexcept {
  static const std::array<CharClass, 0x10000>& bmp = bmp_char_classes();
  return cp < 0x10000 ? bmp[cp] : classify_with_icu(cp);
}

/// Appends the NFC form of valid UTF-8 `text` to out.
inline void append_nfc(std::string& out, std::string_view text) {
  // Nothing below U+0300 composes with what precedes it or decomposes, so text
  // whose bytes are all below 0xCC (ASCII, Latin-1 letters) is already NFC.
  bool may_change = false;
  for (const char ch : text) {
    if (static_cast<unsigned char>(ch) >= 0xCC) {
      may_change = true;
      break;
    }
  }
  if (!may_change) {
    out.append(text);
    return;
  }
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(status);
  if (U_FAILURE(status)) throw izwi::error(std::string("ICU: cannot load NFC data: ") + u_errorName(status));
  const icu::StringPiece piece(text.data(), static_cast<std::int32_t>(text.size()));
  if (nfc->isNormalizedUTF8(piece, status) && U_SUCCESS(status)) {
    out.append(text);
    return;
  }
  status = U_ZERO_ERROR;
  icu::StringByteSink<std::string> sink(&out, static_cast<std::int32_t>(text.size()));
  nfc->normalizeUTF8(0, piece, sink, nullptr, status);
  if (U_FAILURE(status)) throw izwi::error(std::string("ICU: NFC normalization failed: ") + u_errorName(status));
}

}  // namespace izwi::tokenizer::detail
