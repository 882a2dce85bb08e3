// izwi/text/speech_normalizer.hpp: number words against an independent
// implementation (npm number-to-words, run by node at test time), every rule
// on its own, and properties over arbitrary text (nothing lost that no rule
// reads, a second pass changes nothing, any bytes in, no throw).

#include <catch2/catch.hpp>

#include <izwi/text/speech_normalizer.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizer_test_support.hpp"

using izwi::text::normalize_speech_text;
using izwi::text::SpeechTextOptions;

namespace {

std::string without_commas(std::string s) {
  std::erase(s, ',');
  return s;
}

std::vector<std::uint64_t> number_words_sample() {
  std::vector<std::uint64_t> numbers;
  for (std::uint64_t n = 0; n <= 2100; ++n) numbers.push_back(n);
  // Log-uniform up to 2^53 - 1 (the reference's limit), plus the round
  // numbers and their neighbours where scale words change.
  std::mt19937_64 rng(2026);
  for (int i = 0; i < 3000; ++i) {
    const int bits = 12 + static_cast<int>(rng() % 42);
    numbers.push_back(rng() & ((std::uint64_t{1} << bits) - 1));
  }
  for (std::uint64_t scale = 1000; scale < (std::uint64_t{1} << 53) / 10; scale *= 10)
    for (std::uint64_t n : {scale - 1, scale, scale + 1, scale * 7 + 11}) numbers.push_back(n);
  numbers.push_back((std::uint64_t{1} << 53) - 1);
  return numbers;
}

SpeechTextOptions with_units() {
  SpeechTextOptions o;
  o.unit_normalization = true;
  return o;
}

}  // namespace

TEST_CASE("speech text: cardinal and ordinal words equal npm number-to-words", "[text][reference]") {
  const auto node_modules = izwi_tokenizer_test::reference_node_modules();
  if (!izwi_tokenizer_test::node_available() ||
      !std::filesystem::exists(node_modules / "number-to-words" / "package.json")) {
    std::printf("SKIPPED: node or test/reference/node_modules/number-to-words missing: "
                "run scripts/install-references.sh\n");
    WARN("skipped: node reference unavailable");
    return;
  }
  const std::vector<std::uint64_t> numbers = number_words_sample();
  const auto dir = izwi_tokenizer_test::work_dir();
  const std::string in_path = (dir / "number_words.in.txt").string();
  const std::string out_path = (dir / "number_words.out.txt").string();
  {
    std::ofstream in(in_path);
    for (std::uint64_t n : numbers) in << n << "\n";
  }
  std::remove(out_path.c_str());
  const std::string script = std::string(IZWI_SOURCE_DIR) + "/test/tokenizer/number_words_reference.mjs";
  const std::string command = "node " + izwi_tokenizer_test::quoted(script) + " " +
                              izwi_tokenizer_test::quoted(node_modules.string()) + " " +
                              izwi_tokenizer_test::quoted(in_path) + " " + izwi_tokenizer_test::quoted(out_path);
  REQUIRE(std::system(command.c_str()) == 0);
  std::ifstream out(out_path);
  std::string line;
  std::size_t compared = 0;
  for (std::uint64_t n : numbers) {
    REQUIRE(std::getline(out, line));
    const std::size_t tab = line.find('\t');
    REQUIRE(tab != std::string::npos);
    // number-to-words puts a comma after each scale word; izwi writes none.
    const std::string cardinal = without_commas(line.substr(0, tab));
    const std::string ordinal = without_commas(line.substr(tab + 1));
    if (izwi::text::cardinal_words(n) != cardinal || izwi::text::ordinal_words(n) != ordinal) {
      INFO(n);
      CHECK(izwi::text::cardinal_words(n) == cardinal);
      CHECK(izwi::text::ordinal_words(n) == ordinal);
    }
    ++compared;
  }
  CHECK(compared == numbers.size());
}

