#pragma once

#include <algorithm>
#include <array>
#include <string>
#include <utility>

#include "izwi/core/error.hpp"
#include "izwi/io/gguf.hpp"
#include "izwi/io/gguf_qwen3.hpp"
#include "izwi/io/model_directory.hpp"

namespace izwi {

inline Qwen3Config Qwen3Config::from(const io::TransformerConfig& c) {
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
inline kernels::cpu::WeightMatrix weight_view(DType dtype, std::span<const std::byte> bytes, std::size_t rows,
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
};

/// Touches one byte per page of a weight so the OS maps it in now; returns its size.
inline std::size_t prefault(const kernels::cpu::WeightMatrix& w, bool touch) {
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
  layers.clear();
  for (std::uint32_t l = 0; l < c.num_layers; ++l) layers.push_back(load_qwen3_layer(source, c, l));

  // Progress by bytes of the big matrices, faulted in one layer at a time.
  const bool touch = options.prefault_weights;
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

inline Qwen3 Qwen3::load(const std::filesystem::path& path, Qwen3LoadOptions options) {
  if (options.kv_cache_dtype == DType::q8_0)
    throw invalid_argument("kv_cache_dtype", "the KV cache holds f32, f16 or bf16, not q8_0");
  if (std::filesystem::is_directory(path)) return from_directory(path, options);
  if (path.extension() == ".gguf") return from_gguf(path, options);
  throw invalid_argument("model", path.string() + " is neither a model directory nor a .gguf file");
}

inline Qwen3 Qwen3::from_directory(const std::filesystem::path& dir, const Qwen3LoadOptions& options) {
  auto directory = std::make_shared<io::ModelDirectory>(io::ModelDirectory::open(dir));
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
    if (const auto tokenizer_json = directory->tokenizer_json_path())
      model.tokenizer_ = std::make_shared<const tokenizer::BpeTokenizer>(tokenizer::BpeTokenizer::from_file(*tokenizer_json));
  model.description_ = dir.string() + " (safetensors, " + std::string(to_string(model.layers_[0].q_proj.dtype)) + ")";
  model.weights_owner_ = std::move(directory);
  return model;
}

inline Qwen3 Qwen3::from_gguf(const std::filesystem::path& path, const Qwen3LoadOptions& options) {
  auto file = std::make_shared<io::GgufFile>(io::GgufFile::open(path));
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
    if (const auto beside = path.parent_path() / "tokenizer.json"; std::filesystem::exists(beside))
      model.tokenizer_ = std::make_shared<const tokenizer::BpeTokenizer>(tokenizer::BpeTokenizer::from_file(beside));
  model.description_ = path.string() + " (GGUF, " + std::string(to_string(model.layers_[0].q_proj.dtype)) + ")";
  model.weights_owner_ = std::move(file);
  return model;
}

/// The operations forward() asks of a backend, for ops an Ops:
///   float* ops.buffer(slot, floats)                 scratch that lives until the next call with that slot
///   ops.embed(table, tokens, out)                   rows of `table` for `tokens`, widened to f32
///   ops.matmul(x, m, weight, y)                     y[m][rows] = x[m][cols] · weightᵀ
///   ops.matmuls(x, m, {{&w1, y1}, {&w2, y2}, ...})  the same for up to 4 weights over one x, in one pass
///   ops.rms_norm(x, rows, dim, weight, eps, out)    out may equal x
///   ops.rms_norm_heads(x, rows, heads, head_dim, weight, eps)    in place, per head
///   ops.rope(x, rows, heads, head_dim, positions, theta)          NeoX rotary, in place
///   ops.store_kv(view, dtype, k, v, slots, kv_heads, head_dim)     K/V rows into their slots
///   ops.attention(q, sequences, view, dtype, block_size, heads, kv_heads, head_dim, out)
///   ops.silu_mul(gate, up, n)                       gate = silu(gate) * up
///   ops.add(x, y, n)                                x += y
///   ops.gather_rows(x, dim, rows, out)              out[i] = x[rows[i]]
template <class Ops, KVCachePolicy K>
void Qwen3::forward(Ops& ops, const ForwardBatch& batch, std::span<const typename Ops::attention_sequence> sequences,
                    K& kv, float* logits) const {
  const Qwen3Config& c = config_;
  const std::size_t t = batch.tokens.size();
  const std::size_t hidden = c.hidden_size;
  const std::size_t q_dim = std::size_t{c.num_heads} * c.head_dim;
  const std::size_t kv_dim = std::size_t{c.num_kv_heads} * c.head_dim;
  const float eps = static_cast<float>(c.rms_norm_eps);

  float* x = ops.buffer(0, t * hidden);
  float* h = ops.buffer(1, t * hidden);
  float* q = ops.buffer(2, t * q_dim);
  float* k = ops.buffer(3, t * kv_dim);
  float* v = ops.buffer(4, t * kv_dim);
  float* attn = ops.buffer(5, t * q_dim);
  float* gate = ops.buffer(6, t * c.intermediate_size);
  float* up = ops.buffer(7, t * c.intermediate_size);

  ops.embed(embed_tokens_, batch.tokens, x);
  for (std::uint32_t l = 0; l < c.num_layers; ++l) {
    const Qwen3LayerWeights& w = layers_[l];
    ops.rms_norm(x, t, hidden, w.input_norm.data(), eps, h);
    // q, k and v (then gate and up) read the same rows: one pass over the
    // threads for all three instead of three (one pool synchronisation; the
    // prefill GEMM packs the activations once).
    ops.matmuls(h, t, {{&w.q_proj, q}, {&w.k_proj, k}, {&w.v_proj, v}});
    ops.rms_norm_heads(q, t, c.num_heads, c.head_dim, w.q_norm.data(), eps);
    ops.rms_norm_heads(k, t, c.num_kv_heads, c.head_dim, w.k_norm.data(), eps);
    ops.rope(q, t, c.num_heads, c.head_dim, batch.positions, c.rope_theta);
    ops.rope(k, t, c.num_kv_heads, c.head_dim, batch.positions, c.rope_theta);
    // Every token's K/V is in the cache before any attention reads it: a
    // sequence may hit prefix blocks that another computes in this same step.
    const KVLayerView view = kv.layer(l);
    ops.store_kv(view, kv_cache_dtype_, k, v, batch.slots, c.num_kv_heads, c.head_dim);
    ops.attention(q, sequences, view, kv_cache_dtype_, kv.block_size(), c.num_heads, c.num_kv_heads, c.head_dim, attn);
    ops.matmul(attn, t, w.o_proj, h);
    ops.add(x, h, t * hidden);

    ops.rms_norm(x, t, hidden, w.post_attention_norm.data(), eps, h);
    ops.matmuls(h, t, {{&w.gate_proj, gate}, {&w.up_proj, up}});
    ops.silu_mul(gate, up, t * c.intermediate_size);
    ops.matmul(gate, t, w.down_proj, h);
    ops.add(x, h, t * hidden);
  }
  // Only the rows that sample need the final norm and the (large) lm_head.
  const std::size_t rows = batch.logit_rows.size();
  if (rows == 0) return;
  float* last = ops.buffer(1, rows * hidden);
  ops.gather_rows(x, hidden, batch.logit_rows, last);
  ops.rms_norm(last, rows, hidden, final_norm_.data(), eps, last);
  ops.matmul(last, rows, lm_head_, logits);
}

}  // namespace izwi
