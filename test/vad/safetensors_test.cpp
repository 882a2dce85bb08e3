// safetensors loader: good files read back exactly; each kind of corruption is
// refused with a format_error that names the file, the tensor and the problem.

#include <izwi/io/safetensors.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace {

using izwi::DType;
using izwi::io::SafetensorsFile;
using izwi::io::format_error;

template <class T>
std::span<const std::byte> as_bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span<const T>(v));
}

// A file from a literal header and a data section, header length as given
// (or the true length when `claimed_length` is negative).
std::vector<std::byte> hand_made(const std::string& header, std::size_t data_bytes, long long claimed_length = -1) {
  std::vector<std::byte> out(8 + header.size() + data_bytes, std::byte{0});
  const std::uint64_t length = claimed_length < 0 ? header.size() : static_cast<std::uint64_t>(claimed_length);
  std::memcpy(out.data(), &length, 8);
  std::memcpy(out.data() + 8, header.data(), header.size());
  for (std::size_t i = 0; i < data_bytes; ++i) out[8 + header.size() + i] = static_cast<std::byte>(i * 7 + 1);
  return out;
}

// Runs the parser and returns the message it refused the file with.
std::string refusal(std::vector<std::byte> bytes) {
  try {
    SafetensorsFile::from_bytes(std::move(bytes), "bad.safetensors");
  } catch (const format_error& e) {
    CHECK(e.file() == "bad.safetensors");
    return e.what();
  }
  FAIL("the file was accepted");
  return {};
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("safetensors: a written file reads back with dtypes, shapes, metadata", "[safetensors]") {
  const std::vector<float> a = {1.5f, -2.0f, 3.25f, 0.0f, 1e-3f, -7.0f};
  // F16 bits: 1.0, -2.0, 65504 (max), smallest subnormal 2^-24, +inf
  const std::vector<std::uint16_t> h = {0x3c00, 0xc000, 0x7bff, 0x0001, 0x7c00};
  // BF16 bits: 1.0, -3.0 (0xc040), 0.5 (0x3f00)
  const std::vector<std::uint16_t> b = {0x3f80, 0xc040, 0x3f00};
  std::vector<izwi::io::TensorToWrite> tensors = {
      {"layer.weight", DType::f32, {2, 3}, as_bytes_of(a)},
      {"half", DType::f16, {5}, as_bytes_of(h)},
      {"brain", DType::bf16, {1, 3}, as_bytes_of(b)},
      {"empty", DType::f32, {0, 4}, {}},
  };
  const auto path = std::filesystem::temp_directory_path() / "izwi_safetensors_roundtrip.safetensors";
  izwi::io::write_safetensors(path, tensors, {{"format", "pt"}, {"note", "quote \" and \\ and \n"}});

  const auto file = SafetensorsFile::open(path);
  REQUIRE(file.tensors().size() == 4);
  CHECK(file.metadata().at("format") == "pt");
  CHECK(file.metadata().at("note") == "quote \" and \\ and \n");
  const auto* w = file.find("layer.weight");
  REQUIRE(w != nullptr);
  CHECK(w->dtype == DType::f32);
  CHECK(w->shape == std::vector<std::uint64_t>{2, 3});
  CHECK(w->element_count() == 6);
  CHECK(file.to_f32("layer.weight") == a);
  CHECK(file.to_f32("layer.weight", {2, 3}) == a);
  CHECK_THROWS_AS(file.to_f32("layer.weight", {3, 2}), format_error);
  CHECK(file.find("nope") == nullptr);
  CHECK_THROWS_WITH(file.at("nope"), Catch::Contains("'nope'") && Catch::Contains("missing tensor"));

  const auto hf = file.to_f32("half");
  CHECK(hf[0] == 1.0f);
  CHECK(hf[1] == -2.0f);
  CHECK(hf[2] == 65504.0f);
  CHECK(hf[3] == std::ldexp(1.0f, -24));
  CHECK(std::isinf(hf[4]));
  CHECK(file.to_f32("brain") == std::vector<float>{1.0f, -3.0f, 0.5f});
  CHECK(file.to_f32("empty").empty());
  CHECK(file.bytes("half").size() == 10);
  std::filesystem::remove(path);
}

TEST_CASE("safetensors: the header parser accepts what the format allows", "[safetensors]") {
  // Padding spaces after the object, escapes in names, a scalar, no metadata.
  const std::string header =
      R"({"sc\u00e9l\"ar": {"shape": [], "dtype": "F32", "data_offsets": [0, 4]} , "b":{"dtype":"BF16","shape":[2],"data_offsets":[4,8]}}   )";
  const auto file = SafetensorsFile::from_bytes(hand_made(header, 8));
  const auto* scalar = file.find("sc\xc3\xa9l\"ar");
  REQUIRE(scalar != nullptr);
  CHECK(scalar->shape.empty());
  CHECK(scalar->element_count() == 1);
  CHECK(file.metadata().empty());
  CHECK(file.tensors()[0].name == "sc\xc3\xa9l\"ar");  // ordered by offset
}

