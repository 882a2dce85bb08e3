// GGUF: written files read back with every metadata type, every tensor type
// (Q8_0 within its quantization bound), the layout llama.cpp expects, and the
// qwen3 architecture's keys and names.

#include "io_test_support.hpp"

#include <izwi/core/detail/huge_page_buffer.hpp>
#include <izwi/io/detail/half_float.hpp>
#include <izwi/io/gguf.hpp>
#include <izwi/io/gguf_qwen3.hpp>
#include <izwi/io/quantize.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

using namespace izwi::io;
using namespace izwi_io_test;

namespace {

std::uint64_t read_u64_at(const std::vector<std::byte>& bytes, std::size_t at) {
  std::uint64_t v;
  std::memcpy(&v, bytes.data() + at, 8);
  return v;
}

}  // namespace

TEST_CASE("gguf: metadata of every value type round-trips exactly", "[io][gguf]") {
  GgufWriter w;
  w.set("general.architecture", GgufValue::string("qwen3"));
  w.set("u8", GgufValue::u8(250));
  w.set("i8", GgufValue::i8(-120));
  w.set("u16", GgufValue::u16(65000));
  w.set("i16", GgufValue::i16(-32000));
  w.set("u32", GgufValue::u32(4000000000u));
  w.set("i32", GgufValue::i32(-2000000000));
  w.set("u64", GgufValue::u64(18000000000000000000ull));
  w.set("i64", GgufValue::i64(-9000000000000000000ll));
  w.set("f32", GgufValue::f32(1e-6f));
  w.set("f64", GgufValue::f64(0.1));
  w.set("bool", GgufValue::boolean(true));
  w.set("empty.string", GgufValue::string(""));
  w.set("utf8", GgufValue::string("Ġhello 日本 😀"));
  w.set("arr.strings", GgufValue::strings({"a", "", "Ġb c"}));
  w.set("arr.i32", GgufValue::integers(GgufValueType::int32, {1, -2, 3}));
  w.set("arr.u8", GgufValue::integers(GgufValueType::uint8, {0, 255}));
  w.set("arr.u64", GgufValue::unsigned_integers(GgufValueType::uint64, {18446744073709551615ull}));
  w.set("arr.f32", GgufValue::floats(GgufValueType::float32, {0.5, -1.25}));
  w.set("arr.f64", GgufValue::floats(GgufValueType::float64, {0.1}));
  w.set("arr.bool", GgufValue::booleans({true, false, true}));
  w.set("arr.empty", GgufValue::strings({}));
  w.set("u32", GgufValue::u32(7));  // replaces, keeping its position

  const GgufFile f = GgufFile::from_bytes(w.serialize(), "meta.gguf");
  CHECK(f.version() == 3);
  CHECK(f.alignment() == 32);
  CHECK(f.tensors().empty());
  REQUIRE(f.metadata().size() == 22);
  CHECK(f.metadata()[0].key == "general.architecture");
  CHECK(f.metadata()[5].key == "u32");
  CHECK(f.architecture() == "qwen3");
  CHECK(f.get<std::uint8_t>("u8") == 250);
  CHECK(f.get<int>("i8") == -120);
  CHECK(f.get<std::uint16_t>("u16") == 65000);
  CHECK(f.get<std::int16_t>("i16") == -32000);
  CHECK(f.get<std::uint32_t>("u32") == 7);
  CHECK(f.metadata("u32").type() == GgufValueType::uint32);
  CHECK(f.get<std::int32_t>("i32") == -2000000000);
  CHECK(f.get<std::uint64_t>("u64") == 18000000000000000000ull);
  CHECK(f.get<std::int64_t>("i64") == -9000000000000000000ll);
  CHECK(f.get<float>("f32") == 1e-6f);
  CHECK(f.get<double>("f64") == 0.1);
  CHECK(f.get<bool>("bool"));
  CHECK(f.get<std::string>("empty.string").empty());
  CHECK(f.get<std::string>("utf8") == "Ġhello 日本 😀");
  CHECK(f.get<std::vector<std::string>>("arr.strings") == std::vector<std::string>{"a", "", "Ġb c"});
  CHECK(f.get<std::vector<std::int64_t>>("arr.i32") == std::vector<std::int64_t>{1, -2, 3});
  CHECK(f.metadata("arr.i32").element_type() == GgufValueType::int32);
  CHECK(f.get<std::vector<std::int64_t>>("arr.u8") == std::vector<std::int64_t>{0, 255});
  CHECK(f.metadata("arr.u64").as_uint64s() == std::vector<std::uint64_t>{18446744073709551615ull});
  CHECK(f.get<std::vector<double>>("arr.f32") == std::vector<double>{0.5, -1.25});
  CHECK(f.get<std::vector<double>>("arr.f64") == std::vector<double>{0.1});
  CHECK(f.metadata("arr.bool").as_bools() == std::vector<bool>{true, false, true});
  CHECK(f.metadata("arr.empty").size() == 0);
  CHECK(f.metadata("arr.empty").is_array());
  CHECK(f.get<int>("missing.key", 11) == 11);
}

