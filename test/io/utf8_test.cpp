// izwi's one UTF-8 module (core/detail/utf8.hpp), shared by the JSON and GGUF
// readers, the tokenizer and the server: validation, decoding, encoding,
// lossy repair and code-point counting agree with each other and with Unicode.

#include "io_test_support.hpp"

#include <izwi/core/detail/utf8.hpp>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

using namespace izwi::detail;

TEST_CASE("utf8: well-formed and ill-formed sequences (Unicode Table 3-7)", "[io][utf8]") {
  const std::vector<std::pair<std::string, bool>> table = {
      {"", true},
      {"plain ascii", true},
      {"\xc3\xa9", true},                 // é
      {"\xe6\x97\xa5\xe6\x9c\xac", true},  // 日本
      {"\xf0\x9f\x98\x80", true},         // U+1F600
      {"\xf4\x8f\xbf\xbf", true},         // U+10FFFF
      {"\xc0\xaf", false},                // overlong '/'
      {"\xe0\x80\xaf", false},            // overlong
      {"\xed\xa0\x80", false},            // surrogate D800
      {"\xf4\x90\x80\x80", false},        // above U+10FFFF
      {"\xe6\x97", false},                // truncated
      {"\x80", false},                    // lone continuation byte
      {"\xff", false},
      {"abcdefgh\xff", false},            // after an 8-byte ASCII run
  };
  for (const auto& [text, valid] : table) {
    INFO("bytes: " << text);
    CHECK(is_valid_utf8(text) == valid);
    CHECK((utf8_first_invalid(text) == std::string_view::npos) == valid);
  }
  CHECK(utf8_first_invalid("abcdefgh\xff") == 8);
  CHECK(utf8_sequence_length("\xf0\x9f\x98\x80", 0) == 4);
  CHECK(utf8_sequence_length("\xc0\xaf", 0) == 0);
}

TEST_CASE("utf8: encoding and decoding round-trip every scalar value", "[io][utf8]") {
  for (char32_t cp = 0; cp <= 0x10FFFF; cp += (cp < 0x800 ? 1 : 97)) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    std::string bytes;
    append_utf8(bytes, cp);
    REQUIRE(is_valid_utf8(bytes));
    REQUIRE(utf8_sequence_length(bytes, 0) == bytes.size());
    std::size_t pos = 0;
    REQUIRE(decode_utf8_unchecked(bytes, pos) == cp);
    REQUIRE(pos == bytes.size());
    REQUIRE(count_code_points(bytes) == 1);
  }
}

TEST_CASE("utf8: lossy repair gives one U+FFFD per maximal invalid subpart, code points are counted", "[io][utf8]") {
  const std::string fffd = "\xef\xbf\xbd";
  const auto repaired = [](std::string_view bytes) {
    std::string out;
    append_utf8_lossy(out, bytes);
    return out;
  };
  CHECK(repaired("ok") == "ok");
  CHECK(repaired("\xe6\x97x") == fffd + "x");           // truncated 3-byte sequence: one replacement
  CHECK(repaired("\xf0\x80\x80") == fffd + fffd + fffd);  // F0 80 is not a prefix of any sequence
  CHECK(repaired("a\xff\xfe") == "a" + fffd + fffd);
  CHECK(repaired("\xe6\x97") == fffd);                  // cut at the end
  CHECK(count_code_points("") == 0);
  CHECK(count_code_points("a\xc3\xa9\xe6\x97\xa5\xf0\x9f\x98\x80") == 4);
}
