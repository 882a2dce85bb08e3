#pragma once
// The non-template bodies of <izwi/io/config.hpp>: `inline` there when izwi is used
// header-only, compiled once in <izwi/io/src.hpp> under IZWI_SEPARATE_COMPILATION
// (see izwi/config.hpp).

#include <izwi/io/config.hpp>
#include <cmath>
#include <concepts>
#include <limits>
#include <type_traits>
#include <utility>

namespace izwi::io {

IZWI_DECL config_error::config_error(std::string file, std::string key, const std::string& problem)
    : izwi::error(file + ": key '" + key + "': " + problem), file_(std::move(file)), key_(std::move(key)) {}

IZWI_DECL ConfigView::ConfigView(const JsonValue& value, std::string file, std::string key_prefix)
    : object_(nullptr), file_(std::move(file)), prefix_(std::move(key_prefix)) {
  if (!value.is_object()) {
    std::string key = prefix_.empty() ? "<root>" : prefix_.substr(0, prefix_.size() - 1);
    throw config_error(file_, key, "is " + json_kind_phrase(value) + ", not an object");
  }
  object_ = &value.as_object();
}

IZWI_DECL const JsonValue* ConfigView::find(std::string_view key) const noexcept { return object_->if_contains(boost::json::string_view(key.data(), key.size())); }

IZWI_DECL bool ConfigView::has(std::string_view key) const noexcept {
  const JsonValue* v = find(key);
  return v != nullptr && !v->is_null();
}

IZWI_DECL config_error ConfigView::make_error(std::string_view key, const std::string& problem) const {
  return config_error(file_, prefix_ + std::string(key), problem);
}

IZWI_DECL std::vector<std::int64_t> ConfigView::integer_or_list(std::string_view key) const {
  const JsonValue* v = find(key);
  if (v == nullptr || v->is_null()) return {};
  if (v->is_array()) return convert<std::vector<std::int64_t>>(*v, key);
  if (v->is_number()) return {convert<std::int64_t>(*v, key)};
  throw make_error(key, "is " + json_kind_phrase(*v) + ", not an integer or a list of integers");
}

IZWI_DECL ConfigView ConfigView::object(std::string_view key) const {
  const JsonValue* v = find(key);
  if (v == nullptr) throw make_error(key, "missing");
  return ConfigView(*v, file_, prefix_ + std::string(key) + ".");
}

IZWI_DECL TransformerConfig TransformerConfig::from(const ConfigView& config) {
  TransformerConfig c;
  c.model_type = config.optional<std::string>("model_type", "");
  c.architectures = config.optional<std::vector<std::string>>("architectures", {});
  c.hidden_size = config.required<std::uint32_t>("hidden_size");
  c.num_hidden_layers = config.required<std::uint32_t>("num_hidden_layers");
  c.num_attention_heads = config.required<std::uint32_t>("num_attention_heads");
  c.intermediate_size = config.required<std::uint32_t>("intermediate_size");
  c.vocab_size = config.required<std::uint32_t>("vocab_size");
  for (const auto& [key, value] : {std::pair<const char*, std::uint32_t>{"hidden_size", c.hidden_size},
                                   {"num_hidden_layers", c.num_hidden_layers},
                                   {"num_attention_heads", c.num_attention_heads},
                                   {"intermediate_size", c.intermediate_size},
                                   {"vocab_size", c.vocab_size}})
    if (value == 0) throw config.make_error(key, "must be positive");

  c.num_key_value_heads = config.optional<std::uint32_t>("num_key_value_heads", c.num_attention_heads);
  if (c.num_key_value_heads == 0) throw config.make_error("num_key_value_heads", "must be positive");
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    throw config.make_error("num_key_value_heads", std::to_string(c.num_key_value_heads) + " does not divide num_attention_heads " +
                                                       std::to_string(c.num_attention_heads));
  if (config.has("head_dim")) {
    c.head_dim = config.required<std::uint32_t>("head_dim");
    if (c.head_dim == 0) throw config.make_error("head_dim", "must be positive");
  } else {
    if (c.hidden_size % c.num_attention_heads != 0)
      throw config.make_error("head_dim", "absent, and hidden_size " + std::to_string(c.hidden_size) +
                                              " is not a multiple of num_attention_heads " + std::to_string(c.num_attention_heads));
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }
  c.max_position_embeddings = config.optional<std::uint32_t>("max_position_embeddings", 0);
  c.rope_theta = config.optional<double>("rope_theta", 10000.0);
  if (!(c.rope_theta > 0) || !std::isfinite(c.rope_theta)) throw config.make_error("rope_theta", "must be positive");
  c.rms_norm_eps = config.optional<double>("rms_norm_eps", 1e-6);
  if (!(c.rms_norm_eps > 0) || !std::isfinite(c.rms_norm_eps)) throw config.make_error("rms_norm_eps", "must be positive");
  c.tie_word_embeddings = config.optional<bool>("tie_word_embeddings", false);
  c.attention_bias = config.optional<bool>("attention_bias", false);
  c.hidden_act = config.optional<std::string>("hidden_act", "silu");
  c.torch_dtype = config.has("torch_dtype") ? config.required<std::string>("torch_dtype")
                                            : config.optional<std::string>("dtype", "");
  if (config.has("rope_scaling")) {
    const ConfigView scaling = config.object("rope_scaling");
    c.rope_scaling_type = scaling.has("rope_type") ? scaling.required<std::string>("rope_type")
                                                   : scaling.optional<std::string>("type", "unknown");
  }
  c.use_sliding_window = config.optional<bool>("use_sliding_window", false);
  c.bos_token_id = config.optional<std::int64_t>("bos_token_id");
  c.eos_token_ids = config.integer_or_list("eos_token_id");
  return c;
}

IZWI_DECL std::optional<DType> TransformerConfig::weight_dtype() const noexcept {
  if (torch_dtype == "bfloat16") return DType::bf16;
  if (torch_dtype == "float16") return DType::f16;
  if (torch_dtype == "float32") return DType::f32;
  return std::nullopt;
}

IZWI_DECL GenerationConfig GenerationConfig::from(const ConfigView& config) {
  GenerationConfig g;
  g.bos_token_id = config.optional<std::int64_t>("bos_token_id");
  g.pad_token_id = config.optional<std::int64_t>("pad_token_id");
  g.eos_token_ids = config.integer_or_list("eos_token_id");
  g.do_sample = config.optional<bool>("do_sample");
  g.temperature = config.optional<double>("temperature");
  g.top_p = config.optional<double>("top_p");
  g.top_k = config.optional<std::int64_t>("top_k");
  g.min_p = config.optional<double>("min_p");
  g.repetition_penalty = config.optional<double>("repetition_penalty");
  g.max_new_tokens = config.optional<std::int64_t>("max_new_tokens");
  g.max_length = config.optional<std::int64_t>("max_length");
  if (g.temperature && (*g.temperature < 0 || !std::isfinite(*g.temperature)))
    throw config.make_error("temperature", "must be a non-negative number");
  if (g.top_p && !(*g.top_p > 0 && *g.top_p <= 1)) throw config.make_error("top_p", "must be in (0, 1]");
  if (g.min_p && !(*g.min_p >= 0 && *g.min_p <= 1)) throw config.make_error("min_p", "must be in [0, 1]");
  if (g.repetition_penalty && !(*g.repetition_penalty > 0)) throw config.make_error("repetition_penalty", "must be positive");
  return g;
}

IZWI_DECL TransformerConfig read_transformer_config(const std::filesystem::path& config_json) {
  const JsonValue doc = read_json_file(config_json);
  return TransformerConfig::from(ConfigView(doc, config_json.string()));
}

IZWI_DECL GenerationConfig read_generation_config(const std::filesystem::path& generation_config_json) {
  const JsonValue doc = read_json_file(generation_config_json);
  return GenerationConfig::from(ConfigView(doc, generation_config_json.string()));
}

}  // namespace izwi::io
