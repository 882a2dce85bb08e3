#pragma once
// Bodies of include/izwi/io/model_directory.hpp.
// Inline in header-only builds; compiled once, in <izwi/io/src.hpp>, under
// IZWI_SEPARATE_COMPILATION (see izwi/config.hpp).

#include <algorithm>
#include <system_error>

namespace izwi::io {

namespace detail {

// A shard named by an index must be a plain file name in the same directory:
// an index must not reach outside the model ("../../etc/passwd", "/abs").
IZWI_DECL bool is_plain_file_name(std::string_view name) noexcept {
  if (name.empty() || name == "." || name == "..") return false;
  for (const char c : name)
    if (c == '/' || c == '\\' || c == '\0') return false;
  return true;
}

IZWI_DECL bool regular_file_exists(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec);
}

/// What model.safetensors.index.json's weight_map says: its shards, sorted by
/// file name (model-00001-of-00003 first), each with the tensors placed in it.
struct ShardPlan {
  std::vector<std::string> shards;
  std::vector<std::vector<std::string>> tensors;  ///< per shard, in shards' order
};

IZWI_DECL ShardPlan read_shard_index(const std::filesystem::path& index_path) {
  const JsonValue index_doc = read_json_file(index_path);
  const ConfigView index(index_doc, index_path.string());
  const ConfigView weight_map = index.object("weight_map");
  std::map<std::string, std::size_t, std::less<>> shard_position;
  ShardPlan in_index_order;
  for (const auto& member : json_find(index_doc, "weight_map")->get_object()) {
    const std::string tensor(member.key());
    const JsonValue& shard_value = member.value();
    if (!shard_value.is_string())
      throw weight_map.make_error(tensor, "is " + json_kind_phrase(shard_value) + ", not a shard file name");
    const std::string shard(*json_string(shard_value));
    if (!is_plain_file_name(shard))
      throw weight_map.make_error(tensor, "shard '" + shard + "' is not a plain file name inside the model directory");
    auto [it, inserted] = shard_position.emplace(shard, in_index_order.shards.size());
    if (inserted) {
      in_index_order.shards.push_back(shard);
      in_index_order.tensors.emplace_back();
    }
    in_index_order.tensors[it->second].push_back(tensor);
  }
  if (in_index_order.shards.empty()) throw index.make_error("weight_map", "names no tensors");
  ShardPlan sorted;
  for (auto& [shard, position] : shard_position) {  // std::map: sorted by name
    sorted.shards.push_back(shard);
    sorted.tensors.push_back(std::move(in_index_order.tensors[position]));
  }
  return sorted;
}

}  // namespace detail

IZWI_DECL ModelDirectory ModelDirectory::open(const std::filesystem::path& directory, FileMemory memory) {
  std::error_code ec;
  if (!std::filesystem::is_directory(directory, ec))
    throw izwi::error(directory.string() + ": not a model directory (not a directory)");
  ModelDirectory dir;
  dir.path_ = directory;

  const std::filesystem::path config_path = directory / "config.json";
  if (!detail::regular_file_exists(config_path))
    throw izwi::error(directory.string() + ": not a model directory: config.json is missing");
  dir.config_json_ = read_json_file(config_path);
  if (!dir.config_json_.is_object()) throw config_error(config_path.string(), "<root>", "config.json must hold a JSON object");

  const std::filesystem::path generation_path = directory / "generation_config.json";
  if (detail::regular_file_exists(generation_path)) {
    const JsonValue doc = read_json_file(generation_path);
    dir.generation_config_ = GenerationConfig::from(ConfigView(doc, generation_path.string()));
  }
  const std::filesystem::path tokenizer_config_path = directory / "tokenizer_config.json";
  if (detail::regular_file_exists(tokenizer_config_path)) dir.tokenizer_config_json_ = read_json_file(tokenizer_config_path);

  // Weights: one file, or shards through the index. Both present: the index
  // wins (that is what transformers loads), but a lone file is the common case.
  const std::filesystem::path index_path = directory / std::string(safetensors_index_name);
  const std::filesystem::path single_path = directory / "model.safetensors";
  // Per shard, the tensor names the index maps to it.
  std::vector<std::vector<std::string>> wanted;
  if (detail::regular_file_exists(index_path)) {
    detail::ShardPlan plan = detail::read_shard_index(index_path);
    for (const std::string& shard : plan.shards) {
      const std::filesystem::path shard_path = directory / shard;
      if (!detail::regular_file_exists(shard_path))
        throw format_error(index_path.string(), "", "shard '" + shard + "' named by weight_map is missing from the directory");
      dir.files_.push_back(SafetensorsFile::open(shard_path, memory));
    }
    wanted = std::move(plan.tensors);
  } else if (detail::regular_file_exists(single_path)) {
    dir.files_.push_back(SafetensorsFile::open(single_path, memory));
  } else {
    throw izwi::error(directory.string() + ": no weights: neither model.safetensors nor " +
                      std::string(safetensors_index_name) + " is present");
  }

  for (std::size_t f = 0; f < dir.files_.size(); ++f) {
    const SafetensorsFile& file = dir.files_[f];
    if (wanted.empty()) {
      for (const TensorInfo& t : file.tensors()) dir.index_.emplace(t.name, std::pair{f, &t});
      continue;
    }
    for (const std::string& name : wanted[f]) {
      const TensorInfo* t = file.find(name);
      if (t == nullptr)
        throw format_error(file.name(), name, "missing tensor (the index's weight_map places it in this shard)");
      dir.index_.emplace(name, std::pair{f, t});
    }
  }
  return dir;
}

IZWI_DECL std::optional<std::filesystem::path> ModelDirectory::tokenizer_json_path() const {
  std::filesystem::path p = path_ / "tokenizer.json";
  if (detail::regular_file_exists(p)) return p;
  return std::nullopt;
}

IZWI_DECL std::vector<std::string> ModelDirectory::tensor_names() const {
  std::vector<std::string> names;
  names.reserve(index_.size());
  for (const auto& entry : index_) names.push_back(entry.first);
  return names;  // std::map keeps them sorted
}

IZWI_DECL std::optional<TensorLocation> ModelDirectory::find(std::string_view name) const noexcept {
  const auto it = index_.find(name);
  if (it == index_.end()) return std::nullopt;
  return TensorLocation{&files_[it->second.first], it->second.second};
}

IZWI_DECL TensorLocation ModelDirectory::at(std::string_view name) const {
  if (auto location = find(name)) return *location;
  throw format_error(path_.string(), std::string(name), "missing tensor (no weight file of the model holds it)");
}

IZWI_DECL const TensorInfo& ModelDirectory::expect_shape(std::string_view name, std::span<const std::uint64_t> shape) const {
  const TensorLocation location = at(name);
  if (!std::equal(location.info->shape.begin(), location.info->shape.end(), shape.begin(), shape.end()))
    throw format_error(location.file->name(), location.info->name,
                       "shape " + detail::shape_text(location.info->shape) + ", expected " + detail::shape_text(shape));
  return *location.info;
}

IZWI_DECL std::span<const std::byte> ModelDirectory::bytes(std::string_view name) const {
  const TensorLocation location = at(name);
  return location.file->bytes(*location.info);
}

IZWI_DECL std::vector<float> ModelDirectory::to_f32(std::string_view name) const {
  const TensorLocation location = at(name);
  return location.file->to_f32(name);
}

IZWI_DECL std::vector<float> ModelDirectory::to_f32(std::string_view name, std::span<const std::uint64_t> shape) const {
  expect_shape(name, shape);
  return to_f32(name);
}

}  // namespace izwi::io
