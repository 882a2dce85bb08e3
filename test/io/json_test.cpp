// The strict JSON reader: what it accepts, and that each kind of malformed
// document is refused with json_error naming the file, line and column.

#include "io_test_support.hpp"

#include <izwi/io/json.hpp>

#include <string>
#include <utility>
#include <vector>

using izwi::io::JsonKind;
using izwi::io::JsonValue;
using izwi::io::json_error;
using izwi::io::parse_json;
using namespace izwi_io_test;

TEST_CASE("json: values of every kind parse with their exact contents", "[io][json]") {
  const JsonValue doc = parse_json(R"( {
    "null": null, "t": true, "f": false,
    "int": -42, "zero": 0, "big": 9007199254740993, "huge": 18446744073709551616,
    "frac": 0.5, "exp": 1e-06, "neg_exp": -2.5E+3,
    "text": "tab\t quote\" slash\/ back\\ \u00e9 \ud83d\ude00 日本",
    "list": [1, [2, [3]], {}],
    "nested": {"a": {"b": []}}
  } )");
  REQUIRE(doc.is_object());
  CHECK(doc.find("null")->is_null());
  CHECK(doc.find("t")->as_bool());
  CHECK_FALSE(doc.find("f")->as_bool());
  CHECK(doc.find("int")->as_int64() == -42);
  CHECK(doc.find("zero")->as_int64() == 0);
  // Integers beyond 2^53 keep their exact value.
  CHECK(doc.find("big")->as_int64() == 9007199254740993LL);
  // Beyond int64: a number, not an integer.
  CHECK(doc.find("huge")->is_number());
  CHECK_FALSE(doc.find("huge")->is_integer());
  CHECK(doc.find("huge")->as_double() == Approx(1.8446744073709552e19));
  CHECK(doc.find("frac")->as_double() == 0.5);
  CHECK_FALSE(doc.find("frac")->is_integer());
  CHECK(doc.find("exp")->as_double() == 1e-06);
  CHECK(doc.find("neg_exp")->as_double() == -2500.0);
  CHECK(doc.find("text")->as_string() == "tab\t quote\" slash/ back\\ \xc3\xa9 \xf0\x9f\x98\x80 \xe6\x97\xa5\xe6\x9c\xac");
  const auto& list = doc.find("list")->as_array();
  REQUIRE(list.size() == 3);
  CHECK(list[1].as_array()[1].as_array()[0].as_int64() == 3);
  CHECK(list[2].as_object().empty());
  CHECK(doc.find("nested")->find("a")->find("b")->as_array().empty());
  CHECK(doc.find("absent") == nullptr);
  CHECK(doc.find("int")->find("x") == nullptr);  // find on a non-object is null, not a throw
}

TEST_CASE("json: objects keep document order and look keys up in large objects", "[io][json]") {
  std::string text = "{";
  for (int i = 0; i < 500; ++i) text += (i ? "," : "") + std::string("\"k") + std::to_string(499 - i) + "\":" + std::to_string(i);
  text += "}";
  const JsonValue doc = parse_json(text);
  const auto& object = doc.as_object();
  REQUIRE(object.size() == 500);
  CHECK(object.begin()->first == "k499");
  CHECK(doc.find("k0")->as_int64() == 499);
  CHECK(doc.find("k250")->as_int64() == 249);
  CHECK(doc.find("k500") == nullptr);
}

TEST_CASE("json: accessors of the wrong kind throw izwi::error naming both kinds", "[io][json]") {
  const JsonValue doc = parse_json(R"({"s": "x", "n": 1.5})");
  const std::string m = message_of<izwi::error>([&] { doc.find("s")->as_int64(); });
  CHECK(contains(m, "string"));
  CHECK(contains(m, "number"));
  CHECK(contains(message_of<izwi::error>([&] { doc.find("n")->as_int64(); }), "not an integer"));
  CHECK(contains(message_of<izwi::error>([&] { doc.as_array(); }), "object"));
}

