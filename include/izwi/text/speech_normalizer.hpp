#pragma once
// Text normalisation before speech synthesis: written forms a speech model
// may misread (numbers, money, times, e-mail addresses, URLs, phone numbers,
// units, symbols) rewritten as the words a reader would say, in English.
//
//   normalize_speech_text("It costs $12.50 at 9:05 pm, see www.izwi.dev.")
//     == "It costs twelve dollars and fifty cents at nine oh five p m, see
//         w w w dot izwi dot dev."
//
// Opt-in per request: Qwen3-TTS's talker is a language model that reads
// digits itself, and upstream feeds it the text as written, so the server
// rewrites the input only when the request carries `normalization_options`
// (Kokoro-FastAPI's field; the option names and their defaults are
// Kokoro-FastAPI's, so its clients send the same JSON). The rules are
// English; text in other languages passes through unchanged apart from the
// digits, symbols and patterns named below.
//
// What each rule does (docs/tts.md, "Text normalisation"):
//   numbers     1,234.5 → one thousand two hundred thirty-four point five;
//               -3 → minus three; 21st → twenty-first; 50% → fifty percent;
//               years 1100–1999 and 2010–2099 as years (1984 → nineteen
//               eighty-four, 1900 → nineteen hundred, 2024 → twenty
//               twenty-four), and their decades (1990s → nineteen nineties);
//               digit strings with a leading zero and numbers of more than
//               18 digits digit by digit
//   money       $ £ € ¥ before an amount, with an optional scale word:
//               $12.50 → twelve dollars and fifty cents, £1 → one pound,
//               €2.5 million → two point five million euros
//   times       9:05 pm → nine oh five p m, 10:00 → ten o'clock
//   e-mail      jo.doe@mail.com → jo dot doe at mail dot com
//   URLs        http(s)://…, www.… → spoken host labels, "dot", "slash"
//   phones      (555) 123-4567, 555-123-4567, +1 555 123 4567 → digits one
//               by one, groups separated by commas
//   units       10 KB → ten kilobytes, 5km → five kilometers (off by default,
//               as in Kokoro-FastAPI: "5 m" is five meters or five minutes)
//   plurals     word(s) → words
//   symbols     & + = @ # % ° ~ left over → and, plus, equals, at, number,
//               percent, degrees, about

#include <cstdint>
#include <string>
#include <string_view>

namespace izwi::text {

/// Which rules run. Field names and defaults as Kokoro-FastAPI's
/// NormalizationOptions; `normalize = false` turns every rule off.
struct SpeechTextOptions {
  bool normalize = true;
  bool unit_normalization = false;
  bool url_normalization = true;
  bool email_normalization = true;
  bool optional_pluralization_normalization = true;
  bool phone_normalization = true;
  bool replace_remaining_symbols = true;
};

/// `text` (UTF-8) with the enabled rules applied. Bytes no rule matches are
/// copied unchanged; runs of spaces are collapsed to one.
std::string normalize_speech_text(std::string_view text, const SpeechTextOptions& options = {});

/// "one thousand two hundred thirty-four" (no "and", hyphenated tens).
std::string cardinal_words(std::uint64_t n);
/// "one thousand two hundred thirty-fourth".
std::string ordinal_words(std::uint64_t n);
/// 1984 → "nineteen eighty-four", 1900 → "nineteen hundred", 1905 →
/// "nineteen oh five", 2000..2009 as cardinals.
std::string year_words(std::uint32_t year);

}  // namespace izwi::text

#include "izwi/text/impl/speech_normalizer.hpp"
