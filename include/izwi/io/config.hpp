#pragma once
// Typed reading of a Hugging Face model's config.json and
// generation_config.json.
//
// ConfigView is the building block: a JSON object from a named file with
// checked accessors, so every model family reads its own keys with the same
// errors -- "<file>: key '<key>': missing", "...: is a string, not a number",
// "...: value -3 is out of range for uint32". On top of it:
//
//   TransformerConfig  the hyperparameters shared by decoder-only transformer
//                      families (Qwen2/Qwen3, Llama-style): sizes, heads,
//                      head_dim, RoPE base, RMSNorm epsilon, vocabulary, tying.
//   GenerationConfig   generation_config.json's defaults (all optional).
//
//   auto doc = izwi::io::read_json_file(dir / "config.json");
//   auto cfg = izwi::io::TransformerConfig::from(izwi::io::ConfigView(doc, "config.json"));

#include <izwi/config.hpp>
#include <izwi/core/dtype.hpp>
#include <izwi/core/error.hpp>
#include <izwi/io/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace izwi::io {

/// A configuration file lacks a key, or a key has the wrong type or an
/// impossible value. `what()` reads "<file>: key '<key>': <problem>".
class config_error : public izwi::error {
 public:
  config_error(std::string file, std::string key, const std::string& problem);
  const std::string& file() const noexcept { return file_; }
  /// The key with its path for nested objects ("rope_scaling.factor").
  const std::string& key() const noexcept { return key_; }

 private:
  std::string file_;
  std::string key_;
};

/// A JSON object read from `file`, with accessors that name the file and the
/// key in every error. A view: the JsonValue it was made from must outlive it.
///
/// T may be bool, any integer type (the JSON number must be an integer
/// literal in T's range), float or double (any number), std::string, or
/// std::vector of one of those (a JSON array).
class ConfigView {
 public:
  /// `value` must be an object (config_error otherwise, naming `key_prefix`
  /// or "<root>").
  ConfigView(const JsonValue& value, std::string file, std::string key_prefix = "");

  const std::string& file() const noexcept { return file_; }

  /// The member, or nullptr when absent. A JSON null counts as present here.
  const JsonValue* find(std::string_view key) const noexcept;
  /// Present and not null (Hugging Face writes absent settings as null).
  bool has(std::string_view key) const noexcept;

  /// The value of `key`; config_error if absent, null, or not a T.
  template <class T>
  T required(std::string_view key) const;
  /// The value of `key`, or `fallback` if absent or null; config_error if present but not a T.
  template <class T>
  T optional(std::string_view key, T fallback) const;
  /// The value of `key`, or nullopt if absent or null.
  template <class T>
  std::optional<T> optional(std::string_view key) const;
  /// An integer or a list of integers as a list (eos_token_id is either);
  /// empty if absent or null.
  std::vector<std::int64_t> integer_or_list(std::string_view key) const;

  /// The nested object `key` (config_error if absent or not an object).
  ConfigView object(std::string_view key) const;

  /// A config_error for `key` (for checks a caller makes on values it read).
  config_error make_error(std::string_view key, const std::string& problem) const;

 private:
  template <class T>
  T convert(const JsonValue& value, std::string_view key) const;

  const JsonObject* object_;
  std::string file_;
  std::string prefix_;  ///< "" or "rope_scaling."
};

/// Hyperparameters of a decoder-only transformer as config.json states them.
/// Defaults follow transformers' where the key is optional there.
struct TransformerConfig {
  std::string model_type;                  ///< "qwen3"
  std::vector<std::string> architectures;  ///< ["Qwen3ForCausalLM"]
  std::uint32_t hidden_size = 0;
  std::uint32_t num_hidden_layers = 0;
  std::uint32_t num_attention_heads = 0;
  std::uint32_t num_key_value_heads = 0;  ///< default: num_attention_heads
  std::uint32_t head_dim = 0;             ///< default: hidden_size / num_attention_heads
  std::uint32_t intermediate_size = 0;
  std::uint32_t vocab_size = 0;
  std::uint32_t max_position_embeddings = 0;  ///< 0 when absent
  double rope_theta = 10000.0;
  double rms_norm_eps = 1e-6;
  bool tie_word_embeddings = false;
  bool attention_bias = false;
  std::string hidden_act = "silu";
  /// "bfloat16", "float16", "float32" ("torch_dtype", or "dtype" in newer
  /// transformers); empty when absent.
  std::string torch_dtype;
  /// rope_scaling's "rope_type" (or "type"); empty when rope_scaling is null/absent.
  std::string rope_scaling_type;
  bool use_sliding_window = false;
  std::optional<std::int64_t> bos_token_id;
  std::vector<std::int64_t> eos_token_ids;  ///< eos_token_id as a list

  /// Reads and validates: sizes positive, num_attention_heads a multiple of
  /// num_key_value_heads, rope_theta and rms_norm_eps positive. Unknown keys
  /// are ignored (config.json carries many a server does not need).
  static TransformerConfig from(const ConfigView& config);

  /// torch_dtype as an izwi DType (nullopt when absent or not f32/f16/bf16).
  std::optional<DType> weight_dtype() const noexcept;
};

/// generation_config.json: every field optional.
struct GenerationConfig {
  std::optional<std::int64_t> bos_token_id;
  std::optional<std::int64_t> pad_token_id;
  std::vector<std::int64_t> eos_token_ids;  ///< eos_token_id, an integer or a list
  std::optional<bool> do_sample;
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<std::int64_t> top_k;
  std::optional<double> min_p;
  std::optional<double> repetition_penalty;
  std::optional<std::int64_t> max_new_tokens;
  std::optional<std::int64_t> max_length;

  static GenerationConfig from(const ConfigView& config);
};

/// Read a file and parse it (izwi::error / json_error / config_error).
TransformerConfig read_transformer_config(const std::filesystem::path& config_json);
GenerationConfig read_generation_config(const std::filesystem::path& generation_config_json);

}  // namespace izwi::io

#include <izwi/io/impl/config.hpp>
#if !defined(IZWI_SEPARATE_COMPILATION)
#include <izwi/io/impl/config.ipp>
#endif
