#pragma once
// Qwen3's non-template parts: config checks and loading from a Hugging Face
// directory or a GGUF file. Inline in header-only builds; compiled once, in
// <izwi/src.hpp>, under IZWI_SEPARATE_COMPILATION (see izwi/config.hpp).

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "izwi/core/error.hpp"
#include "izwi/io/gguf.hpp"
#include "izwi/io/gguf_qwen3.hpp"
#include "izwi/io/model_directory.hpp"

namespace izwi {

IZWI_DECL Qwen3Config Qwen3Config::from(const io::TransformerConfig& c) {
  if (!c.rope_scaling_type.empty())
    throw invalid_argument("rope_scaling", "rope_scaling '" + c.rope_scaling_type + "' is not supported by Qwen3 here");
  if (c.use_sliding_window) throw invalid_argument("use_sliding_window", "sliding-window attention is not supported");
  if (c.attention_bias) throw invalid_argument("attention_bias", "Qwen3 has no attention bias; this checkpoint does");
  if (c.hidden_act != "silu")
    throw invalid_argument("hidden_act", "Qwen3 uses silu; this checkpoint says '" + c.hidden_act + "'");
  Qwen3Config q;
  q.hidden_size = c.hidden_size;
  q.num_layers = c.num_hidden_layers;
  q.num_heads = c.num_attention_heads;
  q.num_kv_heads = c.num_key_value_heads;
  q.head_dim = c.head_dim;
  q.intermediate_size = c.intermediate_size;
  q.vocab_size = c.vocab_size;
  q.max_position_embeddings = c.max_position_embeddings;
  q.rope_theta = c.rope_theta;
  q.rms_norm_eps = c.rms_norm_eps;
  q.tie_word_embeddings = c.tie_word_embeddings;
  for (std::int64_t id : c.eos_token_ids) q.eos_token_ids.push_back(static_cast<TokenId>(id));
  if (q.head_dim % 2 != 0) throw invalid_argument("head_dim", "rotary embedding needs an even head_dim");
  return q;
}

namespace detail {

/// A Linear weight from a tensor's bytes, after checking its [rows][cols] shape.
IZWI_DECL kernels::cpu::WeightMatrix weight_view(DType dtype, std::span<const std::byte> bytes, std::size_t rows,
                                              std::size_t cols, const std::string& where) {
  if (dtype == DType::q8_0 && cols % kernels::cpu::q8_0_block_values != 0)
    throw error(where + ": Q8_0 rows must be a multiple of 32 values, got " + std::to_string(cols));
  kernels::cpu::WeightMatrix w{dtype, rows, cols, bytes.data()};
  if (bytes.size() != w.row_bytes() * rows)
    throw error(where + ": " + std::to_string(bytes.size()) + " bytes, expected " +
                std::to_string(w.row_bytes() * rows));
  return w;
}

/// Reads the tensors of one checkpoint format under Hugging Face names.
template <class Source>
Qwen3LayerWeights load_qwen3_layer(const Source& source, const Qwen3Config& c, std::uint32_t layer) {
  const std::string p = "model.layers." + std::to_string(layer) + ".";
  const std::size_t q = std::size_t{c.num_heads} * c.head_dim, kv = std::size_t{c.num_kv_heads} * c.head_dim;
  Qwen3LayerWeights w;
  w.q_proj = source.matrix(p + "self_attn.q_proj.weight", q, c.hidden_size);
  w.k_proj = source.matrix(p + "self_attn.k_proj.weight", kv, c.hidden_size);
  w.v_proj = source.matrix(p + "self_attn.v_proj.weight", kv, c.hidden_size);
  w.o_proj = source.matrix(p + "self_attn.o_proj.weight", c.hidden_size, q);
  w.gate_proj = source.matrix(p + "mlp.gate_proj.weight", c.intermediate_size, c.hidden_size);
  w.up_proj = source.matrix(p + "mlp.up_proj.weight", c.intermediate_size, c.hidden_size);
  w.down_proj = source.matrix(p + "mlp.down_proj.weight", c.hidden_size, c.intermediate_size);
  w.input_norm = source.vector(p + "input_layernorm.weight", c.hidden_size);
  w.post_attention_norm = source.vector(p + "post_attention_layernorm.weight", c.hidden_size);
  w.q_norm = source.vector(p + "self_attn.q_norm.weight", c.head_dim);
  w.k_norm = source.vector(p + "self_attn.k_norm.weight", c.head_dim);
  return w;
}

struct SafetensorsSource {
  const io::ModelDirectory* dir;
  kernels::cpu::WeightMatrix matrix(const std::string& name, std::size_t rows, std::size_t cols) const {
    const std::array<std::uint64_t, 2> shape{rows, cols};
    const io::TensorInfo& info = dir->expect_shape(name, shape);
    return weight_view(info.dtype, dir->bytes(name), rows, cols, dir->path().string() + ": tensor '" + name + "'");
  }
  std::vector<float> vector(const std::string& name, std::size_t n) const {
    const std::array<std::uint64_t, 1> shape{n};
    return dir->to_f32(name, shape);
  }
  bool has(const std::string& name) const { return dir->find(name).has_value(); }
  std::string origin() const { return dir->path().string(); }
};

struct GgufSource {
  const io::GgufFile* file;
  std::string gguf_name(const std::string& hf_name) const {
    const auto name = io::qwen3_gguf_tensor_name(hf_name);
    if (!name) throw error(file->name() + ": no GGUF name for tensor '" + hf_name + "'");
    return *name;
  }
  kernels::cpu::WeightMatrix matrix(const std::string& hf_name, std::size_t rows, std::size_t cols) const {
    const std::string name = gguf_name(hf_name);
    const io::GgufTensorInfo& info = file->expect_shape(name, {rows, cols});
    return weight_view(info.dtype(), file->bytes(info), rows, cols, file->name() + ": tensor '" + name + "'");
  }
  std::vector<float> vector(const std::string& hf_name, std::size_t n) const {
    return file->to_f32(gguf_name(hf_name), {n});
  }
  bool has(const std::string& hf_name) const { return file->find_tensor(gguf_name(hf_name)) != nullptr; }
  std::string origin() const { return file->name(); }
};

/// NaN weights: the norm weights (every layer's, a few KB in all, already
/// widened to f32 here) are scanned at load, where a corrupt checkpoint most
/// often shows and where one NaN poisons every token. The big matrices are
/// not scanned (reading gigabytes at load would double the start-up time);
/// a NaN there gives NaN logits, which the sampler refuses at the first
/// forward pass: that request fails with "non-finite logits" and the
/// server stays up.
inline void require_finite(const std::vector<float>& values, const std::string& origin, const std::string& tensor) {
  for (std::size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i]))
      throw error(origin + ": tensor '" + tensor + "' holds a non-finite value (" + std::to_string(values[i]) +
                  ") at index " + std::to_string(i) + "; the checkpoint is corrupt");
}

