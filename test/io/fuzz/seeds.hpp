#pragma once
// Seed inputs for the io fuzz targets, made at run time by izwi's own
// writers (so they track the formats as the writers evolve). Written into
// IZWI_FUZZ_SEED_DIR by each target's LLVMFuzzerInitialize.

#include <izwi/io/gguf_qwen3.hpp>
#include <izwi/io/safetensors.hpp>

#include <cmath>
#include <cstddef>
#include <fstream>
#include <span>
#include <string>
#include <vector>

namespace izwi_io_fuzz {

inline void write_seed(const std::string& dir, const std::string& name, std::span<const std::byte> bytes) {
  std::ofstream out(dir + "/" + name, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

inline void write_seed(const std::string& dir, const std::string& name, const std::string& text) {
  write_seed(dir, name, std::as_bytes(std::span<const char>(text.data(), text.size())));
}

inline std::vector<float> wave(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = std::sin(0.37f * static_cast<float>(i)) * 0.5f;
  return v;
}

inline void write_gguf_seeds(const std::string& dir) {
  using namespace izwi::io;
  TransformerConfig config;
  config.hidden_size = 32;
  config.num_hidden_layers = 1;
  config.num_attention_heads = 2;
  config.num_key_value_heads = 1;
  config.head_dim = 16;
  config.intermediate_size = 64;
  config.vocab_size = 4;
  GgufVocabulary vocab;
  vocab.tokens = {"a", "b", "ab", "<|endoftext|>"};
  vocab.token_types = {GgufTokenType::normal, GgufTokenType::normal, GgufTokenType::normal, GgufTokenType::control};
  vocab.merges = {"a b"};
  vocab.eos_token_id = 3;

  GgufWriter qwen3;
  add_qwen3_metadata(qwen3, config, vocab, GgufFileType::mostly_q8_0, "seed");
  qwen3.add_tensor("token_embd.weight", GgmlType::q8_0, {4, 32}, wave(128));
  qwen3.add_tensor("blk.0.attn_norm.weight", GgmlType::f32, {32}, wave(32));
  qwen3.add_tensor("blk.0.attn_q.weight", GgmlType::f16, {2, 32}, wave(64));
  qwen3.add_tensor("blk.0.attn_k.weight", GgmlType::bf16, {1, 16}, wave(16));
  write_seed(dir, "qwen3.gguf", qwen3.serialize());

  GgufWriter all_types(64);
  all_types.set("u8", GgufValue::u8(1));
  all_types.set("i16", GgufValue::i16(-2));
  all_types.set("u64", GgufValue::u64(3));
  all_types.set("f64", GgufValue::f64(0.5));
  all_types.set("bools", GgufValue::booleans({true, false}));
  all_types.set("floats", GgufValue::floats(GgufValueType::float32, {1.0, 2.0}));
  all_types.set("ints", GgufValue::integers(GgufValueType::int64, {-1, 1}));
  all_types.add_tensor("t", GgmlType::f32, {1, 1, 2, 2}, wave(4));
  write_seed(dir, "all-types.gguf", all_types.serialize());

  GgufWriter empty;
  write_seed(dir, "empty.gguf", empty.serialize());
}

inline void write_safetensors_seeds(const std::string& dir) {
  using namespace izwi::io;
  const std::vector<float> a = wave(6);
  const std::vector<std::uint16_t> h = {0x3c00, 0xc000, 0x7bff};
  const std::vector<TensorToWrite> tensors = {
      {"model.embed_tokens.weight", izwi::DType::f32, {2, 3}, std::as_bytes(std::span<const float>(a))},
      {"half", izwi::DType::f16, {3}, std::as_bytes(std::span<const std::uint16_t>(h))},
      {"brain", izwi::DType::bf16, {1, 3}, std::as_bytes(std::span<const std::uint16_t>(h))},
  };
  write_seed(dir, "three.safetensors", serialize_safetensors(tensors, {{"format", "pt"}}));
  write_seed(dir, "empty.safetensors", serialize_safetensors({}));
}

inline void write_json_seeds(const std::string& dir) {
  write_seed(dir, "config.json", std::string(R"({"architectures": ["Qwen3ForCausalLM"], "attention_bias": false,
 "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu", "hidden_size": 1024,
 "intermediate_size": 3072, "max_position_embeddings": 40960, "model_type": "qwen3", "num_attention_heads": 16,
 "num_hidden_layers": 28, "num_key_value_heads": 8, "rms_norm_eps": 1e-06, "rope_scaling": null,
 "rope_theta": 1000000, "tie_word_embeddings": true, "torch_dtype": "bfloat16", "vocab_size": 151936})"));
  write_seed(dir, "generation_config.json", std::string(R"({"bos_token_id": 151643, "do_sample": true,
 "eos_token_id": [151645, 151643], "temperature": 0.6, "top_k": 20, "top_p": 0.95})"));
  write_seed(dir, "strings.json", std::string(R"(["\u00e9\ud83d\ude00\n\t\"", "日本", -0.0, 1e-400, [[{}]], null, true])"));
}

}  // namespace izwi_io_fuzz