TEST_CASE("gguf: mistyped and missing metadata are named", "[io][gguf]") {
  GgufWriter w;
  w.set("u32", GgufValue::u32(300));
  w.set("s", GgufValue::string("x"));
  w.set("neg", GgufValue::i32(-1));
  w.set("arr", GgufValue::strings({"a"}));
  const GgufFile f = GgufFile::from_bytes(w.serialize(), "m.gguf");
  CHECK(contains(message_of<format_error>([&] { f.get<std::string>("u32"); }), "m.gguf: metadata 'u32': is a u32, not a string"));
  CHECK(contains(message_of<format_error>([&] { f.get<std::uint8_t>("u32"); }), "metadata 'u32': value 300 is out of range"));
  CHECK(contains(message_of<format_error>([&] { f.get<std::uint32_t>("neg"); }), "metadata 'neg': value -1 is negative"));
  CHECK(contains(message_of<format_error>([&] { f.get<int>("s"); }), "metadata 's': is a string, not an integer"));
  CHECK(contains(message_of<format_error>([&] { f.get<std::string>("arr"); }), "is an array of 1 string, not a string"));
  CHECK(contains(message_of<format_error>([&] { f.get<double>("absent"); }), "metadata 'absent': missing"));
}

TEST_CASE("gguf: tensors of every type round-trip, Q8_0 within the format's bound", "[io][gguf]") {
  const std::vector<float> values = random_values(4 * 96, 7, 0.5f);
  GgufWriter w;
  w.set("general.architecture", GgufValue::string("test"));
  w.add_tensor("t.f32", GgmlType::f32, {4, 96}, values);
  w.add_tensor("t.f16", GgmlType::f16, {4, 96}, values);
  w.add_tensor("t.bf16", GgmlType::bf16, {4, 96}, values);
  w.add_tensor("t.q8_0", GgmlType::q8_0, {4, 96}, values);
  w.add_tensor("t.vec", GgmlType::f32, {3}, std::vector<float>{1, 2, 3});
  w.add_tensor("t.4d", GgmlType::f16, {2, 1, 3, 32}, std::vector<float>(192, 0.25f));
  const GgufFile f = GgufFile::from_bytes(w.serialize(), "w.gguf");
  REQUIRE(f.tensors().size() == 6);

  const GgufTensorInfo& info = f.expect_shape("t.f32", {4, 96});
  CHECK(info.dims == std::vector<std::uint64_t>{96, 4});  // ne[0] is the row length
  CHECK(info.shape() == std::vector<std::uint64_t>{4, 96});
  CHECK(info.type == GgmlType::f32);
  CHECK(info.dtype() == izwi::DType::f32);
  CHECK(info.byte_size == 4 * 96 * 4);
  CHECK(f.to_f32("t.f32") == values);

  const std::vector<float> f16 = f.to_f32("t.f16", {4, 96});
  const std::vector<float> bf16 = f.to_f32("t.bf16", {4, 96});
  for (std::size_t i = 0; i < values.size(); ++i) {
    CHECK(f16[i] == detail::f16_to_f32(detail::f32_to_f16(values[i])));
    CHECK(std::fabs(f16[i] - values[i]) <= std::fabs(values[i]) * 0x1p-11f + 0x1p-25f);
    CHECK(std::fabs(bf16[i] - values[i]) <= std::fabs(values[i]) * 0x1p-8f);
  }
  CHECK(f.tensor("t.bf16").byte_size == 4 * 96 * 2);

  const GgufTensorInfo& q = f.tensor("t.q8_0");
  CHECK(q.type == GgmlType::q8_0);
  CHECK(q.byte_size == 4 * 3 * 34);
  CHECK(f.bytes(q).size() == 4 * 3 * 34);
  const std::vector<float> q8 = f.to_f32("t.q8_0");
  for (std::size_t block = 0; block < values.size() / 32; ++block) {
    float max_abs = 0;
    for (std::size_t i = 0; i < 32; ++i) max_abs = std::max(max_abs, std::fabs(values[block * 32 + i]));
    double worst = 0;
    for (std::size_t i = 0; i < 32; ++i) worst = std::max(worst, double(std::fabs(q8[block * 32 + i] - values[block * 32 + i])));
    CHECK(worst <= q8_0_error_bound(max_abs));
    CHECK(worst > 0);  // it really was quantized
  }

  CHECK(f.tensor("t.vec").dims == std::vector<std::uint64_t>{3});
  CHECK(f.to_f32("t.vec") == std::vector<float>{1, 2, 3});
  CHECK(f.tensor("t.4d").dims == std::vector<std::uint64_t>{32, 3, 1, 2});
  CHECK(f.tensor("t.4d").shape() == std::vector<std::uint64_t>{2, 1, 3, 32});
  CHECK(f.to_f32("t.4d") == std::vector<float>(192, 0.25f));
}

