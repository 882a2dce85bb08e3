// The corruption table: every named failure of a GGUF or safetensors file
// produces its format_error -- naming the file, the tensor or key, and the
// problem -- and nothing crashes, reads out of bounds or allocates what the
// header claims. Also: every truncation of a valid file, and random byte flips.

#include "io_test_support.hpp"

#include <izwi/io/gguf.hpp>
#include <izwi/io/safetensors.hpp>

#include <cstring>
#include <functional>
#include <random>

using namespace izwi::io;
using namespace izwi_io_test;

namespace {

// Little-endian GGUF bytes written by hand, so each field can lie.
struct GgufBytes {
  std::vector<std::byte> b;
  GgufBytes& raw(const void* p, std::size_t n) {
    const auto* c = static_cast<const std::byte*>(p);
    b.insert(b.end(), c, c + n);
    return *this;
  }
  GgufBytes& u8(std::uint8_t v) { return raw(&v, 1); }
  GgufBytes& u32(std::uint32_t v) { return raw(&v, 4); }
  GgufBytes& u64(std::uint64_t v) { return raw(&v, 8); }
  GgufBytes& str(std::string_view s) {
    u64(s.size());
    return raw(s.data(), s.size());
  }
  GgufBytes& header(std::uint64_t tensors, std::uint64_t kvs, std::uint32_t version = 3) {
    raw("GGUF", 4);
    u32(version);
    u64(tensors);
    return u64(kvs);
  }
  GgufBytes& kv_string(std::string_view key, std::string_view value) {
    str(key);
    u32(8);
    return str(value);
  }
  GgufBytes& kv_u32(std::string_view key, std::uint32_t value) {
    str(key);
    u32(4);
    return u32(value);
  }
  GgufBytes& tensor(std::string_view name, std::vector<std::uint64_t> ne, std::uint32_t type, std::uint64_t offset) {
    str(name);
    u32(static_cast<std::uint32_t>(ne.size()));
    for (auto d : ne) u64(d);
    u32(type);
    return u64(offset);
  }
  GgufBytes& pad(std::size_t alignment = 32) {
    while (b.size() % alignment) u8(0);
    return *this;
  }
  GgufBytes& data(std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) u8(static_cast<std::uint8_t>(i));
    return *this;
  }
};

std::string gguf_refusal(const std::vector<std::byte>& bytes) {
  try {
    GgufFile::from_bytes(bytes, "bad.gguf");
  } catch (const format_error& e) {
    CHECK(e.file() == "bad.gguf");
    return e.what();
  }
  FAIL("the file was accepted");
  return {};
}

// A valid GGUF with one F32 tensor "w" of 4 values (ne [4]).
GgufBytes one_tensor(std::vector<std::uint64_t> ne = {4}, std::uint32_t type = 0, std::uint64_t offset = 0,
                     std::size_t data_bytes = 16) {
  GgufBytes g;
  g.header(1, 1).kv_string("general.architecture", "x").tensor("w", std::move(ne), type, offset).pad().data(data_bytes).pad();
  return g;
}

}  // namespace