TEST_CASE("json: malformed documents are refused with the position and the problem", "[io][json]") {
  const std::vector<std::pair<std::string, std::string>> table = {
      {"", "unexpected end"},
      {"   ", "unexpected end"},
      {"{", "expected a string key"},
      {"{\"a\" 1}", "expected ':'"},
      {"{\"a\":1,}", "expected a string key"},
      {"[1,]", "expected a value"},
      {"[1 2]", "expected ',' or ']'"},
      {"{\"a\":1 \"b\":2}", "expected ',' or '}'"},
      {"{\"a\":1}{}", "unexpected bytes after"},
      {"// comment\n{}", "expected a value"},
      {"[NaN]", "expected a value"},
      {"[Infinity]", "expected a value"},
      {"[01]", "leading zero"},
      {"[-]", "must be followed by digits"},
      {"[1.]", "'.' in a number"},
      {"[1e]", "exponent"},
      {"[1e999]", "out of the range"},
      {"[+1]", "expected a value"},
      {"[tru]", "expected a value"},
      {"[\"abc]", "unterminated string"},
      {"[\"a\nb\"]", "control character"},
      {"[\"\\x\"]", "unknown escape"},
      {"[\"\\u12G4\"]", "bad hex digit"},
      {"[\"\\u12\"]", "bad hex digit"},
      {"[\"\\ud800\"]", "without its low half"},
      {"[\"\\udc00\"]", "lone low surrogate"},
      {"[\"\xff\"]", "invalid UTF-8"},
      {"[\"\xc0\xaf\"]", "invalid UTF-8"},          // overlong '/'
      {"[\"\xed\xa0\x80\"]", "invalid UTF-8"},      // encoded surrogate
      {"[\"\xf4\x90\x80\x80\"]", "invalid UTF-8"},  // above U+10FFFF
      {"[\"\xe6\x97\"]", "invalid UTF-8"},          // truncated sequence
      {"{\"a\":1,\"a\":2}", "duplicate key 'a'"},
      {"\xef\xbb\xbf{}", "byte order mark"},
  };
  for (const auto& [text, problem] : table) {
    INFO("document: " << text);
    const std::string m = message_of<json_error>([&] { parse_json(text, "doc.json"); });
    CHECK(contains(m, "doc.json: invalid JSON at line "));
    CHECK(contains(m, problem));
  }
}

TEST_CASE("json: a duplicate key in a large object is found too", "[io][json]") {
  std::string text = "{";
  for (int i = 0; i < 100; ++i) text += "\"k" + std::to_string(i) + "\":0,";
  text += "\"k42\":1}";
  CHECK(contains(message_of<json_error>([&] { parse_json(text); }), "duplicate key 'k42'"));
}

TEST_CASE("json: line and column point at the problem", "[io][json]") {
  try {
    parse_json("{\n  \"a\": 1,\n  \"b\": tru\n}", "cfg.json");
    FAIL("accepted");
  } catch (const json_error& e) {
    CHECK(e.file() == "cfg.json");
    CHECK(e.line() == 3);
    CHECK(e.column() == 8);
  }
}

TEST_CASE("json: nesting is capped, so deep input cannot exhaust the stack", "[io][json]") {
  const std::size_t ok_depth = izwi::io::json_max_depth;
  const std::string fine = std::string(ok_depth, '[') + std::string(ok_depth, ']');
  CHECK(parse_json(fine).is_array());
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  CHECK(contains(message_of<json_error>([&] { parse_json(deep); }), "nesting deeper than"));
  const std::string deep_objects = [] {
    std::string s;
    for (int i = 0; i < 10000; ++i) s += "{\"a\":";
    return s;
  }();
  CHECK(contains(message_of<json_error>([&] { parse_json(deep_objects); }), "nesting deeper than"));
}

TEST_CASE("json: read_json_file names a missing file; json_quote round-trips", "[io][json]") {
  ScratchDirectory dir("json");
  CHECK(contains(message_of<izwi::error>([&] { izwi::io::read_json_file(dir.path() / "nope.json"); }), "nope.json"));
  const std::string odd = "q\" b\\ nl\n ctl\x01 \xc3\xa9";
  write_text(dir.path() / "s.json", "[" + izwi::io::json_quote(odd) + "]");
  CHECK(izwi::io::read_json_file(dir.path() / "s.json").as_array()[0].as_string() == odd);
}