TEST_CASE("gguf: layout follows the spec llama.cpp reads", "[io][gguf]") {
  for (std::uint32_t alignment : {32u, 64u, 1u}) {
    INFO("alignment " << alignment);
    GgufWriter w(alignment);
    w.set("general.architecture", GgufValue::string("x"));
    w.add_tensor("a", GgmlType::f32, {3}, std::vector<float>{1, 2, 3});   // 12 bytes: padding follows
    w.add_tensor("b", GgmlType::f16, {5}, std::vector<float>(5, 1.0f));   // 10 bytes
    w.add_tensor("c", GgmlType::q8_0, {1, 32}, std::vector<float>(32, -0.5f));
    const std::vector<std::byte> bytes = w.serialize();
    CHECK(std::memcmp(bytes.data(), "GGUF", 4) == 0);
    std::uint32_t version;
    std::memcpy(&version, bytes.data() + 4, 4);
    CHECK(version == 3);
    CHECK(read_u64_at(bytes, 8) == 3);                              // tensors
    CHECK(read_u64_at(bytes, 16) == (alignment == 32 ? 1u : 2u));  // general.alignment only when not default
    const GgufFile f = GgufFile::from_bytes(bytes, "l.gguf");
    CHECK(f.alignment() == alignment);
    CHECK(f.data_offset() % alignment == 0);
    std::uint64_t expected_offset = 0;
    for (const auto& t : f.tensors()) {
      CHECK(t.offset == expected_offset);  // sequential, each padded to the alignment
      expected_offset += (t.byte_size + alignment - 1) / alignment * alignment;
    }
    // The last tensor is padded too: the data section is exactly the padded sizes.
    CHECK(bytes.size() == f.data_offset() + expected_offset);
    // Padding bytes are zero.
    for (std::size_t i = f.data_offset() + 12; i < f.data_offset() + f.tensors()[1].offset; ++i) CHECK(bytes[i] == std::byte{0});
  }
}

TEST_CASE("gguf: write() streams the same bytes serialize() builds, open() maps them", "[io][gguf]") {
  ScratchDirectory dir("gguf");
  GgufWriter w;
  w.set("general.architecture", GgufValue::string("qwen3"));
  const std::vector<float> values = random_values(64 * 2, 3);
  w.add_tensor("blk.0.attn_q.weight", GgmlType::q8_0, {2, 64}, values);
  w.write(dir.path() / "m.gguf");
  const std::vector<std::byte> expected = w.serialize();
  CHECK(std::filesystem::file_size(dir.path() / "m.gguf") == expected.size());
  const GgufFile f = GgufFile::open(dir.path() / "m.gguf");
  CHECK(f.name() == (dir.path() / "m.gguf").string());
  CHECK(f.to_f32("blk.0.attn_q.weight") == GgufFile::from_bytes(expected).to_f32("blk.0.attn_q.weight"));
  CHECK(contains(message_of<izwi::error>([&] { GgufFile::open(dir.path() / "absent.gguf"); }), "absent.gguf"));
}

