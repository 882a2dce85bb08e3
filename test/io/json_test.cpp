// The JSON reader (Boost.JSON behind izwi::io::parse_json): what it accepts,
// and that each kind of malformed document is refused with json_error naming
// the file, line and column and saying what is wrong there.

#include "io_test_support.hpp"

#include <izwi/io/json.hpp>

#include <string>
#include <utility>
#include <vector>

using izwi::io::json_error;
using izwi::io::json_find;
using izwi::io::json_integer;
using izwi::io::json_number;
using izwi::io::json_string;
using izwi::io::JsonValue;
using izwi::io::parse_json;
using namespace izwi_io_test;

TEST_CASE("json: values of every kind parse with their exact contents", "[io][json]") {
  const JsonValue doc = parse_json(R"( {
    "null": null, "t": true, "f": false,
    "int": -42, "zero": 0, "big": 9007199254740993, "huge": 18446744073709551616,
    "frac": 0.5, "exp": 1e-06, "neg_exp": -2.5E+3, "tiny": 1e-400,
    "text": "tab\t quote\" slash\/ back\\ \u00e9 \ud83d\ude00 日本",
    "list": [1, [2, [3]], {}],
    "nested": {"a": {"b": []}}
  } )");
  REQUIRE(doc.is_object());
  CHECK(json_find(doc, "null")->is_null());
  CHECK(json_find(doc, "t")->as_bool());
  CHECK_FALSE(json_find(doc, "f")->as_bool());
  CHECK(json_integer(*json_find(doc, "int")) == -42);
  CHECK(json_integer(*json_find(doc, "zero")) == 0);
  // Integers beyond 2^53 keep their exact value.
  CHECK(json_integer(*json_find(doc, "big")) == 9007199254740993LL);
  // Beyond int64: a number, not an integer.
  CHECK(json_find(doc, "huge")->is_number());
  CHECK_FALSE(json_integer(*json_find(doc, "huge")).has_value());
  CHECK(*json_number(*json_find(doc, "huge")) == Approx(1.8446744073709552e19));
  CHECK(json_number(*json_find(doc, "frac")) == 0.5);
  CHECK_FALSE(json_integer(*json_find(doc, "frac")).has_value());
  CHECK(json_number(*json_find(doc, "exp")) == 1e-06);
  CHECK(json_number(*json_find(doc, "neg_exp")) == -2500.0);
  CHECK(json_number(*json_find(doc, "tiny")) == 0.0);  // underflow is harmless
  CHECK(json_string(*json_find(doc, "text")) ==
        "tab\t quote\" slash/ back\\ \xc3\xa9 \xf0\x9f\x98\x80 \xe6\x97\xa5\xe6\x9c\xac");
  const auto& list = json_find(doc, "list")->as_array();
  REQUIRE(list.size() == 3);
  CHECK(list[1].as_array()[1].as_array()[0].as_int64() == 3);
  CHECK(list[2].as_object().empty());
  CHECK(json_find(*json_find(*json_find(doc, "nested"), "a"), "b")->as_array().empty());
  CHECK(json_find(doc, "absent") == nullptr);
  CHECK(json_find(*json_find(doc, "int"), "x") == nullptr);  // find on a non-object is null, not a throw
  CHECK_FALSE(json_string(*json_find(doc, "int")).has_value());
  CHECK_FALSE(json_number(*json_find(doc, "text")).has_value());
}

TEST_CASE("json: objects keep document order and look keys up in large objects", "[io][json]") {
  std::string text = "{";
  for (int i = 0; i < 500; ++i) text += (i ? "," : "") + std::string("\"k") + std::to_string(499 - i) + "\":" + std::to_string(i);
  text += "}";
  const JsonValue doc = parse_json(text);
  const auto& object = doc.as_object();
  REQUIRE(object.size() == 500);
  CHECK(object.begin()->key() == "k499");
  CHECK(json_integer(*json_find(doc, "k0")) == 499);
  CHECK(json_integer(*json_find(doc, "k250")) == 249);
  CHECK(json_find(doc, "k500") == nullptr);
}

TEST_CASE("json: kind phrases name what a value is, for messages", "[io][json]") {
  const JsonValue doc = parse_json(R"({"s": "x", "n": 1.5, "i": 2, "b": true, "z": null, "a": [], "o": {}})");
  CHECK(izwi::io::json_kind_phrase(*json_find(doc, "s")) == "a string");
  CHECK(izwi::io::json_kind_phrase(*json_find(doc, "n")) == "a number");
  CHECK(izwi::io::json_kind_phrase(*json_find(doc, "i")) == "a number");
  CHECK(izwi::io::json_kind_phrase(*json_find(doc, "b")) == "a boolean");
  CHECK(izwi::io::json_kind_phrase(*json_find(doc, "z")) == "null");
  CHECK(izwi::io::json_kind_phrase(*json_find(doc, "a")) == "an array");
  CHECK(izwi::io::json_kind_phrase(*json_find(doc, "o")) == "an object");
}

TEST_CASE("json: malformed documents are refused with the position and the problem", "[io][json]") {
  const std::vector<std::pair<std::string, std::string>> table = {
      {"", "unexpected end"},
      {"   ", "unexpected end"},
      {"{", "unexpected end of the document, expected a string key"},
      {"{\"a\" 1}", "expected ':'"},
      {"{\"a\":1,}", "expected a string key after ','"},
      {"[1,]", "expected a value after ','"},
      {"[1 2]", "expected ',' or ']'"},
      {"{\"a\":1 \"b\":2}", "expected ',' or '}'"},
      {"{\"a\":1}{}", "unexpected bytes after"},
      {"// comment\n{}", "comments are not JSON"},
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
      {"{\"o\":{\"b\":[{\"c\":1,\"c\":1}]}}", "duplicate key 'c'"},
      {"[1] x", "unexpected bytes after"},
      {"{\"a\":tru}", "expected a value"},
      {"\xef\xbb\xbf{}", "byte order mark"},
  };
  for (const auto& [text, problem] : table) {
    INFO("document: " << text);
    // text by an init-capture: Clang before 16 cannot capture a structured binding.
    const std::string m = message_of<json_error>([&document = text] { parse_json(document, "doc.json"); });
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
    CHECK(e.offset() == 19);
    CHECK(contains(e.problem(), "expected a value"));
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

TEST_CASE("json: read_json_file names a missing file, json_quote round-trips", "[io][json]") {
  ScratchDirectory dir("json");
  CHECK(contains(message_of<izwi::error>([&] { izwi::io::read_json_file(dir.path() / "nope.json"); }), "nope.json"));
  const std::string odd = "q\" b\\ nl\n ctl\x01 \xc3\xa9";
  write_text(dir.path() / "s.json", "[" + izwi::io::json_quote(odd) + "]");
  CHECK(json_string(izwi::io::read_json_file(dir.path() / "s.json").as_array()[0]) == odd);
}