TEST_CASE("speech text: numbers, years, decades, ordinals and percentages", "[text]") {
  CHECK(normalize_speech_text("1,234,567.89 items") ==
        "one million two hundred thirty-four thousand five hundred sixty-seven point eight nine items");
  CHECK(normalize_speech_text("-3 and 21st, 2nd, 3rd, 11th") == "minus three and twenty-first, second, third, eleventh");
  CHECK(normalize_speech_text("In 1984, 1900, 1905, 2005 and 2024.") ==
        "In nineteen eighty-four, nineteen hundred, nineteen oh five, two thousand five and twenty twenty-four.");
  CHECK(normalize_speech_text("the 1990s, 80s and 2000s") == "the nineteen nineties, eighties and two thousands");
  CHECK(normalize_speech_text("50% and 12.5%") == "fifty percent and twelve point five percent");
  // Not ordinary numbers: leading zeros, more than 18 digits, versions, inside a word.
  CHECK(normalize_speech_text("007") == "zero zero seven");
  CHECK(normalize_speech_text("1234567890123456789") ==
        "one two three four five six seven eight nine zero one two three four five six seven eight nine");
  CHECK(normalize_speech_text("version 1.2.3") == "version one point two point three");
  CHECK(normalize_speech_text("x86 and 3D") == "x86 and three D");
  // 1,23 is not a thousands group: two numbers.
  CHECK(normalize_speech_text("1,23") == "one, twenty-three");
  // Four digits outside the year ranges read as cardinals.
  CHECK(normalize_speech_text("1000 and 2000 and 9999") ==
        "one thousand and two thousand and nine thousand nine hundred ninety-nine");
}

TEST_CASE("speech text: money in four currencies, with cents and scale words", "[text]") {
  CHECK(normalize_speech_text("$12.50") == "twelve dollars and fifty cents");
  CHECK(normalize_speech_text("$1.01 and $0.99 and $1 and $0") ==
        "one dollar and one cent and ninety-nine cents and one dollar and zero dollars");
  CHECK(normalize_speech_text("$12.5") == "twelve dollars and fifty cents");
  CHECK(normalize_speech_text("$1.005") == "one point zero zero five dollars");
  CHECK(normalize_speech_text("\xC2\xA3" "1 and \xC2\xA3" "2.01") == "one pound and two pounds and one penny");
  CHECK(normalize_speech_text("\xE2\x82\xAC" "2.5 million") == "two point five million euros");
  CHECK(normalize_speech_text("\xC2\xA5" "500") == "five hundred yen");
  CHECK(normalize_speech_text("$5m, $3bn, $10k, -$3") ==
        "five million dollars, three billion dollars, ten thousand dollars, minus three dollars");
  CHECK(normalize_speech_text("(see $5)") == "(see five dollars)");
}

TEST_CASE("speech text: clock times", "[text]") {
  CHECK(normalize_speech_text("at 9:05 pm") == "at nine oh five p m");
  CHECK(normalize_speech_text("10:00, 7:00 AM, 7:30 a.m.") == "ten o'clock, seven a m, seven thirty a m");
  CHECK(normalize_speech_text("12:30:45") == "twelve thirty and forty-five seconds");
  // Not times: a ratio, minutes past 59, hours past 24.
  CHECK(normalize_speech_text("3:2") == "three: two");
  CHECK(normalize_speech_text("9:75") == "nine: seventy-five");
  CHECK(normalize_speech_text("45:30") == "forty-five: thirty");
}

TEST_CASE("speech text: e-mail addresses, URLs and phone numbers", "[text]") {
  CHECK(normalize_speech_text("Mail jo.doe_2@mail.example.com.") ==
        "Mail jo dot doe underscore two at mail dot example dot com.");
  CHECK(normalize_speech_text("see www.izwi.dev.") == "see w w w dot izwi dot dev.");
  CHECK(normalize_speech_text("https://example.com/a-b_c?x=1&y=2, then") ==
        "example dot com slash a dash b underscore c question mark x equals one and y equals two, then");
  CHECK(normalize_speech_text("Call (555) 123-4567 or 555.123.4567") ==
        "Call five five five, one two three, four five six seven or five five five, one two three, four five six seven");
  CHECK(normalize_speech_text("+44 207 123 4567") ==
        "plus four four, two zero seven, one two three, four five six seven");
  // Spaces alone do not make a phone number; an address needs a dot in its domain.
  CHECK(normalize_speech_text("100 200 3000") == "one hundred two hundred three thousand");
  CHECK(normalize_speech_text("me@home") == "me at home");
}