TEST_CASE("gguf: FileMemory::read holds the file's bytes in memory the file no longer backs", "[io][gguf]") {
  ScratchDirectory dir("gguf-read");
  GgufWriter w;
  w.set("general.architecture", GgufValue::string("qwen3"));
  // 3 MiB of f32: more than one huge page, so the copy crosses a 2-MiB boundary.
  const std::vector<float> values = random_values(768 * 1024, 11);
  w.add_tensor("blk.0.ffn_up.weight", GgmlType::f32, {768, 1024}, values);
  const auto path = dir.path() / "m.gguf";
  w.write(path);

  const GgufFile read = GgufFile::open(path, FileMemory::read);
  const GgufFile mapped = GgufFile::open(path, FileMemory::map);
  CHECK(read.name() == path.string());
  const std::span<const std::byte> read_bytes = read.bytes("blk.0.ffn_up.weight");
  const std::span<const std::byte> mapped_bytes = mapped.bytes("blk.0.ffn_up.weight");
  REQUIRE(read_bytes.size() == values.size() * sizeof(float));
  CHECK(read_bytes.data() != mapped_bytes.data());
  CHECK(std::memcmp(read_bytes.data(), mapped_bytes.data(), read_bytes.size()) == 0);
  // The file's start sits on a huge page (the tensor is at data_offset + its offset).
  const auto start = reinterpret_cast<std::uintptr_t>(read_bytes.data()) - read.data_offset() - read.tensors()[0].offset;
  CHECK(start % izwi::detail::HugePageBuffer::huge_page_bytes == 0);

  // Replaced on disk by an empty file: the read copy is untouched (a mapping
  // of the old inode would still be readable too, but one truncated in place
  // would fault; the read copy cannot).
  std::filesystem::resize_file(path, 0);
  CHECK(read.to_f32("blk.0.ffn_up.weight") == values);

  CHECK(contains(message_of<izwi::error>([&] { GgufFile::open(dir.path() / "absent.gguf", FileMemory::read); }),
                 "absent.gguf: cannot open"));
  CHECK(contains(message_of<izwi::error>([&] { GgufFile::open(dir.path(), FileMemory::read); }), "not a regular file"));
  // An empty file reads as zero bytes and is then refused by the parser, by name.
  CHECK(contains(message_of<izwi::error>([&] { GgufFile::open(path, FileMemory::read); }), "m.gguf"));
}

TEST_CASE("gguf: the writer refuses what the format cannot hold", "[io][gguf]") {
  GgufWriter w;
  const std::vector<float> v(33, 1.0f);
  CHECK(contains(message_of<izwi::error>([&] { w.add_tensor("q", GgmlType::q8_0, {1, 33}, v); }), "multiple of 32"));
  CHECK(contains(message_of<izwi::error>([&] { w.add_tensor("x", GgmlType::f32, {2, 16}, v); }), "needs 32"));
  CHECK(contains(message_of<izwi::error>([&] { w.add_tensor(std::string(64, 'n'), GgmlType::f32, {33}, v); }), "1 to 63 bytes"));
  CHECK(contains(message_of<izwi::error>([&] { w.add_tensor("bad\xff", GgmlType::f32, {33}, v); }), "UTF-8"));
  CHECK(contains(message_of<izwi::error>([&] { w.add_tensor("r", GgmlType::f32, {1, 1, 1, 1, 33}, v); }), "at most 4"));
  w.add_tensor("ok", GgmlType::f32, {33}, v);
  CHECK(contains(message_of<izwi::error>([&] { w.add_tensor("ok", GgmlType::f32, {33}, v); }), "added twice"));
  CHECK(contains(message_of<izwi::error>([&] { w.set("general.alignment", GgufValue::u32(64)); }), "constructor"));
  CHECK(contains(message_of<izwi::error>([&] { w.set("", GgufValue::u32(1)); }), "non-empty UTF-8"));
  CHECK(contains(message_of<izwi::error>([] { GgufWriter bad(48); }), "not a power of two"));
  CHECK(contains(message_of<izwi::error>([] { GgufValue::integers(GgufValueType::uint8, {256}); }), "does not fit in u8"));
  CHECK(contains(message_of<izwi::error>([] { GgufValue::integers(GgufValueType::string, {1}); }), "cannot have elements"));
  std::vector<float> nan(32, 0.0f);
  nan[5] = std::numeric_limits<float>::quiet_NaN();
  CHECK(contains(message_of<izwi::error>([&] { quantize_q8_0(nan); }), "value 5 is not finite"));
}