/// A tokenizer must not produce ids past the embedding table: every .gguf
/// of a models directory shares DIR/tokenizer.json, so a mismatch is easy to make.
inline void require_tokenizer_fits(const tokenizer::BpeTokenizer& tokenizer, std::size_t vocab_size,
                                   const std::filesystem::path& tokenizer_json) {
  if (tokenizer.vocab_size() > vocab_size)
    throw error(tokenizer_json.string() + " has " + std::to_string(tokenizer.vocab_size()) +
                " tokens but the model's embedding table has " + std::to_string(vocab_size) +
                " rows (vocab_size): ids past " + std::to_string(vocab_size - 1) +
                " would be out of range; use the tokenizer.json that belongs to this checkpoint");
}

/// Touches one byte per page of a weight so the OS maps it in now; returns its size.
IZWI_DECL std::size_t prefault(const kernels::cpu::WeightMatrix& w, bool touch) {
  const std::size_t bytes = w.row_bytes() * w.rows;
  if (touch) {
    const auto* p = static_cast<const volatile unsigned char*>(w.data);
    unsigned char sink = 0;
    for (std::size_t i = 0; i < bytes; i += 4096) sink ^= p[i];
    (void)sink;
  }
  return bytes;
}

template <class Source>
void load_qwen3_weights(const Source& source, const Qwen3Config& c, const Qwen3LoadOptions& options,
                        kernels::cpu::WeightMatrix& embed, kernels::cpu::WeightMatrix& lm_head,
                        std::vector<float>& final_norm, std::vector<Qwen3LayerWeights>& layers) {
  embed = source.matrix("model.embed_tokens.weight", c.vocab_size, c.hidden_size);
  const bool tied = c.tie_word_embeddings || !source.has("lm_head.weight");
  lm_head = tied ? embed : source.matrix("lm_head.weight", c.vocab_size, c.hidden_size);
  final_norm = source.vector("model.norm.weight", c.hidden_size);
  require_finite(final_norm, source.origin(), "model.norm.weight");
  layers.clear();
  for (std::uint32_t l = 0; l < c.num_layers; ++l) {
    layers.push_back(load_qwen3_layer(source, c, l));
    const Qwen3LayerWeights& w = layers.back();
    const std::string p = "model.layers." + std::to_string(l) + ".";
    require_finite(w.input_norm, source.origin(), p + "input_layernorm.weight");
    require_finite(w.post_attention_norm, source.origin(), p + "post_attention_layernorm.weight");
    require_finite(w.q_norm, source.origin(), p + "self_attn.q_norm.weight");
    require_finite(w.k_norm, source.origin(), p + "self_attn.k_norm.weight");
  }

  // Progress by bytes of the big matrices, faulted in one layer at a time.
  // A checkpoint read into memory (FileMemory::read) is resident already.
  const bool touch = options.prefault_weights && options.weights_memory == io::FileMemory::map;
  std::size_t total = embed.row_bytes() * embed.rows + (tied ? 0 : lm_head.row_bytes() * lm_head.rows);
  for (const Qwen3LayerWeights& w : layers)
    for (const auto* m : {&w.q_proj, &w.k_proj, &w.v_proj, &w.o_proj, &w.gate_proj, &w.up_proj, &w.down_proj})
      total += m->row_bytes() * m->rows;
  std::size_t done = prefault(embed, touch) + (tied ? 0 : prefault(lm_head, touch));
  if (options.on_progress) options.on_progress(done, total);
  for (const Qwen3LayerWeights& w : layers) {
    for (const auto* m : {&w.q_proj, &w.k_proj, &w.v_proj, &w.o_proj, &w.gate_proj, &w.up_proj, &w.down_proj})
      done += prefault(*m, touch);
    if (options.on_progress) options.on_progress(done, total);
  }
}

}  // namespace detail

