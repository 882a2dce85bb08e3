#pragma once
// Bodies of include/izwi/io/gguf_qwen3.hpp.
// Inline in header-only builds; compiled once, in <izwi/io/src.hpp>, under
// IZWI_SEPARATE_COMPILATION (see izwi/config.hpp).

#include <array>
#include <charconv>
#include <cmath>
#include <utility>

namespace izwi::io {

IZWI_DECL void add_qwen3_metadata(GgufWriter& writer, const TransformerConfig& config, const GgufVocabulary& vocabulary,
                               GgufFileType file_type, std::string_view model_name) {
  if (vocabulary.tokens.empty()) throw izwi::error("add_qwen3_metadata: the vocabulary has no tokens");
  if (vocabulary.token_types.size() != vocabulary.tokens.size())
    throw izwi::error("add_qwen3_metadata: " + std::to_string(vocabulary.token_types.size()) + " token types for " +
                      std::to_string(vocabulary.tokens.size()) + " tokens");
  const std::string a = "qwen3.";
  writer.set("general.architecture", GgufValue::string("qwen3"));
  writer.set("general.name", GgufValue::string(std::string(model_name)));
  writer.set("general.file_type", GgufValue::u32(static_cast<std::uint32_t>(file_type)));
  writer.set(a + "block_count", GgufValue::u32(config.num_hidden_layers));
  writer.set(a + "context_length",
             GgufValue::u32(config.max_position_embeddings != 0 ? config.max_position_embeddings : 40960));
  writer.set(a + "embedding_length", GgufValue::u32(config.hidden_size));
  writer.set(a + "feed_forward_length", GgufValue::u32(config.intermediate_size));
  writer.set(a + "attention.head_count", GgufValue::u32(config.num_attention_heads));
  writer.set(a + "attention.head_count_kv", GgufValue::u32(config.num_key_value_heads));
  writer.set(a + "attention.key_length", GgufValue::u32(config.head_dim));
  writer.set(a + "attention.value_length", GgufValue::u32(config.head_dim));
  writer.set(a + "rope.dimension_count", GgufValue::u32(config.head_dim));
  writer.set(a + "rope.freq_base", GgufValue::f32(static_cast<float>(config.rope_theta)));
  writer.set(a + "attention.layer_norm_rms_epsilon", GgufValue::f32(static_cast<float>(config.rms_norm_eps)));

  writer.set("tokenizer.ggml.model", GgufValue::string(vocabulary.model));
  writer.set("tokenizer.ggml.pre", GgufValue::string(vocabulary.pre));
  writer.set("tokenizer.ggml.tokens", GgufValue::strings(vocabulary.tokens));
  std::vector<std::int64_t> types;
  types.reserve(vocabulary.token_types.size());
  for (auto t : vocabulary.token_types) types.push_back(static_cast<std::int64_t>(t));
  writer.set("tokenizer.ggml.token_type", GgufValue::integers(GgufValueType::int32, std::move(types)));
  writer.set("tokenizer.ggml.merges", GgufValue::strings(vocabulary.merges));
  if (vocabulary.bos_token_id) writer.set("tokenizer.ggml.bos_token_id", GgufValue::u32(*vocabulary.bos_token_id));
  if (vocabulary.eos_token_id) writer.set("tokenizer.ggml.eos_token_id", GgufValue::u32(*vocabulary.eos_token_id));
  if (vocabulary.padding_token_id)
    writer.set("tokenizer.ggml.padding_token_id", GgufValue::u32(*vocabulary.padding_token_id));
  writer.set("tokenizer.ggml.add_bos_token", GgufValue::boolean(vocabulary.add_bos_token));
  if (!vocabulary.chat_template.empty()) writer.set("tokenizer.chat_template", GgufValue::string(vocabulary.chat_template));
}

IZWI_DECL TransformerConfig qwen3_config_from_gguf(const GgufFile& file) {
  const std::string arch = file.architecture();
  if (arch != "qwen3")
    throw format_error(file.name(), "", "metadata 'general.architecture': is \"" + arch + "\", expected \"qwen3\"");
  const std::string a = arch + ".";
  TransformerConfig c;
  c.model_type = arch;
  c.num_hidden_layers = file.get<std::uint32_t>(a + "block_count");
  c.hidden_size = file.get<std::uint32_t>(a + "embedding_length");
  c.intermediate_size = file.get<std::uint32_t>(a + "feed_forward_length");
  c.num_attention_heads = file.get<std::uint32_t>(a + "attention.head_count");
  c.num_key_value_heads = file.get<std::uint32_t>(a + "attention.head_count_kv", c.num_attention_heads);
  c.max_position_embeddings = file.get<std::uint32_t>(a + "context_length", 0);
  if (c.num_attention_heads == 0 || c.num_key_value_heads == 0 || c.num_attention_heads % c.num_key_value_heads != 0)
    throw format_error(file.name(), "", "metadata '" + a + "attention.head_count_kv': " +
                                            std::to_string(c.num_key_value_heads) + " does not divide head_count " +
                                            std::to_string(c.num_attention_heads));
  const std::uint32_t default_head_dim = c.hidden_size / c.num_attention_heads;
  c.head_dim = file.get<std::uint32_t>(a + "attention.key_length", default_head_dim);
  const auto value_length = file.get<std::uint32_t>(a + "attention.value_length", c.head_dim);
  if (value_length != c.head_dim)
    throw format_error(file.name(), "", "metadata '" + a + "attention.value_length': " + std::to_string(value_length) +
                                            " differs from key_length " + std::to_string(c.head_dim));
  c.rope_theta = file.get<double>(a + "rope.freq_base", 10000.0);
  c.rms_norm_eps = file.get<double>(a + "attention.layer_norm_rms_epsilon");
  if (const GgufValue* tokens = file.find_metadata("tokenizer.ggml.tokens")) {
    c.vocab_size = static_cast<std::uint32_t>(tokens->size());
  } else {
    const GgufTensorInfo& embedding = file.tensor("token_embd.weight");
    c.vocab_size = embedding.dims.size() == 2 ? static_cast<std::uint32_t>(embedding.dims[1]) : 0;
  }
  c.tie_word_embeddings = file.find_tensor("output.weight") == nullptr;
  if (file.find_metadata("tokenizer.ggml.bos_token_id"))
    c.bos_token_id = file.get<std::int64_t>("tokenizer.ggml.bos_token_id");
  if (file.find_metadata("tokenizer.ggml.eos_token_id"))
    c.eos_token_ids = {file.get<std::int64_t>("tokenizer.ggml.eos_token_id")};
  for (const auto& [key, value] : {std::pair<const char*, std::uint32_t>{"block_count", c.num_hidden_layers},
                                   {"embedding_length", c.hidden_size},
                                   {"feed_forward_length", c.intermediate_size},
                                   {"attention.key_length", c.head_dim}})
    if (value == 0) throw format_error(file.name(), "", "metadata '" + a + key + "': must be positive");
  // As read_transformer_config checks config.json's: a zero or negative
  // epsilon or RoPE base gives NaN or infinite activations, not an error.
  if (!(c.rope_theta > 0) || !std::isfinite(c.rope_theta))
    throw format_error(file.name(), "", "metadata '" + a + "rope.freq_base': must be positive, got " +
                                            std::to_string(c.rope_theta));
  if (!(c.rms_norm_eps > 0) || !std::isfinite(c.rms_norm_eps))
    throw format_error(file.name(), "", "metadata '" + a + "attention.layer_norm_rms_epsilon': must be positive, got " +
                                            std::to_string(c.rms_norm_eps));
  if (c.vocab_size == 0)
    throw format_error(file.name(), "", "the vocabulary is empty (tokenizer.ggml.tokens, token_embd.weight)");
  return c;
}

namespace detail {

// HF layer-tensor stems and their GGUF stems ("self_attn.q_proj" <-> "attn_q").
inline constexpr std::array<std::pair<std::string_view, std::string_view>, 11> qwen3_layer_names = {{
    {"input_layernorm", "attn_norm"},
    {"self_attn.q_proj", "attn_q"},
    {"self_attn.k_proj", "attn_k"},
    {"self_attn.v_proj", "attn_v"},
    {"self_attn.o_proj", "attn_output"},
    {"self_attn.q_norm", "attn_q_norm"},
    {"self_attn.k_norm", "attn_k_norm"},
    {"post_attention_layernorm", "ffn_norm"},
    {"mlp.gate_proj", "ffn_gate"},
    {"mlp.up_proj", "ffn_up"},
    {"mlp.down_proj", "ffn_down"},
}};
inline constexpr std::array<std::pair<std::string_view, std::string_view>, 3> qwen3_global_names = {{
    {"model.embed_tokens", "token_embd"},
    {"model.norm", "output_norm"},
    {"lm_head", "output"},
}};

// Splits "<prefix><layer>.<rest>" -> (layer, rest); nullopt if it does not match.
IZWI_DECL std::optional<std::pair<std::string, std::string_view>> split_layer(std::string_view name, std::string_view prefix) {
  if (name.substr(0, prefix.size()) != prefix) return std::nullopt;
  name.remove_prefix(prefix.size());
  const std::size_t dot = name.find('.');
  if (dot == 0 || dot == std::string_view::npos) return std::nullopt;
  unsigned layer = 0;
  const auto parsed = std::from_chars(name.data(), name.data() + dot, layer);
  if (parsed.ec != std::errc() || parsed.ptr != name.data() + dot) return std::nullopt;
  if (dot > 1 && name[0] == '0') return std::nullopt;  // "01" is not a layer number
  return std::pair{std::string(name.substr(0, dot)), name.substr(dot + 1)};
}

// Splits "<stem>.<weight|bias>".
IZWI_DECL std::optional<std::pair<std::string_view, std::string_view>> split_suffix(std::string_view name) {
  for (std::string_view suffix : {std::string_view(".weight"), std::string_view(".bias")})
    if (name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix)
      return std::pair{name.substr(0, name.size() - suffix.size()), suffix};
  return std::nullopt;
}

}  // namespace detail

IZWI_DECL std::optional<std::string> qwen3_gguf_tensor_name(std::string_view hf_name) {
  const auto parts = detail::split_suffix(hf_name);
  if (!parts) return std::nullopt;
  const auto [stem, suffix] = *parts;
  for (const auto& [hf, gguf] : detail::qwen3_global_names)
    if (stem == hf) return std::string(gguf) + std::string(suffix);
  if (const auto layer = detail::split_layer(stem, "model.layers."))
    for (const auto& [hf, gguf] : detail::qwen3_layer_names)
      if (layer->second == hf) return "blk." + layer->first + "." + std::string(gguf) + std::string(suffix);
  return std::nullopt;
}

IZWI_DECL std::optional<std::string> qwen3_hf_tensor_name(std::string_view gguf_name) {
  const auto parts = detail::split_suffix(gguf_name);
  if (!parts) return std::nullopt;
  const auto [stem, suffix] = *parts;
  for (const auto& [hf, gguf] : detail::qwen3_global_names)
    if (stem == gguf) return std::string(hf) + std::string(suffix);
  if (const auto layer = detail::split_layer(stem, "blk."))
    for (const auto& [hf, gguf] : detail::qwen3_layer_names)
      if (layer->second == gguf) return "model.layers." + layer->first + "." + std::string(hf) + std::string(suffix);
  return std::nullopt;
}

}  // namespace izwi::io