TEST_CASE("speech text: units only when asked, symbols and optional plurals", "[text]") {
  CHECK(normalize_speech_text("10 KB and 5km, 1 kg, 1 ft, 2 ft, 25\xC2\xB0" "C.", with_units()) ==
        "ten kilobytes and five kilometers, one kilogram, one foot, two feet, twenty-five degrees Celsius.");
  CHECK(normalize_speech_text("10 KB, 25\xC2\xB0" "C") == "ten KB, twenty-five degrees C");
  CHECK(normalize_speech_text("5 m and 5 min", with_units()) == "five meters and five minutes");
  CHECK(normalize_speech_text("word(s) C++ a=b #1 ~5 R&D") == "words C plus plus a equals b number one about five R and D");
}

TEST_CASE("speech text: each option turns its rule off", "[text]") {
  SpeechTextOptions o;
  o.normalize = false;
  CHECK(normalize_speech_text("$5 at 9:05, a@b.com", o) == "$5 at 9:05, a@b.com");
  o = {};
  o.email_normalization = false;
  CHECK(normalize_speech_text("a@b.com") == "a at b dot com");
  CHECK(normalize_speech_text("a@b.com", o) == "a at b.com");
  o = {};
  o.url_normalization = false;
  o.replace_remaining_symbols = false;
  CHECK(normalize_speech_text("www.a.com", o) == "www.a.com");
  o = {};
  o.phone_normalization = false;
  CHECK(normalize_speech_text("555-123-4567", o) == "five hundred fifty-five - one hundred twenty-three - four thousand five hundred sixty-seven");
  o = {};
  o.optional_pluralization_normalization = false;
  CHECK(normalize_speech_text("word(s)", o) == "word(s)");
  o = {};
  o.replace_remaining_symbols = false;
  CHECK(normalize_speech_text("R&D", o) == "R&D");
}

TEST_CASE("speech text: text without digits or symbols passes unchanged, a second pass changes nothing", "[text]") {
  const std::vector<std::string> texts = {
      "Hello, world! How are you today?",
      "Caf\xC3\xA9 cr\xC3\xA8me br\xC3\xBBl\xC3\xA9\x65 \xE2\x80\x94 \xE4\xBD\xA0\xE5\xA5\xBD\xE4\xB8\x96\xE7\x95\x8C.",
      "Line one.\nLine two.",
      "It costs $12.50 at 9:05 pm on 1/2/2024, see www.izwi.dev or mail a.b@c.org; call (555) 123-4567.",
      "The 1990s: 50% of 3,000 people (s) R&D #2 x86 v1.2.3 \xC2\xA3" "5 \xE2\x82\xAC" "3.",
  };
  CHECK(normalize_speech_text(texts[0]) == texts[0]);
  CHECK(normalize_speech_text(texts[1]) == texts[1]);
  CHECK(normalize_speech_text(texts[2]) == texts[2]);
  for (const std::string& t : texts) {
    INFO(t);
    const std::string once = normalize_speech_text(t, with_units());
    CHECK(normalize_speech_text(once, with_units()) == once);
    CHECK(once.find_first_of("$%&@#") == std::string::npos);
  }
}

TEST_CASE("speech text: arbitrary bytes never throw and keep every non-ASCII byte", "[text]") {
  std::mt19937 rng(11);
  const std::string alphabet = "0123456789$.,:;-+()%@&#~ ampsthKBkg\xC2\xA3\xE2\x82\xAC\xB0\xFF\n";
  for (int round = 0; round < 2000; ++round) {
    std::string text(rng() % 40, ' ');
    for (char& c : text) c = alphabet[rng() % alphabet.size()];
    std::string normalized;
    REQUIRE_NOTHROW(normalized = normalize_speech_text(text, with_units()));
    // Bytes of UTF-8 sequences are never split or dropped unless a rule
    // read the whole sign they belong to (currency, degree).
    const auto count_byte = [](const std::string& s, char b) { return std::count(s.begin(), s.end(), b); };
    CHECK(count_byte(normalized, '\xFF') == count_byte(text, '\xFF'));
  }
}