IZWI_DECL Qwen3 Qwen3::load(const std::filesystem::path& path, Qwen3LoadOptions options) {
  if (options.kv_cache_dtype == DType::q8_0)
    throw invalid_argument("kv_cache_dtype", "the KV cache holds f32, f16 or bf16, not q8_0");
  if (std::filesystem::is_directory(path)) return from_directory(path, options);
  if (path.extension() == ".gguf") return from_gguf(path, options);
  throw invalid_argument("model", path.string() + " is neither a model directory nor a .gguf file");
}

IZWI_DECL Qwen3 Qwen3::from_directory(const std::filesystem::path& dir, const Qwen3LoadOptions& options) {
  auto directory = std::make_shared<io::ModelDirectory>(io::ModelDirectory::open(dir, options.weights_memory));
  Qwen3 model;
  model.config_ = Qwen3Config::from(directory->transformer_config());
  if (const auto& generation = directory->generation_config(); generation && !generation->eos_token_ids.empty()) {
    model.config_.eos_token_ids.clear();
    for (std::int64_t id : generation->eos_token_ids) model.config_.eos_token_ids.push_back(static_cast<TokenId>(id));
  }
  model.kv_cache_dtype_ = options.kv_cache_dtype;
  detail::load_qwen3_weights(detail::SafetensorsSource{directory.get()}, model.config_, options, model.embed_tokens_,
                             model.lm_head_, model.final_norm_, model.layers_);
  if (options.load_tokenizer)
    if (const auto tokenizer_json = directory->tokenizer_json_path()) {
      model.tokenizer_ = std::make_shared<const tokenizer::BpeTokenizer>(tokenizer::BpeTokenizer::from_file(*tokenizer_json));
      detail::require_tokenizer_fits(*model.tokenizer_, model.config_.vocab_size, *tokenizer_json);
    }
  model.description_ = dir.string() + " (safetensors, " + std::string(to_string(model.layers_[0].q_proj.dtype)) + ")";
  model.weights_owner_ = std::move(directory);
  return model;
}

IZWI_DECL Qwen3 Qwen3::from_gguf(const std::filesystem::path& path, const Qwen3LoadOptions& options) {
  auto file = std::make_shared<io::GgufFile>(io::GgufFile::open(path, options.weights_memory));
  Qwen3 model;
  model.config_ = Qwen3Config::from(io::qwen3_config_from_gguf(*file));
  if (model.config_.eos_token_ids.empty())
    if (const auto* eos = file->find_metadata("tokenizer.ggml.eos_token_id"))
      model.config_.eos_token_ids.push_back(static_cast<TokenId>(eos->as_int64()));
  model.kv_cache_dtype_ = options.kv_cache_dtype;
  detail::load_qwen3_weights(detail::GgufSource{file.get()}, model.config_, options, model.embed_tokens_,
                             model.lm_head_, model.final_norm_, model.layers_);
  // A tokenizer.json beside the file is used when present (GGUF's own
  // vocabulary is not read into a tokenizer here).
  if (options.load_tokenizer)
    if (const auto beside = path.parent_path() / "tokenizer.json"; std::filesystem::exists(beside)) {
      model.tokenizer_ = std::make_shared<const tokenizer::BpeTokenizer>(tokenizer::BpeTokenizer::from_file(beside));
      detail::require_tokenizer_fits(*model.tokenizer_, model.config_.vocab_size, beside);
    }
  model.description_ = path.string() + " (GGUF, " + std::string(to_string(model.layers_[0].q_proj.dtype)) + ")";
  model.weights_owner_ = std::move(file);
  return model;
}

}  // namespace izwi
