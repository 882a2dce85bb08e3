// llama.cpp (through node-llama-cpp from npm, DESIGN §6) loads the GGUF files
// izwi's writer produces -- F32, F16, BF16 and Q8_0 weights with the qwen3
// metadata and a byte-level BPE vocabulary -- tokenizes with their
// vocabulary and generates from them. Skipped, saying so, when
// node-llama-cpp is not installed in test/reference.

#include "io_test_support.hpp"

#include <izwi/io/detail/utf8.hpp>
#include <izwi/io/gguf_qwen3.hpp>
#include <izwi/io/json.hpp>

#include <cstdio>
#include <memory>

using namespace izwi::io;
using namespace izwi_io_test;

namespace {

// A 2-layer qwen3 with GPT-2's 256 byte tokens, one merge ("h e") and
// Qwen's three special tokens.
void write_tiny_qwen3(const std::filesystem::path& path, GgmlType type) {
  GgufVocabulary vocab;
  int extra = 0;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    std::string token;
    detail::append_utf8(token, printable ? static_cast<std::uint32_t>(b) : static_cast<std::uint32_t>(256 + extra++));
    vocab.tokens.push_back(token);
    vocab.token_types.push_back(GgufTokenType::normal);
  }
  vocab.tokens.push_back("he");
  vocab.token_types.push_back(GgufTokenType::normal);
  vocab.merges = {"h e"};
  for (const char* special : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
    vocab.tokens.push_back(special);
    vocab.token_types.push_back(GgufTokenType::control);
  }
  vocab.bos_token_id = 257;
  vocab.eos_token_id = 259;

  TransformerConfig c;
  c.hidden_size = 64;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 32;
  c.intermediate_size = 128;
  c.vocab_size = static_cast<std::uint32_t>(vocab.tokens.size());
  c.rope_theta = 1e6;
  c.rms_norm_eps = 1e-6;
  c.max_position_embeddings = 512;
  const GgufFileType file_type = type == GgmlType::f32    ? GgufFileType::all_f32
                                 : type == GgmlType::f16  ? GgufFileType::mostly_f16
                                 : type == GgmlType::bf16 ? GgufFileType::mostly_bf16
                                                          : GgufFileType::mostly_q8_0;
  GgufWriter w;
  add_qwen3_metadata(w, c, vocab, file_type, "izwi-tiny");
  std::uint32_t seed = 1;
  const auto matrix = [&](const std::string& name, std::uint64_t rows, std::uint64_t cols) {
    w.add_tensor(name, type, {rows, cols}, random_values(rows * cols, seed++, 0.1f));
  };
  const auto norm = [&](const std::string& name, std::uint64_t n) {
    w.add_tensor(name, GgmlType::f32, {n}, std::vector<float>(n, 1.0f));
  };
  const std::uint64_t V = c.vocab_size, H = 64, Q = 4 * 32, KV = 2 * 32, F = 128;
  matrix("token_embd.weight", V, H);
  for (int layer = 0; layer < 2; ++layer) {
    const std::string p = "blk." + std::to_string(layer) + ".";
    norm(p + "attn_norm.weight", H);
    matrix(p + "attn_q.weight", Q, H);
    matrix(p + "attn_k.weight", KV, H);
    matrix(p + "attn_v.weight", KV, H);
    matrix(p + "attn_output.weight", H, Q);
    norm(p + "attn_q_norm.weight", 32);
    norm(p + "attn_k_norm.weight", 32);
    norm(p + "ffn_norm.weight", H);
    matrix(p + "ffn_gate.weight", F, H);
    matrix(p + "ffn_up.weight", F, H);
    matrix(p + "ffn_down.weight", H, F);
  }
  norm("output_norm.weight", H);
  w.write(path);
}

std::string run(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  REQUIRE(pipe != nullptr);
  std::string out;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe.get())) out.append(buffer, n);
  return out;
}

}  // namespace

TEST_CASE("gguf: llama.cpp loads, tokenizes with and generates from files izwi writes", "[io][gguf][reference]") {
  const std::filesystem::path modules = std::filesystem::path(IZWI_SOURCE_DIR) / "test" / "reference" / "node_modules";
  if (!std::filesystem::exists(modules / "node-llama-cpp" / "dist" / "index.js")) {
    WARN("skipped: node-llama-cpp is not installed in " << modules.string() << " (scripts/install-references.sh)");
    return;
  }
  ScratchDirectory dir("llama");
  std::string files;
  for (GgmlType type : {GgmlType::f32, GgmlType::f16, GgmlType::bf16, GgmlType::q8_0}) {
    const std::filesystem::path p = dir.path() / ("tiny-" + std::string(to_string(type)) + ".gguf");
    write_tiny_qwen3(p, type);
    files += " '" + p.string() + "'";
  }
  const std::string script = std::string(IZWI_SOURCE_DIR) + "/test/io/llama_cpp_load.mjs";
  const std::string output = run("node '" + script + "' '" + modules.string() + "'" + files + " 2>&1");
  INFO("node output:\n" << output);
  int models = 0;
  std::size_t start = 0;
  while (start < output.size()) {
    const std::size_t end = std::min(output.find('\n', start), output.size());
    const std::string line = output.substr(start, end - start);
    start = end + 1;
    if (line.empty() || line[0] != '{') continue;
    const JsonValue result = parse_json(line, "node output");
    // "hello": "he" (the one merge) then 'l', 'l', 'o' as byte tokens.
    std::vector<std::int64_t> tokens;
    for (const auto& t : izwi::io::json_find(result, "tokens")->as_array()) tokens.push_back(t.as_int64());
    CHECK(tokens == std::vector<std::int64_t>{256, 108, 108, 111});
    const auto& generated = izwi::io::json_find(result, "generated")->as_array();
    CHECK(generated.size() == 5);
    for (const auto& t : generated) CHECK(t.as_int64() < 260);
    CHECK(izwi::io::json_find(result, "trainContextSize")->as_int64() == 512);
    ++models;
  }
  CHECK(models == 4);
}
