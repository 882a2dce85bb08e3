// ModelWeights: the same Qwen3-shaped model written as a Hugging Face
// directory and as GGUF reads the same through Hugging Face names; the
// safetensors expect_shape helper.

#include "io_test_support.hpp"

#include <izwi/io/weights.hpp>

#include <cmath>

using namespace izwi::io;
using namespace izwi_io_test;

namespace {

const std::string tiny_config = R"({"model_type": "qwen3", "hidden_size": 64, "num_hidden_layers": 1,
  "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 32, "intermediate_size": 96,
  "vocab_size": 4, "tie_word_embeddings": true, "rope_theta": 1000000, "rms_norm_eps": 1e-06,
  "max_position_embeddings": 4096, "eos_token_id": 3})";

struct Tiny {
  std::vector<std::pair<std::string, std::vector<std::uint64_t>>> tensors = {
      {"model.embed_tokens.weight", {4, 64}},
      {"model.layers.0.input_layernorm.weight", {64}},
      {"model.layers.0.self_attn.q_proj.weight", {64, 64}},
      {"model.layers.0.self_attn.k_proj.weight", {32, 64}},
      {"model.layers.0.self_attn.v_proj.weight", {32, 64}},
      {"model.layers.0.self_attn.o_proj.weight", {64, 64}},
      {"model.layers.0.self_attn.q_norm.weight", {32}},
      {"model.layers.0.self_attn.k_norm.weight", {32}},
      {"model.layers.0.post_attention_layernorm.weight", {64}},
      {"model.layers.0.mlp.gate_proj.weight", {96, 64}},
      {"model.layers.0.mlp.up_proj.weight", {96, 64}},
      {"model.layers.0.mlp.down_proj.weight", {64, 96}},
      {"model.norm.weight", {64}},
  };
  std::vector<std::vector<float>> values;
  Tiny() {
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      std::uint64_t n = 1;
      for (auto d : tensors[i].second) n *= d;
      values.push_back(random_values(n, static_cast<std::uint32_t>(100 + i), 0.2f));
    }
  }
};

}  // namespace