TEST_CASE("q8_0: block layout and ggml's rounding", "[io][gguf][q8_0]") {
  // max |x| = 127, so the scale is exactly 1 and the rounding is visible.
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[i] = static_cast<float>(i - 16);
  x[0] = -127.0f;
  x[3] = 0.5f;   // halves round away from zero (roundf), not to even
  x[4] = -0.5f;
  x[5] = 2.5f;
  x[6] = 0.49f;
  const auto blocks = quantize_q8_0(x);
  REQUIRE(blocks.size() == 34);
  std::uint16_t d_bits;
  std::memcpy(&d_bits, blocks.data(), 2);
  CHECK(d_bits == 0x3c00);  // 1.0 in binary16
  const auto q = [&](int i) { return static_cast<std::int8_t>(blocks[2 + i]); };
  CHECK(q(0) == -127);
  CHECK(q(3) == 1);
  CHECK(q(4) == -1);
  CHECK(q(5) == 3);
  CHECK(q(6) == 0);
  CHECK(q(16) == 0);
  CHECK(q(31) == 15);
  std::vector<float> y(32);
  dequantize_q8_0(blocks, y);
  for (int i = 0; i < 32; ++i) CHECK(std::fabs(y[i] - x[i]) <= q8_0_error_bound(127.0));
  // All zeros: scale 0, values 0, no division by zero.
  const auto zeros = quantize_q8_0(std::vector<float>(32, 0.0f));
  dequantize_q8_0(zeros, y);
  CHECK(std::all_of(y.begin(), y.end(), [](float v) { return v == 0.0f; }));
  CHECK_THROWS_AS(dequantize_q8_0(zeros, std::span<float>(y.data(), 31)), izwi::error);
}