TEST_CASE("corruption: GGUF files are refused with the named problem", "[io][corruption][gguf]") {
  struct Case {
    std::string what;
    std::function<std::vector<std::byte>()> build;
    std::string expected;
  };
  const std::vector<Case> table = {
      {"valid baseline is accepted", [] { return std::vector<std::byte>{}; }, "truncated: 0 bytes"},
      {"bad magic", [] { auto g = one_tensor(); std::memcpy(g.b.data(), "GGML", 4); return g.b; }, "bad magic"},
      {"shorter than the magic", [] { return std::vector<std::byte>(3, std::byte{'G'}); }, "shorter than the 4-byte magic"},
      {"truncated header", [] { GgufBytes g; g.raw("GGUF", 4).u32(3).u32(0); return g.b; }, "truncated: the tensor count needs 8 bytes"},
      {"version 1", [] { GgufBytes g; g.header(0, 0, 1); return g.b; }, "GGUF version 1 is not supported"},
      {"version 4", [] { GgufBytes g; g.header(0, 0, 4); return g.b; }, "unsupported GGUF version 4"},
      {"big-endian", [] { GgufBytes g; g.header(0, 0, 0x03000000u); return g.b; }, "big-endian GGUF"},
      {"absurd tensor count", [] { GgufBytes g; g.header(1ull << 60, 0); return g.b; }, "tensor count 1152921504606846976 is impossible"},
      {"absurd metadata count", [] { GgufBytes g; g.header(0, 1ull << 40); return g.b; }, "metadata count 1099511627776 is impossible"},
      {"metadata array of 2^60 u8",
       [] { GgufBytes g; g.header(0, 1).str("big").u32(9).u32(0).u64(1ull << 60).data(64); return g.b; },
       "metadata 'big': array of 1152921504606846976 u8 elements cannot fit"},
      {"metadata array of 2^60 strings",
       [] { GgufBytes g; g.header(0, 1).str("big").u32(9).u32(8).u64(1ull << 60).data(64); return g.b; },
       "array of 1152921504606846976 string elements cannot fit"},
      {"string longer than the file",
       [] { GgufBytes g; g.header(0, 1).str("k").u32(8).u64(1ull << 62).data(8); return g.b; },
       "truncated: metadata 'k' (string of 4611686018427387904 bytes)"},
      {"key longer than the file", [] { GgufBytes g; g.header(0, 1).u64(~0ull).data(16); return g.b; }, "truncated: metadata key 0"},
      {"non-UTF-8 key", [] { GgufBytes g; g.header(0, 1).kv_u32("bad\xc3(", 1); return g.b; }, "metadata key 0 is not valid UTF-8"},
      {"empty key", [] { GgufBytes g; g.header(0, 1).kv_u32("", 1); return g.b; }, "metadata key 0 is empty"},
      {"duplicate key", [] { GgufBytes g; g.header(0, 2).kv_u32("a.b", 1).kv_u32("a.b", 2); return g.b; }, "metadata 'a.b': duplicate key"},
      {"array of arrays", [] { GgufBytes g; g.header(0, 1).str("n").u32(9).u32(9).u64(1).data(32); return g.b; }, "arrays of arrays are not supported"},
      {"unknown value type", [] { GgufBytes g; g.header(0, 1).str("t").u32(13).u32(0); return g.b; }, "metadata 't': unknown value type 13"},
      {"bool neither 0 nor 1", [] { GgufBytes g; g.header(0, 1).str("b").u32(7).u8(2); return g.b; }, "bool byte 2 is neither 0 nor 1"},
      {"alignment of the wrong type",
       [] { GgufBytes g; g.header(0, 1).str("general.alignment").u32(10).u64(32); return g.b; },
       "metadata 'general.alignment': is a u64, must be a u32"},
      {"alignment not a power of two", [] { GgufBytes g; g.header(0, 1).kv_u32("general.alignment", 48); return g.b; }, "48 is not a power of two"},
      {"alignment zero", [] { GgufBytes g; g.header(0, 1).kv_u32("general.alignment", 0); return g.b; }, "0 is not a power of two"},
      {"non-UTF-8 tensor name",
       [] { GgufBytes g; g.header(1, 0).tensor("w\xff", {4}, 0, 0).pad().data(16); return g.b; },
       "tensor info 0: tensor name is not valid UTF-8"},
      {"empty tensor name", [] { GgufBytes g; g.header(1, 0).tensor("", {4}, 0, 0).pad().data(16); return g.b; }, "empty tensor name"},
      {"tensor name too long",
       [] { GgufBytes g; g.header(1, 0).tensor(std::string(64, 'n'), {4}, 0, 0).pad().data(16); return g.b; },
       "name longer than 63 bytes"},
      {"duplicate tensor name",
       [] { GgufBytes g; g.header(2, 0).tensor("w", {4}, 0, 0).tensor("w", {4}, 0, 32).pad().data(64); return g.b; },
       "tensor 'w': duplicate tensor name"},
      {"five dimensions", [] { return one_tensor({1, 1, 1, 1, 4}).b; }, "tensor 'w': 5 dimensions; GGUF allows at most 4"},
      {"dimension beyond int64", [] { return one_tensor({1ull << 63}).b; }, "tensor 'w': dimension 0 is 9223372036854775808, beyond int64"},
      {"element count overflow", [] { return one_tensor({1ull << 40, 1ull << 40}).b; }, "has more elements than int64 can count"},
      {"byte size overflow", [] { return one_tensor({1ull << 62}).b; }, "tensor 'w': byte size overflows"},
      {"unsupported tensor type Q4_K", [] { return one_tensor({256}, 12).b; }, "tensor 'w': unsupported tensor type Q4_K"},
      {"unsupported tensor type I32", [] { return one_tensor({4}, 26).b; }, "unsupported tensor type I32"},
      {"unknown tensor type", [] { return one_tensor({4}, 99).b; }, "unsupported tensor type unknown type id 99"},
      {"Q8_0 row not whole blocks", [] { return one_tensor({33}, 8).b; }, "tensor 'w': Q8_0 rows must be whole 32-value blocks, but ne[0] is 33"},
      {"misaligned offset", [] { return one_tensor({4}, 0, 8).b; }, "tensor 'w': data offset 8 is not a multiple of the alignment 32"},
      {"tensor data beyond the file", [] { return one_tensor({4}, 0, 32).b; }, "tensor 'w': data [32, 48) runs past the end of the 32-byte data section"},
      {"tensor far beyond the file", [] { return one_tensor({4}, 0, 1ull << 62).b; }, "runs past the end"},
      {"truncated data", [] { return one_tensor({16}).b; }, "tensor 'w': data [0, 64) runs past the end of the 32-byte"},
      {"overlapping tensors",
       [] { GgufBytes g; g.header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {4}, 0, 32).pad().data(96); return g.b; },
       "tensor 'b': data [32, 48) overlaps tensor 'a' at [0, 64)"},
      {"file ends inside the padding",
       [] { GgufBytes g; g.header(1, 0).tensor("w", {4}, 0, 0); return g.b; },
       "ends inside the padding before the data section"},
  };
  for (const auto& c : table) {
    INFO(c.what);
    if (c.what == "valid baseline is accepted") {
      CHECK_NOTHROW(GgufFile::from_bytes(one_tensor().b));
      CHECK(GgufFile::from_bytes(one_tensor({8}, 0, 0, 32).b).to_f32("w").size() == 8);
    }
    CHECK(contains(gguf_refusal(c.build()), c.expected));
  }
}