TEST_CASE("weights: one model as a directory and as GGUF reads the same by HF names", "[io][weights]") {
  ScratchDirectory dir("weights");
  const Tiny tiny;
  const std::filesystem::path hf = dir.path() / "hf";
  std::filesystem::create_directories(hf);
  write_text(hf / "config.json", tiny_config);
  std::vector<TensorToWrite> st;
  for (std::size_t i = 0; i < tiny.tensors.size(); ++i)
    st.push_back({tiny.tensors[i].first, izwi::DType::f32, tiny.tensors[i].second, as_bytes_of(tiny.values[i])});
  write_safetensors(hf / "model.safetensors", st);

  const TransformerConfig config = ModelWeights::open(hf).transformer_config();
  GgufVocabulary vocab;
  vocab.tokens = {"a", "b", "ab", "<|endoftext|>"};
  vocab.token_types = {GgufTokenType::normal, GgufTokenType::normal, GgufTokenType::normal, GgufTokenType::control};
  vocab.eos_token_id = 3;
  for (GgmlType type : {GgmlType::f32, GgmlType::q8_0}) {
    INFO("GGUF type " << to_string(type));
    GgufWriter w;
    add_qwen3_metadata(w, config, vocab, type == GgmlType::f32 ? GgufFileType::all_f32 : GgufFileType::mostly_q8_0);
    for (std::size_t i = 0; i < tiny.tensors.size(); ++i) {
      const auto& [name, shape] = tiny.tensors[i];
      // Norm vectors stay F32 (as llama.cpp's converter keeps 1-D tensors).
      const GgmlType t = shape.size() == 1 ? GgmlType::f32 : type;
      w.add_tensor(*qwen3_gguf_tensor_name(name), t, shape, tiny.values[i]);
    }
    const std::filesystem::path gguf_path = dir.path() / ("tiny-" + std::string(to_string(type)) + ".gguf");
    w.write(gguf_path);

    const ModelWeights from_hf = ModelWeights::open(hf);
    const ModelWeights from_gguf = ModelWeights::open(gguf_path);
    CHECK(from_hf.format() == ModelWeights::Format::safetensors);
    CHECK(from_gguf.format() == ModelWeights::Format::gguf);
    const TransformerConfig a = from_hf.transformer_config();
    const TransformerConfig b = from_gguf.transformer_config();
    CHECK(a.hidden_size == b.hidden_size);
    CHECK(a.num_hidden_layers == b.num_hidden_layers);
    CHECK(a.num_attention_heads == b.num_attention_heads);
    CHECK(a.num_key_value_heads == b.num_key_value_heads);
    CHECK(a.head_dim == b.head_dim);
    CHECK(a.intermediate_size == b.intermediate_size);
    CHECK(a.vocab_size == b.vocab_size);
    CHECK(a.rope_theta == b.rope_theta);
    CHECK(a.tie_word_embeddings == b.tie_word_embeddings);
    CHECK(from_gguf.stored_name("model.layers.0.mlp.down_proj.weight") == "blk.0.ffn_down.weight");
    CHECK_FALSE(from_hf.contains("lm_head.weight"));
    CHECK_FALSE(from_gguf.contains("lm_head.weight"));

    for (std::size_t i = 0; i < tiny.tensors.size(); ++i) {
      const auto& [name, shape] = tiny.tensors[i];
      INFO(name);
      const WeightView vh = from_hf.get(name, shape);
      const WeightView vg = from_gguf.get(name, shape);
      CHECK(vh.shape == shape);
      CHECK(vg.shape == shape);
      CHECK(vh.dtype == izwi::DType::f32);
      CHECK(vg.dtype == (shape.size() == 1 ? izwi::DType::f32 : to_dtype(type)));
      CHECK(vh.element_count() == tiny.values[i].size());
      const std::vector<float> x = from_hf.to_f32(name, shape);
      const std::vector<float> y = from_gguf.to_f32(name, shape);
      REQUIRE(x.size() == y.size());
      CHECK(x == tiny.values[i]);
      if (vg.dtype == izwi::DType::f32) {
        CHECK(y == x);
      } else {
        for (std::size_t block = 0; block < x.size() / 32; ++block) {
          float max_abs = 0, worst = 0;
          for (std::size_t j = 0; j < 32; ++j) max_abs = std::max(max_abs, std::fabs(x[block * 32 + j]));
          for (std::size_t j = 0; j < 32; ++j) worst = std::max(worst, std::fabs(x[block * 32 + j] - y[block * 32 + j]));
          CHECK(worst <= q8_0_error_bound(max_abs));
        }
      }
    }

    const std::string missing = message_of<format_error>([&] { from_gguf.get("model.layers.1.mlp.up_proj.weight"); });
    CHECK(contains(missing, "tensor 'model.layers.1.mlp.up_proj.weight': missing tensor (looked up in the GGUF file as "
                            "'blk.1.ffn_up.weight')"));
    CHECK(contains(message_of<format_error>([&] { from_gguf.get("model.layers.0.mlp.up_proj.weight", {64, 96}); }),
                   "tensor 'blk.0.ffn_up.weight': shape [96, 64]"));
    CHECK(contains(message_of<format_error>([&] { from_hf.get("model.layers.0.mlp.up_proj.weight", {64, 96}); }),
                   "tensor 'model.layers.0.mlp.up_proj.weight': shape [96, 64], expected [64, 96]"));
  }
  CHECK(contains(message_of<izwi::error>([&] { ModelWeights::open(dir.path() / "nothing"); }), "neither a model directory"));
}

TEST_CASE("safetensors: expect_shape returns the entry or names both shapes", "[io][safetensors]") {
  const std::vector<float> v(6, 1.0f);
  const std::vector<TensorToWrite> t = {{"w", izwi::DType::f32, {2, 3}, as_bytes_of(v)}};
  const SafetensorsFile f = SafetensorsFile::from_bytes(serialize_safetensors(t), "s.safetensors");
  CHECK(f.expect_shape("w", {2, 3}).name == "w");
  CHECK(contains(message_of<format_error>([&] { f.expect_shape("w", {3, 2}); }), "s.safetensors: tensor 'w': shape [2, 3], expected [3, 2]"));
  CHECK(contains(message_of<format_error>([&] { f.expect_shape("x", {1}); }), "tensor 'x': missing tensor"));
}