TEST_CASE("safetensors: corrupt files are refused with a clear error", "[safetensors]") {
  const std::string good = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F16","shape":[2],"data_offsets":[8,12]}})";
  REQUIRE_NOTHROW(SafetensorsFile::from_bytes(hand_made(good, 12)));

  SECTION("shorter than the length field") {
    CHECK(contains(refusal(std::vector<std::byte>(5)), "truncated"));
  }
  SECTION("header length beyond the file") {
    CHECK(contains(refusal(hand_made(good, 12, 1'000'000)), "runs past the end"));
  }
  SECTION("absurd header length is not allocated") {
    CHECK(contains(refusal(hand_made(good, 12, 1LL << 60)), "100 MB"));
  }
  SECTION("truncated data section") {
    const auto message = refusal(hand_made(good, 10));
    CHECK(contains(message, "tensor 'b'"));
    CHECK(contains(message, "run past"));
  }
  SECTION("trailing bytes after the last tensor") {
    CHECK(contains(refusal(hand_made(good, 16)), "cover 12"));
  }
  SECTION("offsets out of bounds") {
    const std::string h = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F16","shape":[2],"data_offsets":[4000000000,4000000004]}})";
    CHECK(contains(refusal(hand_made(h, 12)), "tensor 'b'"));
  }
  SECTION("overlapping tensors") {
    const std::string h = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F16","shape":[2],"data_offsets":[4,8]}})";
    const auto message = refusal(hand_made(h, 8));
    CHECK(contains(message, "tensor 'b'"));
    CHECK(contains(message, "overlap"));
  }
  SECTION("hole between tensors") {
    const std::string h = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F16","shape":[2],"data_offsets":[10,14]}})";
    CHECK(contains(refusal(hand_made(h, 14)), "hole"));
  }
  SECTION("end before begin") {
    const std::string h = R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})";
    CHECK(contains(refusal(hand_made(h, 8)), "before begin"));
  }
  SECTION("size does not match shape x dtype") {
    const std::string h = R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})";
    const auto message = refusal(hand_made(h, 8));
    CHECK(contains(message, "tensor 'a'"));
    CHECK(contains(message, "needs 12 bytes"));
  }
  SECTION("shape product overflows") {
    const std::string h = R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})";
    CHECK(contains(refusal(hand_made(h, 8)), "overflows"));
  }
  SECTION("unsupported and unknown dtypes") {
    const std::string i64 = R"({"a":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})";
    CHECK(contains(refusal(hand_made(i64, 8)), "unsupported dtype I64"));
    const std::string bogus = R"({"a":{"dtype":"F33","shape":[1],"data_offsets":[0,8]}})";
    CHECK(contains(refusal(hand_made(bogus, 8)), "unknown dtype 'F33'"));
  }
  SECTION("duplicate names") {
    const std::string h = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
    const auto message = refusal(hand_made(h, 8));
    // Refused by the JSON reader (izwi::io::parse_json) before any tensor is read.
    CHECK(contains(message, "invalid header JSON at byte "));
    CHECK(contains(message, "duplicate key 'a'"));
  }
  SECTION("malformed JSON and shape violations") {
    const char* bad_headers[] = {
        R"([])",
        R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]})",            // unterminated
        R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}x)",          // trailing garbage
        R"({"a":{"dtype":"F32","shape":[1.0],"data_offsets":[0,4]}})",         // fraction
        R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})",          // negative
        R"({"a":{"dtype":"F32","shape":[01],"data_offsets":[0,4]}})",          // leading zero
        R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})",         // three offsets
        R"({"a":{"dtype":"F32","shape":[1]}})",                                // missing offsets
        R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}})",     // unknown key
        R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"__metadata__":{"k":1}})",  // non-string metadata
        R"({"a\q":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",         // bad escape
        R"({"\ud800":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",      // lone surrogate
        "{\"\xff\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",   // invalid UTF-8
        "{\"a\x01\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",  // control char
        R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},})",          // trailing comma
    };
    for (const char* h : bad_headers) {
      INFO(h);
      CHECK_THROWS_AS(SafetensorsFile::from_bytes(hand_made(h, 4)), format_error);
    }
  }
  SECTION("every truncation of a good file is refused without reading out of bounds") {
    const auto whole = hand_made(good, 12);
    for (std::size_t n = 0; n < whole.size(); ++n) {
      INFO(n);
      CHECK_THROWS_AS(SafetensorsFile::from_bytes(std::vector<std::byte>(whole.begin(), whole.begin() + n)), format_error);
    }
  }
}

TEST_CASE("safetensors: missing file is an izwi::error naming the path", "[safetensors]") {
  CHECK_THROWS_WITH(SafetensorsFile::open("/nonexistent/izwi/model.safetensors"),
                    Catch::Contains("/nonexistent/izwi/model.safetensors"));
}
