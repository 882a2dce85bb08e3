#pragma once
// A model directory as published on the Hugging Face hub:
//
//   config.json                    required: the architecture's hyperparameters
//   generation_config.json         optional: sampling defaults, eos ids
//   tokenizer.json                 optional here (the tokenizer reads it)
//   tokenizer_config.json          optional: chat template, special tokens
//   model.safetensors              the weights in one file, or
//   model.safetensors.index.json   {"metadata": {...}, "weight_map": {tensor: shard}}
//   model-00001-of-0000N.safetensors ...  the shards it names
//
// ModelDirectory opens the JSON files (parsed once), maps (or reads) every weight file,
// and gives one tensor lookup across shards. With an index, the weight_map is
// the authority: each shard it names must be a plain file name inside the
// directory (no path separators, no ".."), must exist, and must hold every
// tensor mapped to it; a tensor a shard holds but the map does not name is
// ignored, as transformers ignores it. Errors name the directory or file,
// the tensor and the problem.
//
//   auto dir = izwi::io::ModelDirectory::open("Qwen3-0.6B");
//   auto cfg = dir.transformer_config();
//   auto w = dir.to_f32("model.layers.0.mlp.up_proj.weight", {cfg.intermediate_size, cfg.hidden_size});

#include <izwi/config.hpp>
#include <izwi/io/config.hpp>
#include <izwi/io/json.hpp>
#include <izwi/io/safetensors.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace izwi::io {

/// A tensor found in a model directory: the file holding it and its header entry.
struct TensorLocation {
  const SafetensorsFile* file = nullptr;
  const TensorInfo* info = nullptr;
};

class ModelDirectory {
 public:
  /// Opens `directory` (izwi::error if it is not one or config.json or the
  /// weights are missing; json_error / config_error / format_error for broken
  /// files), its weight files mapped or read as `memory` says.
  static ModelDirectory open(const std::filesystem::path& directory, FileMemory memory = FileMemory::map);

  ModelDirectory(ModelDirectory&&) noexcept = default;
  ModelDirectory& operator=(ModelDirectory&&) noexcept = default;
  ModelDirectory(const ModelDirectory&) = delete;
  ModelDirectory& operator=(const ModelDirectory&) = delete;

  const std::filesystem::path& path() const noexcept { return path_; }

  // --- configuration ---
  /// config.json as parsed JSON, and as a checked view for family-specific keys.
  const JsonValue& config_json() const noexcept { return config_json_; }
  ConfigView config() const { return ConfigView(config_json_, (path_ / "config.json").string()); }
  /// config.json's decoder hyperparameters (config_error if absent/ill-typed).
  TransformerConfig transformer_config() const { return TransformerConfig::from(config()); }
  /// generation_config.json, if the directory has one.
  const std::optional<GenerationConfig>& generation_config() const noexcept { return generation_config_; }
  /// tokenizer_config.json, if present.
  const std::optional<JsonValue>& tokenizer_config_json() const noexcept { return tokenizer_config_json_; }
  /// Path of tokenizer.json, if present (not parsed here: the tokenizer does that).
  std::optional<std::filesystem::path> tokenizer_json_path() const;

  // --- weights ---
  /// The safetensors files, in shard order (one for an unsharded model).
  std::span<const SafetensorsFile> weight_files() const noexcept { return files_; }
  /// Every tensor name, sorted.
  std::vector<std::string> tensor_names() const;
  std::size_t tensor_count() const noexcept { return index_.size(); }
  /// Where `name` lives; nullopt if the model has no such tensor.
  std::optional<TensorLocation> find(std::string_view name) const noexcept;
  /// As find(), but format_error "missing tensor" naming the directory.
  TensorLocation at(std::string_view name) const;
  /// The tensor's header entry after checking its shape (format_error showing
  /// both shapes, naming the shard file).
  const TensorInfo& expect_shape(std::string_view name, std::span<const std::uint64_t> shape) const;
  const TensorInfo& expect_shape(std::string_view name, std::initializer_list<std::uint64_t> shape) const {
    return expect_shape(name, std::span<const std::uint64_t>(shape.begin(), shape.size()));
  }
  std::span<const std::byte> bytes(std::string_view name) const;
  std::vector<float> to_f32(std::string_view name) const;
  std::vector<float> to_f32(std::string_view name, std::span<const std::uint64_t> shape) const;
  std::vector<float> to_f32(std::string_view name, std::initializer_list<std::uint64_t> shape) const {
    return to_f32(name, std::span<const std::uint64_t>(shape.begin(), shape.size()));
  }

 private:
  ModelDirectory() = default;

  std::filesystem::path path_;
  JsonValue config_json_;
  std::optional<GenerationConfig> generation_config_;
  std::optional<JsonValue> tokenizer_config_json_;
  std::vector<SafetensorsFile> files_;
  /// tensor name -> (file position in files_, tensor) ; the strings are owned here.
  std::map<std::string, std::pair<std::size_t, const TensorInfo*>, std::less<>> index_;
};

/// Name of the index file of a sharded checkpoint.
inline constexpr std::string_view safetensors_index_name = "model.safetensors.index.json";

}  // namespace izwi::io

#if !defined(IZWI_SEPARATE_COMPILATION)
#include <izwi/io/impl/model_directory.ipp>
#endif
