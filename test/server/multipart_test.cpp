// multipart/form-data: what curl, browsers and the OpenAI SDK send parses to
// the right parts; every malformation is a 400 that says what is wrong; no
// input makes the parser read outside the body.

#include <catch2/catch.hpp>

#include <izwi/server/multipart.hpp>

#include <string>
#include <vector>

#include "server/multipart_test_support.hpp"

using namespace izwi::server;
using namespace izwi::server::multipart;
using izwi_multipart_test::Field;
using izwi_multipart_test::encode;

namespace {

std::string error_message(std::string_view content_type, std::string_view body, const Limits& limits = {}) {
  try {
    (void)parse_form_data(content_type, body, limits);
  } catch (const ApiError& e) {
    CHECK(e.status == 400);
    CHECK(e.type == "invalid_request_error");
    return e.what();
  }
  FAIL("no ApiError for body: " << body);
  return {};
}

const std::string ct = "multipart/form-data; boundary=XyZ";

}  // namespace

TEST_CASE("multipart: boundary from Content-Type", "[server][multipart]") {
  CHECK(boundary_from_content_type("multipart/form-data; boundary=abc123") == "abc123");
  CHECK(boundary_from_content_type("Multipart/Form-Data;BOUNDARY=\"a b:c\"") == "a b:c");
  CHECK(boundary_from_content_type("multipart/form-data; charset=utf-8; boundary=----WebKitFormBoundary7MA4YWxkTrZu0gW") ==
        "----WebKitFormBoundary7MA4YWxkTrZu0gW");
  CHECK(boundary_from_content_type("multipart/form-data; boundary=x;") == "x");

  auto message = [](std::string_view content_type) {
    try {
      (void)boundary_from_content_type(content_type);
    } catch (const ApiError& e) {
      CHECK(e.status == 400);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(message("multipart/form-data"), Catch::Contains("no boundary"));
  CHECK_THAT(message("multipart/form-data; charset=utf-8"), Catch::Contains("no boundary"));
  CHECK_THAT(message("application/json"), Catch::Contains("must be multipart/form-data"));
  CHECK_THAT(message(""), Catch::Contains("must be multipart/form-data"));
  CHECK_THAT(message("multipart/mixed; boundary=a"), Catch::Contains("must be multipart/form-data"));
  CHECK_THAT(message("multipart/form-data; boundary=\"unterminated"), Catch::Contains("malformed"));
  CHECK_THAT(message("multipart/form-data; boundary="), Catch::Contains("1 to 70"));
  CHECK_THAT(message("multipart/form-data; boundary=" + std::string(71, 'a')), Catch::Contains("1 to 70"));
  CHECK_THAT(message("multipart/form-data; boundary=\"a\\\"b\""), Catch::Contains("1 to 70"));
}

TEST_CASE("multipart: a transcription upload as the OpenAI SDK sends it", "[server][multipart]") {
  const std::string audio("RIFF\0\0\0\0WAVE\r\n--XY\r\n\xff\x00\x01", 21);  // binary, with CRLF and a near-boundary
  const std::string body = encode("XyZ", {
                                             {"file", "audio.wav", "audio/wav", audio},
                                             {"model", std::nullopt, std::nullopt, "whisper-1"},
                                             {"timestamp_granularities[]", std::nullopt, std::nullopt, "word"},
                                             {"timestamp_granularities[]", std::nullopt, std::nullopt, "segment"},
                                             {"prompt", std::nullopt, std::nullopt, ""},
                                         });
  const FormData form = parse_form_data(ct, body);
  REQUIRE(form.parts.size() == 5);
  const Part* file = form.find("file");
  REQUIRE(file);
  CHECK(file->filename == std::optional<std::string>("audio.wav"));
  CHECK(file->content_type == "audio/wav");
  CHECK(file->body == audio);
  // Views into the body, not copies.
  CHECK(file->body.data() >= body.data());
  CHECK(file->body.data() + file->body.size() <= body.data() + body.size());
  CHECK(form.find("model")->body == "whisper-1");
  CHECK_FALSE(form.find("model")->filename);
  CHECK(form.find("model")->content_type == "text/plain");
  const auto granularities = form.find_all("timestamp_granularities[]");
  REQUIRE(granularities.size() == 2);
  CHECK(granularities[0]->body == "word");
  CHECK(granularities[1]->body == "segment");
  CHECK(form.find("prompt")->body.empty());
  CHECK(form.find("missing") == nullptr);
  CHECK(form.find_all("missing").empty());
  CHECK(form.single("model") == form.find("model"));
  CHECK(form.single("missing") == nullptr);
}

TEST_CASE("multipart: single() refuses a field sent twice, naming it", "[server][multipart]") {
  const std::string body = encode("XyZ", {
                                             {"model", std::nullopt, std::nullopt, "a"},
                                             {"file", "a.wav", "audio/wav", "RIFF"},
                                             {"model", std::nullopt, std::nullopt, "b"},
                                             {"model", std::nullopt, std::nullopt, "c"},
                                         });
  const FormData form = parse_form_data(ct, body);
  CHECK(form.single("file") == form.find("file"));
  try {
    (void)form.single("model");
    FAIL("no ApiError for a field sent three times");
  } catch (const ApiError& e) {
    CHECK(e.status == 400);
    CHECK(e.param == std::optional<std::string>("model"));
    CHECK_THAT(std::string(e.what()), Catch::Contains("'model' is given 3 times"));
  }
  CHECK(form.find_all("model").size() == 3);  // kept, in order, for list fields
}

TEST_CASE("multipart: framing details of RFC 2046", "[server][multipart]") {
  // Preamble and epilogue are ignored; transport padding after a boundary is allowed.
  const std::string body =
      "This is a preamble.\r\n--XyZ  \t\r\n"
      "content-disposition: FORM-DATA; filename=\"a \\\"quoted\\\" name.txt\"; name=field\r\n"
      "X-Other: ignored\r\n"
      "\r\n"
      "value\r\n"
      "--XyZ--\r\nepilogue --XyZ garbage";
  const FormData form = parse_form_data(ct, body);
  REQUIRE(form.parts.size() == 1);
  CHECK(form.parts[0].name == "field");
  CHECK(form.parts[0].filename == std::optional<std::string>("a \"quoted\" name.txt"));
  CHECK(form.parts[0].body == "value");

  // A close delimiter right after the opening one: no parts.
  CHECK(parse_form_data(ct, "--XyZ--\r\n").parts.empty());
  // No CRLF after the close delimiter is fine too.
  CHECK(parse_form_data(ct, "--XyZ\r\nContent-Disposition: form-data; name=a\r\n\r\n1\r\n--XyZ--").parts.size() == 1);
  // The boundary string inside content, not after CRLF, is data.
  const FormData inner =
      parse_form_data(ct, "--XyZ\r\nContent-Disposition: form-data; name=a\r\n\r\nx--XyZ\n--XyZ y\r\n--XyZ--");
  CHECK(inner.parts[0].body == "x--XyZ\n--XyZ y");
  // Browsers' percent-encoded quotes are kept as sent; a lone backslash stays.
  CHECK(parse_form_data(ct, "--XyZ\r\nContent-Disposition: form-data; name=\"f\"; filename=\"C:\\dir\\%22x%22\"\r\n\r\n"
                            "\r\n--XyZ--")
            .parts[0]
            .filename == std::optional<std::string>("C:\\dir\\%22x%22"));
}

TEST_CASE("multipart: encode/parse round trip over many shapes", "[server][multipart]") {
  std::vector<Field> fields;
  for (int i = 0; i < 20; ++i) {
    std::string content;
    for (int j = 0; j < i * 7; ++j) content += static_cast<char>((i * 31 + j * 17) & 0xff);
    if (i % 3 == 0) content += "\r\n--Xoundary-ish\r\n";  // near every boundary below, equal to none
    Field field;
    field.name = std::string("f").append(std::to_string(i % 5));  // (GCC 12 -Wrestrict misfires on "f" + string)
    if (i % 2) field.filename = std::string("n").append(std::to_string(i));
    if (i % 4) field.content_type = "application/octet-stream";
    field.content = std::move(content);
    fields.push_back(std::move(field));
  }
  for (const std::string& boundary : std::vector<std::string>{"b", "----WebKitFormBoundaryABC", std::string(70, 'z'), "a b"}) {
    const std::string body = encode(boundary, fields);
    const FormData form = parse(body, boundary);
    REQUIRE(form.parts.size() == fields.size());
    for (std::size_t i = 0; i < fields.size(); ++i) {
      CHECK(form.parts[i].name == fields[i].name);
      CHECK(form.parts[i].filename == fields[i].filename);
      CHECK(form.parts[i].content_type == fields[i].content_type.value_or("text/plain"));
      CHECK(form.parts[i].body == fields[i].content);
    }
    CHECK(form.find_all("f0").size() == 4);
  }
}

TEST_CASE("multipart: every malformation is a 400 saying what is wrong", "[server][multipart]") {
  const std::string part = "Content-Disposition: form-data; name=\"a\"\r\n\r\nvalue";
  struct Case {
    std::string body;
    std::string message_part;
  };
  const std::vector<Case> cases = {
      {"", "opening boundary '--XyZ' is missing"},
      {"no boundary here", "opening boundary"},
      {"--XyZ", "ends after a boundary"},
      {"--XyZ\r\n" + part, "final boundary '--XyZ--' is missing"},                // truncated in a part
      {"--XyZ\r\n" + part + "\r\n--XyZ", "ends after a boundary"},               // no "--" at the end
      {"--XyZ\r\n" + part + "\r\n--XyZ\r\n", "ends inside the headers of part 2"},
      {"--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n", "ends inside the headers of part 1"},
      {"--XyZ\r\nContent-Disposition: form-data; name=\"a\"", "ends inside the headers"},
      {"--XyZjunk\r\n" + part + "\r\n--XyZ--", "not followed by CRLF"},
      {"--XyZ\r\n\r\nvalue\r\n--XyZ--", "part 1 has no Content-Disposition"},
      {"--XyZ\r\nContent-Type: text/plain\r\n\r\nvalue\r\n--XyZ--", "part 1 has no Content-Disposition"},
      {"--XyZ\r\nContent-Disposition: attachment; name=\"a\"\r\n\r\nv\r\n--XyZ--", "is not form-data"},
      {"--XyZ\r\nContent-Disposition: form-data; filename=\"a\"\r\n\r\nv\r\n--XyZ--", "has no name"},
      {"--XyZ\r\nContent-Disposition: form-data; name=\"\"\r\n\r\nv\r\n--XyZ--", "has no name"},
      {"--XyZ\r\nContent-Disposition: form-data; name=\"a\r\n\r\nv\r\n--XyZ--", "malformed Content-Disposition"},
      {"--XyZ\r\nContent-Disposition: form-data; name\r\n\r\nv\r\n--XyZ--", "malformed Content-Disposition"},
      {"--XyZ\r\nContent-Disposition: form-data; name=a\r\nContent-Disposition: form-data; name=b\r\n\r\nv\r\n--XyZ--",
       "two Content-Disposition"},
      {"--XyZ\r\nContent-Disposition: form-data;\r\n name=a\r\n\r\nv\r\n--XyZ--", "folded header"},
      {"--XyZ\r\nno colon\r\n\r\nv\r\n--XyZ--", "header line without a name"},
      {"--XyZ\r\n" + part + "\r\n--XyZ\r\nContent-Disposition: form-data\r\n\r\nv\r\n--XyZ--", "part 2"},
  };
  for (const Case& c : cases) {
    INFO(c.body);
    CHECK_THAT(error_message(ct, c.body), Catch::Contains(c.message_part));
  }
}

TEST_CASE("multipart: limits on parts and header size", "[server][multipart]") {
  std::vector<Field> fields(5, Field{"x", std::nullopt, std::nullopt, "1"});
  const std::string body = encode("XyZ", fields);
  Limits four;
  four.max_parts = 4;
  CHECK_THAT(error_message(ct, body, four), Catch::Contains("more than 4 parts"));
  Limits five;
  five.max_parts = 5;
  CHECK(parse_form_data(ct, body, five).parts.size() == 5);

  const std::string big_header = "--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\nX-Pad: " +
                                 std::string(20000, 'p') + "\r\n\r\nv\r\n--XyZ--";
  CHECK_THAT(error_message(ct, big_header), Catch::Contains("exceed 16384 bytes"));
  Limits roomy;
  roomy.max_header_bytes = 32 * 1024;
  CHECK(parse_form_data(ct, big_header, roomy).parts.size() == 1);
}

TEST_CASE("multipart: every prefix of a valid body is refused, never misread", "[server][multipart]") {
  const std::string body = encode("XyZ", {{"file", "a.bin", "application/octet-stream", std::string("ab\r\ncd", 6)},
                                          {"model", std::nullopt, std::nullopt, "m"}});
  const std::string_view full(body);
  const std::size_t close = full.rfind("--XyZ--");
  for (std::size_t n = 0; n < body.size(); ++n) {
    INFO(n);
    // Every cut before the close delimiter's "--" is complete is a 400.
    const std::string prefix(full.substr(0, n));
    if (n >= close + 7) {
      CHECK(parse_form_data(ct, prefix).parts.size() == 2);
    } else {
      try {
        (void)parse_form_data(ct, prefix);
        FAIL("prefix of " << n << " bytes parsed");
      } catch (const ApiError& e) {
        CHECK(e.status == 400);
      }
    }
  }
}