TEST_CASE("half floats: round to nearest even, overflow, subnormals, NaN", "[io][half]") {
  using detail::f16_to_f32;
  using detail::f32_to_bf16;
  using detail::f32_to_f16;
  using detail::bf16_to_f32;
  CHECK(f32_to_f16(1.0f) == 0x3c00);
  CHECK(f32_to_f16(-2.0f) == 0xc000);
  CHECK(f32_to_f16(65504.0f) == 0x7bff);
  CHECK(f32_to_f16(65519.0f) == 0x7bff);  // rounds down to the max
  CHECK(f32_to_f16(65520.0f) == 0x7c00);  // ties to even: infinity
  CHECK(f32_to_f16(1e10f) == 0x7c00);
  CHECK(f32_to_f16(-std::numeric_limits<float>::infinity()) == 0xfc00);
  CHECK(f32_to_f16(0x1p-24f) == 0x0001);   // smallest subnormal
  CHECK(f32_to_f16(0x1p-25f) == 0x0000);   // half of it: ties to even (0)
  CHECK(f32_to_f16(0x1.8p-24f) == 0x0002); // 1.5 steps: ties to even (2)
  CHECK(f32_to_f16(0x1p-14f) == 0x0400);   // smallest normal
  CHECK(f32_to_f16(1.0f + 0x1p-11f) == 0x3c00);                 // tie: even (down)
  CHECK(f32_to_f16(1.0f + 3 * 0x1p-11f) == 0x3c02);             // tie: even (up)
  CHECK(f32_to_f16(-0.0f) == 0x8000);
  CHECK(std::isnan(f16_to_f32(f32_to_f16(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(f32_to_bf16(1.0f) == 0x3f80);
  CHECK(f32_to_bf16(std::bit_cast<float>(0x3f808000u)) == 0x3f80);  // tie: even (down)
  CHECK(f32_to_bf16(std::bit_cast<float>(0x3f818000u)) == 0x3f82);  // tie: even (up)
  CHECK(f32_to_bf16(std::bit_cast<float>(0x7f7fffffu)) == 0x7f80);  // max float rounds to inf
  CHECK(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  // Every half round-trips through float exactly.
  for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
    const auto h = static_cast<std::uint16_t>(bits);
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0) continue;  // NaN payloads are only kept quiet
    REQUIRE(f32_to_f16(f16_to_f32(h)) == h);
  }
}

TEST_CASE("gguf qwen3: tensor names map both ways", "[io][gguf][qwen3]") {
  const std::vector<std::pair<std::string, std::string>> names = {
      {"model.embed_tokens.weight", "token_embd.weight"},
      {"model.norm.weight", "output_norm.weight"},
      {"lm_head.weight", "output.weight"},
      {"model.layers.0.input_layernorm.weight", "blk.0.attn_norm.weight"},
      {"model.layers.27.self_attn.q_proj.weight", "blk.27.attn_q.weight"},
      {"model.layers.3.self_attn.k_proj.weight", "blk.3.attn_k.weight"},
      {"model.layers.3.self_attn.v_proj.weight", "blk.3.attn_v.weight"},
      {"model.layers.3.self_attn.o_proj.weight", "blk.3.attn_output.weight"},
      {"model.layers.3.self_attn.q_norm.weight", "blk.3.attn_q_norm.weight"},
      {"model.layers.3.self_attn.k_norm.weight", "blk.3.attn_k_norm.weight"},
      {"model.layers.3.post_attention_layernorm.weight", "blk.3.ffn_norm.weight"},
      {"model.layers.10.mlp.gate_proj.weight", "blk.10.ffn_gate.weight"},
      {"model.layers.10.mlp.up_proj.weight", "blk.10.ffn_up.weight"},
      {"model.layers.10.mlp.down_proj.weight", "blk.10.ffn_down.weight"},
      {"model.layers.1.self_attn.q_proj.bias", "blk.1.attn_q.bias"},
  };
  for (const auto& [hf, gguf] : names) {
    CHECK(qwen3_gguf_tensor_name(hf) == gguf);
    CHECK(qwen3_hf_tensor_name(gguf) == hf);
  }
  for (std::string bad : {"model.layers.x.mlp.up_proj.weight", "model.layers.01.mlp.up_proj.weight", "model.layers.1.mlp.weight",
                          "model.embed_tokens", "blk..attn_q.weight", "rotary_emb.inv_freq"})
    CHECK_FALSE(qwen3_gguf_tensor_name(bad).has_value());
  CHECK_FALSE(qwen3_hf_tensor_name("blk.0.unknown.weight").has_value());
}

TEST_CASE("gguf qwen3: metadata written from a config reads back as the same config", "[io][gguf][qwen3]") {
  TransformerConfig config;
  config.model_type = "qwen3";
  config.hidden_size = 256;
  config.num_hidden_layers = 4;
  config.num_attention_heads = 4;
  config.num_key_value_heads = 2;
  config.head_dim = 64;
  config.intermediate_size = 512;
  config.vocab_size = 8;
  config.max_position_embeddings = 40960;
  config.rope_theta = 1000000.0;
  config.rms_norm_eps = 1e-6;
  GgufVocabulary vocab;
  vocab.tokens = {"a", "b", "ab", "Ġ", "<|endoftext|>", "<|im_start|>", "<|im_end|>", "[PAD7]"};
  vocab.token_types = {GgufTokenType::normal, GgufTokenType::normal, GgufTokenType::normal, GgufTokenType::normal,
                       GgufTokenType::control, GgufTokenType::control, GgufTokenType::control, GgufTokenType::unused};
  vocab.merges = {"a b"};
  vocab.eos_token_id = 6;
  vocab.bos_token_id = 4;
  vocab.padding_token_id = 4;
  vocab.chat_template = "{{ messages }}";

  GgufWriter w;
  add_qwen3_metadata(w, config, vocab, GgufFileType::mostly_f16, "tiny");
  w.add_tensor("token_embd.weight", GgmlType::f16, {8, 256}, std::vector<float>(8 * 256, 0.0f));
  const GgufFile f = GgufFile::from_bytes(w.serialize(), "q.gguf");
  CHECK(f.get<std::string>("general.architecture") == "qwen3");
  CHECK(f.get<std::uint32_t>("general.file_type") == 1);
  CHECK(f.metadata("qwen3.block_count").type() == GgufValueType::uint32);
  CHECK(f.metadata("qwen3.rope.freq_base").type() == GgufValueType::float32);
  CHECK(f.metadata("qwen3.attention.layer_norm_rms_epsilon").type() == GgufValueType::float32);
  CHECK(f.get<std::string>("tokenizer.ggml.model") == "gpt2");
  CHECK(f.get<std::string>("tokenizer.ggml.pre") == "qwen2");
  CHECK(f.get<std::vector<std::string>>("tokenizer.ggml.tokens") == vocab.tokens);
  CHECK(f.metadata("tokenizer.ggml.token_type").element_type() == GgufValueType::int32);
  CHECK(f.get<std::vector<std::int64_t>>("tokenizer.ggml.token_type")[4] == 3);
  CHECK(f.get<std::vector<std::string>>("tokenizer.ggml.merges") == vocab.merges);
  CHECK(f.get<std::string>("tokenizer.chat_template") == "{{ messages }}");

  const TransformerConfig back = qwen3_config_from_gguf(f);
  CHECK(back.hidden_size == 256);
  CHECK(back.num_hidden_layers == 4);
  CHECK(back.num_attention_heads == 4);
  CHECK(back.num_key_value_heads == 2);
  CHECK(back.head_dim == 64);
  CHECK(back.intermediate_size == 512);
  CHECK(back.vocab_size == 8);
  CHECK(back.max_position_embeddings == 40960);
  CHECK(back.rope_theta == 1000000.0);
  CHECK(back.rms_norm_eps == Approx(1e-6).epsilon(1e-6));  // stored as f32
  CHECK(back.tie_word_embeddings);  // no output.weight
  CHECK(back.eos_token_ids == std::vector<std::int64_t>{6});

  GgufWriter other;
  other.set("general.architecture", GgufValue::string("llama"));
  CHECK(contains(message_of<format_error>([&] { qwen3_config_from_gguf(GgufFile::from_bytes(other.serialize(), "l.gguf")); }),
                 "expected \"qwen3\""));
  GgufWriter missing;
  missing.set("general.architecture", GgufValue::string("qwen3"));
  CHECK(contains(message_of<format_error>([&] { qwen3_config_from_gguf(GgufFile::from_bytes(missing.serialize(), "m.gguf")); }),
                 "metadata 'qwen3.block_count': missing"));
  vocab.token_types.pop_back();
  CHECK(contains(message_of<izwi::error>([&] { add_qwen3_metadata(w, config, vocab, GgufFileType::all_f32); }), "7 token types for 8"));
}

TEST_CASE("gguf qwen3: hyper-parameters are validated like config.json's", "[io][gguf][qwen3]") {
  TransformerConfig config;
  config.model_type = "qwen3";
  config.hidden_size = 64;
  config.num_hidden_layers = 1;
  config.num_attention_heads = 2;
  config.num_key_value_heads = 1;
  config.head_dim = 32;
  config.intermediate_size = 128;
  config.vocab_size = 2;
  GgufVocabulary vocab;
  vocab.tokens = {"a", "b"};
  vocab.token_types = {GgufTokenType::normal, GgufTokenType::normal};
  auto message_with = [&](const std::string& key, GgufValue value) {
    GgufWriter w;
    add_qwen3_metadata(w, config, vocab, GgufFileType::all_f32);
    w.set(key, std::move(value));
    return message_of<format_error>([&] { qwen3_config_from_gguf(GgufFile::from_bytes(w.serialize(), "bad.gguf")); });
  };
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (float bad : {0.0f, -1.0f, nan, inf}) {
    INFO(bad);
    const std::string theta = message_with("qwen3.rope.freq_base", GgufValue::f32(bad));
    CHECK(contains(theta, "bad.gguf"));
    CHECK(contains(theta, "'qwen3.rope.freq_base': must be positive"));
    CHECK(contains(message_with("qwen3.attention.layer_norm_rms_epsilon", GgufValue::f32(bad)),
                   "'qwen3.attention.layer_norm_rms_epsilon': must be positive"));
  }
  CHECK(contains(message_with("qwen3.attention.head_count", GgufValue::u32(0)), "head_count"));
  CHECK(contains(message_with("qwen3.attention.head_count_kv", GgufValue::u32(3)), "does not divide"));
  CHECK(contains(message_with("qwen3.block_count", GgufValue::u32(0)), "'qwen3.block_count': must be positive"));
  CHECK(contains(message_with("qwen3.attention.key_length", GgufValue::u32(0)), "key_length"));
  // The untouched metadata reads back.
  GgufWriter good;
  add_qwen3_metadata(good, config, vocab, GgufFileType::all_f32);
  CHECK(qwen3_config_from_gguf(GgufFile::from_bytes(good.serialize(), "good.gguf")).rope_theta > 0);
}
