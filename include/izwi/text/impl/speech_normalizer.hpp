#pragma once
// Bodies of izwi/text/speech_normalizer.hpp. A single left-to-right scan: at
// each position the rules are tried in a fixed order (the more specific
// pattern first: a URL before an e-mail address before a phone number before
// money, a time or a plain number), the first that matches writes its words
// and moves past what it read; a byte no rule matches is copied. No regular
// expressions: std::regex is slow and heavy to compile, and every pattern
// here is a short run of ASCII classes.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace izwi::text {
namespace detail {

inline constexpr std::array<std::string_view, 20> small_number_words = {
    "zero",    "one",     "two",       "three",    "four",     "five",    "six",
    "seven",   "eight",   "nine",      "ten",      "eleven",   "twelve",  "thirteen",
    "fourteen", "fifteen", "sixteen",  "seventeen", "eighteen", "nineteen"};
inline constexpr std::array<std::string_view, 10> tens_words = {"",      "",      "twenty",  "thirty", "forty",
                                                                 "fifty", "sixty", "seventy", "eighty", "ninety"};
inline constexpr std::array<std::string_view, 7> thousands_scale_words = {
    "", "thousand", "million", "billion", "trillion", "quadrillion", "quintillion"};

inline bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }
inline bool is_letter(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
inline bool is_alnum(char c) noexcept { return is_digit(c) || is_letter(c); }
inline char lower(char c) noexcept { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

/// Appends `word` after a space (none at the start or after one).
inline void append_word(std::string& out, std::string_view word) {
  if (!out.empty() && out.back() != ' ') out += ' ';
  out += word;
}

inline void append_below_thousand(std::string& out, unsigned n) {
  if (n >= 100) {
    append_word(out, small_number_words[n / 100]);
    append_word(out, "hundred");
    n %= 100;
  }
  if (n == 0) return;
  if (n < 20) {
    append_word(out, small_number_words[n]);
    return;
  }
  append_word(out, tens_words[n / 10]);
  if (n % 10 != 0) {
    out += '-';
    out += small_number_words[n % 10];
  }
}

/// Each digit of `digits` as its word: "042" → "zero four two".
inline std::string digit_words(std::string_view digits) {
  std::string out;
  for (char c : digits)
    if (is_digit(c)) append_word(out, small_number_words[static_cast<std::size_t>(c - '0')]);
  return out;
}

/// The plural of a number word: ninety → nineties, hundred → hundreds.
inline std::string pluralize_last_word(std::string words) {
  if (!words.empty() && words.back() == 'y') {
    words.pop_back();
    words += "ies";
  } else {
    words += 's';
  }
  return words;
}

/// One unit symbol and how it is read after one and after other amounts.
struct UnitWords {
  std::string_view symbol;
  std::string_view singular;
  std::string_view plural;
};

// Case-sensitive symbols (Kb is a kilobit, KB a kilobyte); the longest
// symbol that matches wins. Left out on purpose: "in" (the word), "B" and
// "M" (billion/million as often as bytes/meters), "t" and "a".
inline constexpr UnitWords unit_words[] = {
    {"KB", "kilobyte", "kilobytes"},         {"kB", "kilobyte", "kilobytes"},
    {"MB", "megabyte", "megabytes"},         {"GB", "gigabyte", "gigabytes"},
    {"TB", "terabyte", "terabytes"},         {"PB", "petabyte", "petabytes"},
    {"KiB", "kibibyte", "kibibytes"},        {"MiB", "mebibyte", "mebibytes"},
    {"GiB", "gibibyte", "gibibytes"},        {"TiB", "tebibyte", "tebibytes"},
    {"Kb", "kilobit", "kilobits"},           {"Mb", "megabit", "megabits"},
    {"Gb", "gigabit", "gigabits"},           {"Mbps", "megabit per second", "megabits per second"},
    {"Gbps", "gigabit per second", "gigabits per second"},
    {"mm", "millimeter", "millimeters"},     {"cm", "centimeter", "centimeters"},
    {"m", "meter", "meters"},                {"km", "kilometer", "kilometers"},
    {"mi", "mile", "miles"},                 {"ft", "foot", "feet"},
    {"yd", "yard", "yards"},                 {"mg", "milligram", "milligrams"},
    {"g", "gram", "grams"},                  {"kg", "kilogram", "kilograms"},
    {"lb", "pound", "pounds"},               {"lbs", "pound", "pounds"},
    {"oz", "ounce", "ounces"},               {"ml", "milliliter", "milliliters"},
    {"mL", "milliliter", "milliliters"},     {"L", "liter", "liters"},
    {"ms", "millisecond", "milliseconds"},   {"s", "second", "seconds"},
    {"min", "minute", "minutes"},            {"h", "hour", "hours"},
    {"Hz", "hertz", "hertz"},                {"kHz", "kilohertz", "kilohertz"},
    {"MHz", "megahertz", "megahertz"},       {"GHz", "gigahertz", "gigahertz"},
    {"mph", "mile per hour", "miles per hour"},
    {"km/h", "kilometer per hour", "kilometers per hour"},
    {"\xC2\xB0" "C", "degree Celsius", "degrees Celsius"},
    {"\xC2\xB0" "F", "degree Fahrenheit", "degrees Fahrenheit"},
};

/// A currency sign and how its amounts are read.
struct CurrencyWords {
  std::string_view sign;
  std::string_view singular, plural;
  std::string_view cent_singular, cent_plural;  ///< empty: no subunit (yen)
};

inline constexpr CurrencyWords currency_words[] = {
    {"$", "dollar", "dollars", "cent", "cents"},
    {"\xC2\xA3", "pound", "pounds", "penny", "pence"},
    {"\xE2\x82\xAC", "euro", "euros", "cent", "cents"},
    {"\xC2\xA5", "yen", "yen", "", ""},
};

/// A number as written: its digits, where it ended, and how it reads.
struct WrittenNumber {
  std::string integer_digits;  ///< without the thousands commas
  std::string_view fraction_digits;
  bool had_commas = false;
  std::size_t end = 0;  ///< the offset just past the number

  /// The integer part's value, when it is an ordinary number to read as one
  /// (no leading zero, at most 18 digits).
  std::optional<std::uint64_t> value() const {
    if (integer_digits.empty() || integer_digits.size() > 18) return std::nullopt;
    if (integer_digits.size() > 1 && integer_digits.front() == '0') return std::nullopt;
    std::uint64_t v = 0;
    for (char c : integer_digits) v = v * 10 + static_cast<std::uint64_t>(c - '0');
    return v;
  }
  /// "one thousand two hundred point five", "zero zero seven".
  std::string words() const {
    std::string out = value() ? cardinal_words(*value()) : digit_words(integer_digits);
    if (!fraction_digits.empty()) out += " point " + digit_words(fraction_digits);
    return out;
  }
};

/// Reads "1,234.56" or "1234" at `pos` (a digit): thousands commas count
/// only in well-formed groups of three, a fraction only with a digit after
/// the point.
inline WrittenNumber read_written_number(std::string_view s, std::size_t pos) {
  WrittenNumber n;
  std::size_t p = pos;
  while (p < s.size() && is_digit(s[p])) n.integer_digits += s[p++];
  if (n.integer_digits.size() <= 3) {
    while (p + 3 < s.size() && s[p] == ',' && is_digit(s[p + 1]) && is_digit(s[p + 2]) && is_digit(s[p + 3]) &&
           (p + 4 >= s.size() || !is_digit(s[p + 4]))) {
      n.integer_digits.append(s.substr(p + 1, 3));
      n.had_commas = true;
      p += 4;
    }
  }
  if (p + 1 < s.size() && s[p] == '.' && is_digit(s[p + 1])) {
    const std::size_t start = ++p;
    while (p < s.size() && is_digit(s[p])) ++p;
    n.fraction_digits = s.substr(start, p - start);
  }
  n.end = p;
  return n;
}

/// The scanner: rules tried in order at each position.
class SpeechTextRewriter {
 public:
  SpeechTextRewriter(std::string_view text, const SpeechTextOptions& options) : s_(text), o_(options) {}

  std::string run() {
    while (i_ < s_.size())
      if (!apply_rule()) out_ += s_[i_++];
    return collapse_spaces(out_);
  }

 private:
  bool apply_rule() {
    if (at_word_start()) {
      if (o_.url_normalization && url()) return true;
      if (o_.email_normalization && email()) return true;
      if (o_.phone_normalization && phone()) return true;
      if (money() || clock_time() || number()) return true;
    }
    if (o_.optional_pluralization_normalization && optional_plural()) return true;
    return o_.replace_remaining_symbols && symbol();
  }

  char at(std::size_t p) const noexcept { return p < s_.size() ? s_[p] : '\0'; }
  // A letter or digit before (ASCII, or any byte of a UTF-8 sequence, which
  // is most likely a letter) means the position is inside a word.
  bool at_word_start() const noexcept {
    if (i_ == 0) return true;
    const auto prev = static_cast<unsigned char>(s_[i_ - 1]);
    return !(is_alnum(static_cast<char>(prev)) || prev >= 0x80 || prev == '_');
  }
  bool boundary(std::size_t p) const noexcept { return !is_alnum(at(p)); }
  void emit(std::string_view words) { out_ += ' ', out_ += words, out_ += ' '; }

  // --- numbers ---------------------------------------------------------------

  bool number() {
    std::size_t p = i_;
    const bool negative = at(p) == '-' && is_digit(at(p + 1));
    if (negative) ++p;
    if (!is_digit(at(p))) return false;
    WrittenNumber n = read_written_number(s_, p);
    // "1.2.3": a version or an address, every part read, joined by "point".
    if (!n.fraction_digits.empty() && at(n.end) == '.' && is_digit(at(n.end + 1))) return dotted_numbers(p, negative);
    std::string words = (negative ? "minus " : "") + number_with_suffix(n);
    emit(words);
    i_ = n.end;
    return true;
  }

  /// The number's words, consuming (by moving n.end) an ordinal, decade,
  /// percent or unit suffix when one follows.
  std::string number_with_suffix(WrittenNumber& n) {
    const std::optional<std::uint64_t> v = n.fraction_digits.empty() ? n.value() : std::nullopt;
    const std::size_t e = n.end;
    if (v && !n.had_commas) {
      const std::string suffix{lower(at(e)), lower(at(e + 1))};
      if ((suffix == "st" || suffix == "nd" || suffix == "rd" || suffix == "th") && boundary(e + 2)) {
        n.end = e + 2;
        return ordinal_words(*v);
      }
      if (at(e) == 's' && boundary(e + 1) && *v % 10 == 0 && (n.integer_digits.size() == 2 || (*v >= 1100 && *v <= 2099))) {
        n.end = e + 1;  // 1990s, 80s
        return pluralize_last_word(n.integer_digits.size() == 4 ? year_words(static_cast<std::uint32_t>(*v))
                                                                 : cardinal_words(*v));
      }
    }
    if (at(e) == '%') {
      n.end = e + 1;
      return n.words() + " percent";
    }
    if (o_.unit_normalization)
      if (std::optional<std::string> unit = unit_after(e, n)) return n.words() + " " + *unit;
    if (v && !n.had_commas && n.integer_digits.size() == 4 && is_year(*v))
      return year_words(static_cast<std::uint32_t>(*v));
    return n.words();
  }

  static bool is_year(std::uint64_t v) noexcept { return (v >= 1100 && v <= 1999) || (v >= 2010 && v <= 2099); }

  /// The unit symbol right after the number (or after one space), read in
  /// the singular after exactly one; moves n.end past it.
  std::optional<std::string> unit_after(std::size_t e, WrittenNumber& n) const {
    const std::size_t start = at(e) == ' ' ? e + 1 : e;
    const UnitWords* best = nullptr;
    for (const UnitWords& u : unit_words)
      if (s_.substr(start).starts_with(u.symbol) && boundary(start + u.symbol.size()) &&
          (!best || u.symbol.size() > best->symbol.size()))
        best = &u;
    if (!best) return std::nullopt;
    n.end = start + best->symbol.size();
    const bool one = n.fraction_digits.empty() && n.integer_digits == "1";
    return std::string(one ? best->singular : best->plural);
  }

  bool dotted_numbers(std::size_t p, bool negative) {
    std::string words = negative ? "minus" : "";
    while (is_digit(at(p))) {
      std::size_t q = p;
      while (is_digit(at(q))) ++q;
      WrittenNumber part;
      part.integer_digits = std::string(s_.substr(p, q - p));
      append_word(words, part.words());
      p = q;
      if (at(p) == '.' && is_digit(at(p + 1))) {
        append_word(words, "point");
        ++p;
      }
    }
    emit(words);
    i_ = p;
    return true;
  }

  // --- money -----------------------------------------------------------------

  bool money() {
    std::size_t p = i_;
    const bool negative = at(p) == '-';
    if (negative) ++p;
    const CurrencyWords* currency = nullptr;
    for (const CurrencyWords& c : currency_words)
      if (s_.substr(p).starts_with(c.sign)) currency = &c;
    if (!currency || !is_digit(at(p + currency->sign.size()))) return false;
    WrittenNumber n = read_written_number(s_, p + currency->sign.size());
    std::string words = negative ? "minus " : "";
    if (std::optional<std::string_view> scale = scale_after(n)) {
      words += n.words() + " " + std::string(*scale) + " " + std::string(currency->plural);
    } else {
      words += money_words(n, *currency);
    }
    emit(words);
    i_ = n.end;
    return true;
  }

  /// "million" in "$5 million", "$5m", "$5bn", "$5k"; moves n.end past it.
  std::optional<std::string_view> scale_after(WrittenNumber& n) const {
    static constexpr std::array<std::string_view, 4> words = {"thousand", "million", "billion", "trillion"};
    const std::size_t e = n.end;
    if (at(e) == ' ')
      for (std::string_view w : words)
        if (s_.substr(e + 1).starts_with(w) && boundary(e + 1 + w.size())) {
          n.end = e + 1 + w.size();
          return w;
        }
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 5> short_forms = {
        {{"k", "thousand"}, {"K", "thousand"}, {"m", "million"}, {"M", "million"}, {"bn", "billion"}}};
    for (const auto& [symbol, w] : short_forms)
      if (s_.substr(e).starts_with(symbol) && boundary(e + symbol.size())) {
        n.end = e + symbol.size();
        return w;
      }
    return std::nullopt;
  }

  static std::string money_words(const WrittenNumber& n, const CurrencyWords& c) {
    const std::optional<std::uint64_t> whole = n.value();
    const bool cents_form = !c.cent_singular.empty() && n.fraction_digits.size() <= 2 && whole.has_value();
    if (!cents_form) {
      const bool one = n.fraction_digits.empty() && n.integer_digits == "1";
      return n.words() + " " + std::string(one ? c.singular : c.plural);
    }
    unsigned cents = 0;
    if (!n.fraction_digits.empty()) {
      cents = static_cast<unsigned>(n.fraction_digits[0] - '0') * 10;
      if (n.fraction_digits.size() == 2) cents += static_cast<unsigned>(n.fraction_digits[1] - '0');
    }
    std::string out;
    if (*whole > 0 || cents == 0) out = cardinal_words(*whole) + " " + std::string(*whole == 1 ? c.singular : c.plural);
    if (cents > 0) {
      if (!out.empty()) out += " and ";
      out += cardinal_words(cents) + " " + std::string(cents == 1 ? c.cent_singular : c.cent_plural);
    }
    return out;
  }

  // --- times -----------------------------------------------------------------

  std::optional<unsigned> two_digits_at(std::size_t p, unsigned max) const {
    if (!is_digit(at(p)) || !is_digit(at(p + 1))) return std::nullopt;
    const unsigned v = static_cast<unsigned>(at(p) - '0') * 10 + static_cast<unsigned>(at(p + 1) - '0');
    return v <= max ? std::optional<unsigned>(v) : std::nullopt;
  }

  bool clock_time() {
    std::size_t p = i_;
    if (!is_digit(at(p))) return false;
    unsigned hour = static_cast<unsigned>(at(p++) - '0');
    if (is_digit(at(p))) hour = hour * 10 + static_cast<unsigned>(at(p++) - '0');
    if (hour > 24 || at(p) != ':') return false;
    const std::optional<unsigned> minutes = two_digits_at(p + 1, 59);
    if (!minutes) return false;
    p += 3;
    std::optional<unsigned> seconds;
    if (at(p) == ':') {
      seconds = two_digits_at(p + 1, 59);
      if (!seconds) return false;
      p += 3;
    }
    if (is_digit(at(p))) return false;
    const std::string_view meridiem = meridiem_after(p);
    std::string words = cardinal_words(hour);
    if (*minutes == 0) {
      if (meridiem.empty() && !seconds) words += " o'clock";
    } else if (*minutes < 10) {
      words += " oh " + std::string(small_number_words[*minutes]);
    } else {
      words += " " + cardinal_words(*minutes);
    }
    if (seconds) words += " and " + cardinal_words(*seconds) + (*seconds == 1 ? " second" : " seconds");
    if (!meridiem.empty()) words += meridiem;
    emit(words);
    i_ = p;
    return true;
  }

  /// " a m" / " p m" for am, pm, a.m., p.m. (any case, after at most one
  /// space) at p; moves p past it. Empty when none follows.
  std::string_view meridiem_after(std::size_t& p) const {
    const std::size_t start = at(p) == ' ' ? p + 1 : p;
    const char first = lower(at(start));
    if (first != 'a' && first != 'p') return {};
    std::size_t q = start + 1;
    if (at(q) == '.') ++q;
    if (lower(at(q)) != 'm') return {};
    ++q;
    if (at(q) == '.' && at(start + 1) == '.') ++q;
    if (!boundary(q)) return {};
    p = q;
    return first == 'a' ? " a m" : " p m";
  }

  // --- e-mail addresses, URLs, phone numbers ----------------------------------

  static bool is_email_local(char c) noexcept {
    return is_alnum(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-';
  }

  /// Domain labels joined by dots starting at p, ending before a dot that no
  /// label follows; returns the end, or p when there are not two labels
  /// with a last one of at least two letters.
  std::size_t domain_end(std::size_t p) const {
    std::size_t end = p, labels = 0, last_label_letters = 0;
    std::size_t q = p;
    while (true) {
      const std::size_t label_start = q;
      bool all_letters = true;
      while (is_alnum(at(q)) || at(q) == '-') all_letters &= is_letter(at(q++));
      if (q == label_start) break;
      ++labels;
      end = q;
      last_label_letters = all_letters ? q - label_start : 0;
      if (at(q) != '.' || !is_alnum(at(q + 1))) break;
      ++q;
    }
    return labels >= 2 && last_label_letters >= 2 ? end : p;
  }

  bool email() {
    if (!is_alnum(at(i_))) return false;
    std::size_t p = i_;
    while (is_email_local(at(p))) ++p;
    if (at(p) != '@') return false;
    const std::size_t end = domain_end(p + 1);
    if (end == p + 1 || !boundary(end)) return false;
    emit(spelled(s_.substr(i_, p - i_)) + " at " + spelled(s_.substr(p + 1, end - p - 1)));
    i_ = end;
    return true;
  }

  bool url() {
    std::size_t p = i_;
    for (std::string_view scheme : {std::string_view("https://"), std::string_view("http://")})
      if (starts_with_nocase(p, scheme)) p += scheme.size();
    if (p == i_ && !starts_with_nocase(p, "www.")) return false;
    std::size_t end = p;
    while (end < s_.size() && !is_url_stop(s_[end])) ++end;
    while (end > p && is_trailing_punctuation(s_[end - 1])) --end;
    if (end == p) return false;
    emit(spelled(s_.substr(p, end - p)));
    i_ = end;
    return true;
  }

  static bool is_url_stop(char c) noexcept {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '"' || c == '\'' || c == '<' || c == '>';
  }
  static bool is_trailing_punctuation(char c) noexcept {
    return c == '.' || c == ',' || c == ';' || c == ':' || c == '!' || c == '?' || c == ')' || c == ']';
  }
  bool starts_with_nocase(std::size_t p, std::string_view prefix) const {
    if (s_.size() - std::min(p, s_.size()) < prefix.size()) return false;
    for (std::size_t k = 0; k < prefix.size(); ++k)
      if (lower(s_[p + k]) != prefix[k]) return false;
    return true;
  }

  /// An address read out: separators as words, digits one by one, "www"
  /// letter by letter, other letters as written.
  static std::string spelled(std::string_view address) {
    std::string out;
    for (std::size_t k = 0; k < address.size(); ++k) {
      const char c = address[k];
      if (is_letter(c)) {
        const std::size_t start = k;
        while (k + 1 < address.size() && is_letter(address[k + 1])) ++k;
        const std::string_view word = address.substr(start, k - start + 1);
        append_word(out, (word == "www" || word == "WWW") ? "w w w" : word);
      } else if (is_digit(c)) {
        append_word(out, small_number_words[static_cast<std::size_t>(c - '0')]);
      } else if (std::string_view name = separator_name(c); !name.empty()) {
        append_word(out, name);
      } else {
        out += c;
      }
    }
    return out;
  }

  static std::string_view separator_name(char c) noexcept {
    switch (c) {
      case '.': return "dot";
      case '/': return "slash";
      case '-': return "dash";
      case '_': return "underscore";
      case '+': return "plus";
      case '%': return "percent";
      case ':': return "colon";
      case '?': return "question mark";
      case '=': return "equals";
      case '&': return "and";
      case '#': return "hash";
      case '~': return "tilde";
      case '@': return "at";
      default: return {};
    }
  }

  /// The digits of a group of exactly `count` at p, or nullopt.
  std::optional<std::string_view> digit_group(std::size_t p, std::size_t count) const {
    for (std::size_t k = 0; k < count; ++k)
      if (!is_digit(at(p + k))) return std::nullopt;
    return s_.substr(p, count);
  }

  // (555) 123-4567, 555-123-4567, 555.123.4567, +1 555 123 4567: a space
  // separates groups only after a country code or parentheses, so that
  // "100 200 3000" stays three numbers.
  bool phone() {
    std::size_t p = i_;
    std::string words;
    bool spaced_ok = false;
    if (at(p) == '+' && is_digit(at(p + 1))) {
      std::size_t q = p + 1;
      while (q < p + 4 && is_digit(at(q))) ++q;
      if (at(q) != ' ' && at(q) != '-' && at(q) != '.') return false;
      words = "plus " + digit_words(s_.substr(p + 1, q - p - 1)) + ",";
      p = q + 1;
      spaced_ok = true;
    }
    std::optional<std::string_view> area;
    if (at(p) == '(') {
      area = digit_group(p + 1, 3);
      if (!area || at(p + 4) != ')') return false;
      p += 5;
      if (at(p) == ' ') ++p;
      spaced_ok = true;
    } else {
      area = digit_group(p, 3);
      if (!area || !is_phone_separator(at(p + 3), spaced_ok)) return false;
      p += 4;
    }
    const std::optional<std::string_view> exchange = digit_group(p, 3);
    if (!exchange || !is_phone_separator(at(p + 3), spaced_ok)) return false;
    const std::optional<std::string_view> line = digit_group(p + 4, 4);
    if (!line || !boundary(p + 8)) return false;
    append_word(words, digit_words(*area) + ", " + digit_words(*exchange) + ", " + digit_words(*line));
    emit(words);
    i_ = p + 8;
    return true;
  }

  static bool is_phone_separator(char c, bool spaced_ok) noexcept {
    return c == '-' || c == '.' || (spaced_ok && c == ' ');
  }

  // --- plurals and symbols -------------------------------------------------------

  bool optional_plural() {
    if (i_ == 0 || !is_letter(s_[i_ - 1]) || s_.substr(i_, 3) != "(s)") return false;
    out_ += 's';
    i_ += 3;
    return true;
  }

  bool symbol() {
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 8> names = {{{"&", "and"},
                                                                                             {"+", "plus"},
                                                                                             {"=", "equals"},
                                                                                             {"@", "at"},
                                                                                             {"#", "number"},
                                                                                             {"%", "percent"},
                                                                                             {"~", "about"},
                                                                                             {"\xC2\xB0", "degrees"}}};
    for (const auto& [sign, word] : names)
      if (s_.substr(i_).starts_with(sign)) {
        emit(word);
        i_ += sign.size();
        return true;
      }
    return false;
  }

  static std::string collapse_spaces(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
      if (c == ' ' && (out.empty() || out.back() == ' ' || out.back() == '\n' || out.back() == '(')) continue;
      if ((c == '\n' || is_closing_punctuation(c)) && !out.empty() && out.back() == ' ') out.pop_back();
      out += c;
    }
    if (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
  }
  static bool is_closing_punctuation(char c) noexcept {
    return c == '.' || c == ',' || c == ';' || c == ':' || c == '!' || c == '?' || c == ')';
  }

  std::string_view s_;
  const SpeechTextOptions& o_;
  std::size_t i_ = 0;
  std::string out_;
};

}  // namespace detail

inline std::string cardinal_words(std::uint64_t n) {
  if (n == 0) return "zero";
  std::array<unsigned, 7> groups{};
  std::size_t count = 0;
  for (; n != 0; n /= 1000) groups[count++] = static_cast<unsigned>(n % 1000);
  std::string out;
  for (std::size_t g = count; g-- > 0;) {
    if (groups[g] == 0) continue;
    detail::append_below_thousand(out, groups[g]);
    if (g != 0) detail::append_word(out, detail::thousands_scale_words[g]);
  }
  return out;
}

inline std::string ordinal_words(std::uint64_t n) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 7> irregular = {{{"one", "first"},
                                                                                               {"two", "second"},
                                                                                               {"three", "third"},
                                                                                               {"five", "fifth"},
                                                                                               {"eight", "eighth"},
                                                                                               {"nine", "ninth"},
                                                                                               {"twelve", "twelfth"}}};
  std::string words = cardinal_words(n);
  const std::size_t cut = words.find_last_of(" -");
  const std::size_t start = cut == std::string::npos ? 0 : cut + 1;
  const std::string_view last(words.data() + start, words.size() - start);
  for (const auto& [cardinal, ordinal] : irregular)
    if (last == cardinal) return words.replace(start, std::string::npos, ordinal);
  if (words.back() == 'y') {
    words.pop_back();
    return words + "ieth";
  }
  return words + "th";
}

inline std::string year_words(std::uint32_t year) {
  if ((year >= 2000 && year <= 2009) || year < 1000 || year > 9999) return cardinal_words(year);
  const std::uint32_t century = year / 100, rest = year % 100;
  std::string out = cardinal_words(century);
  if (rest == 0) return out + " hundred";
  if (rest < 10) return out + " oh " + std::string(detail::small_number_words[rest]);
  return out + " " + cardinal_words(rest);
}

inline std::string normalize_speech_text(std::string_view text, const SpeechTextOptions& options) {
  if (!options.normalize) return std::string(text);
  return detail::SpeechTextRewriter(text, options).run();
}

}  // namespace izwi::text