TEST_CASE("corruption: GGUF missing tensor and wrong shape name the tensor", "[io][corruption][gguf]") {
  const GgufFile f = GgufFile::from_bytes(one_tensor({2, 2}, 0, 0, 16).b, "ok.gguf");
  CHECK(contains(message_of<format_error>([&] { f.tensor("absent"); }), "ok.gguf: tensor 'absent': missing tensor"));
  CHECK(contains(message_of<format_error>([&] { f.to_f32("absent"); }), "missing tensor"));
  CHECK(contains(message_of<format_error>([&] { f.expect_shape("w", {4}); }), "ok.gguf: tensor 'w': shape [2, 2]"));
  CHECK(contains(message_of<format_error>([&] { f.to_f32("w", {1, 4}); }), "expected [1, 4]"));
}

TEST_CASE("corruption: every truncation of a GGUF file is refused cleanly", "[io][corruption][gguf]") {
  GgufWriter w;
  w.set("general.architecture", GgufValue::string("qwen3"));
  w.set("tokenizer.ggml.tokens", GgufValue::strings({"a", "bb", "ccc"}));
  w.set("scores", GgufValue::floats(GgufValueType::float32, {0.5, 1.5, 2.5}));
  w.set("flag", GgufValue::boolean(true));
  w.add_tensor("a", GgmlType::q8_0, {2, 32}, random_values(64, 1));
  w.add_tensor("b", GgmlType::f16, {3}, random_values(3, 2));
  const std::vector<std::byte> full = w.serialize();
  const GgufFile whole = GgufFile::from_bytes(full);
  const std::uint64_t needed = whole.data_offset() + whole.tensor("b").offset + whole.tensor("b").byte_size;
  for (std::size_t n = 0; n < full.size(); ++n) {
    std::vector<std::byte> part(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
    if (n < needed) {
      CHECK_THROWS_AS(GgufFile::from_bytes(std::move(part)), format_error);
    } else {
      CHECK_NOTHROW(GgufFile::from_bytes(std::move(part)));  // only the final padding is missing
    }
  }
}

namespace {

std::vector<std::byte> safetensors_from(const std::string& header, std::size_t data_bytes, std::uint64_t claimed = 0) {
  std::vector<std::byte> out(8 + header.size() + data_bytes, std::byte{1});
  const std::uint64_t length = claimed ? claimed : header.size();
  std::memcpy(out.data(), &length, 8);
  std::memcpy(out.data() + 8, header.data(), header.size());
  return out;
}

std::string safetensors_refusal(const std::vector<std::byte>& bytes) {
  try {
    SafetensorsFile::from_bytes(bytes, "bad.safetensors");
  } catch (const format_error& e) {
    CHECK(e.file() == "bad.safetensors");
    return e.what();
  }
  FAIL("the file was accepted");
  return {};
}

}  // namespace

TEST_CASE("corruption: safetensors files are refused with the named problem", "[io][corruption][safetensors]") {
  const std::string ok = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  CHECK_NOTHROW(SafetensorsFile::from_bytes(safetensors_from(ok, 8)));
  const std::vector<std::tuple<std::string, std::vector<std::byte>, std::string>> table = {
      {"truncated below the length", std::vector<std::byte>(5), "truncated: 5 bytes"},
      {"header length lies", safetensors_from(ok, 8, 1000), "header length 1000 runs past the end"},
      {"absurd header length", safetensors_from(ok, 8, 1ull << 60), "exceeds the 100 MB limit"},
      {"tensor data beyond the file", safetensors_from(ok, 4), "tensor 'w': data_offsets [0, 8) run past the 4-byte data section"},
      {"offsets disagree with the shape", safetensors_from(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
       "tensor 'w': shape [3] of f32 needs 12 bytes but data_offsets span 8"},
      {"overlapping tensors",
       safetensors_from(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8),
       "overlap the previous tensor"},
      {"unsupported dtype", safetensors_from(R"({"w":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})", 8),
       "tensor 'w': unsupported dtype I64"},
      {"unknown dtype", safetensors_from(R"({"w":{"dtype":"Q8","shape":[1],"data_offsets":[0,8]}})", 8), "unknown dtype 'Q8'"},
      {"non-UTF-8 name", safetensors_from("{\"w\xff\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8), "invalid UTF-8"},
      {"shape overflow",
       safetensors_from(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8), "overflows"},
      {"header not JSON", safetensors_from("{\"w\" 1}", 8), "invalid header JSON"},
  };
  for (const auto& [what, bytes, expected] : table) {
    INFO(what);
    CHECK(contains(safetensors_refusal(bytes), expected));
  }
  const SafetensorsFile f = SafetensorsFile::from_bytes(safetensors_from(ok, 8), "ok.safetensors");
  CHECK(contains(message_of<format_error>([&] { f.at("absent"); }), "ok.safetensors: tensor 'absent': missing tensor"));
  CHECK(contains(message_of<format_error>([&] { f.to_f32("w", {1, 2}); }), "tensor 'w': shape [2], expected [1, 2]"));
}

TEST_CASE("corruption: every truncation of a safetensors file is refused cleanly", "[io][corruption][safetensors]") {
  const std::vector<float> a = random_values(6, 4);
  const std::vector<std::uint16_t> h = {1, 2, 3};
  const std::vector<TensorToWrite> tensors = {{"a", izwi::DType::f32, {2, 3}, as_bytes_of(a)},
                                              {"h", izwi::DType::bf16, {3}, as_bytes_of(h)}};
  const std::vector<std::byte> full = serialize_safetensors(tensors, {{"k", "v"}});
  CHECK_NOTHROW(SafetensorsFile::from_bytes(full));
  for (std::size_t n = 0; n < full.size(); ++n)
    CHECK_THROWS_AS(SafetensorsFile::from_bytes(std::vector<std::byte>(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n))),
                    format_error);
}

TEST_CASE("corruption: random byte changes never crash either reader", "[io][corruption]") {
  GgufWriter w;
  w.set("general.architecture", GgufValue::string("qwen3"));
  w.set("tokenizer.ggml.tokens", GgufValue::strings({"a", "bb"}));
  w.set("ids", GgufValue::integers(GgufValueType::int32, {1, 2, 3}));
  w.add_tensor("q", GgmlType::q8_0, {1, 32}, random_values(32, 5));
  w.add_tensor("h", GgmlType::bf16, {2, 2}, random_values(4, 6));
  const std::vector<std::byte> gguf = w.serialize();
  const std::vector<float> a = random_values(4, 7);
  const std::vector<TensorToWrite> tensors = {{"a", izwi::DType::f32, {2, 2}, as_bytes_of(a)}};
  const std::vector<std::byte> st = serialize_safetensors(tensors);

  std::mt19937 rng(12345);
  int accepted = 0, refused = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const bool use_gguf = trial % 2 == 0;
    std::vector<std::byte> bytes = use_gguf ? gguf : st;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < flips; ++i) {
      const std::size_t at = rng() % bytes.size();
      // Favour values that make lengths and counts lie.
      const std::uint32_t kind = rng() % 4;
      bytes[at] = kind == 0 ? std::byte{0xff} : kind == 1 ? std::byte{0} : static_cast<std::byte>(rng());
    }
    try {
      if (use_gguf) {
        const GgufFile f = GgufFile::from_bytes(std::move(bytes));
        for (const auto& t : f.tensors()) CHECK(f.to_f32(t.name).size() == t.element_count());
        for (const auto& m : f.metadata()) CHECK_FALSE(m.value.describe().empty());
      } else {
        const SafetensorsFile f = SafetensorsFile::from_bytes(std::move(bytes));
        for (const auto& t : f.tensors()) CHECK(f.to_f32(t.name).size() == t.element_count());
      }
      ++accepted;
    } catch (const format_error&) {
      ++refused;
    }
  }
  CHECK(refused > 0);
  CHECK(accepted + refused == 3000);
}
