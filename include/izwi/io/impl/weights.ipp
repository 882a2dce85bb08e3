#pragma once
// Bodies of include/izwi/io/weights.hpp.
// Inline in header-only builds; compiled once, in <izwi/io/src.hpp>, under
// IZWI_SEPARATE_COMPILATION (see izwi/config.hpp).

#include <system_error>
#include <utility>

namespace izwi::io {

IZWI_DECL std::uint64_t WeightView::element_count() const noexcept {
  std::uint64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

IZWI_DECL ModelWeights ModelWeights::open(const std::filesystem::path& path, FileMemory memory) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return ModelWeights(ModelDirectory::open(path, memory));
  if (std::filesystem::is_regular_file(path, ec)) return ModelWeights(GgufFile::open(path, memory));
  throw izwi::error(path.string() + ": neither a model directory nor a GGUF file");
}

IZWI_DECL ModelWeights::ModelWeights(ModelDirectory directory) : source_(std::move(directory)) {}

IZWI_DECL ModelWeights::ModelWeights(GgufFile file) : source_(std::move(file)) {
  const GgufFile& f = std::get<GgufFile>(source_);
  if (f.find_metadata("general.architecture") != nullptr) gguf_architecture_ = f.get<std::string>("general.architecture");
}

IZWI_DECL std::string ModelWeights::name() const {
  if (const ModelDirectory* d = directory()) return d->path().string();
  return gguf()->name();
}

IZWI_DECL TransformerConfig ModelWeights::transformer_config() const {
  if (const ModelDirectory* d = directory()) return d->transformer_config();
  return qwen3_config_from_gguf(*gguf());  // names the architecture when it is not qwen3
}

IZWI_DECL std::string ModelWeights::stored_name(std::string_view hf_name) const {
  if (directory() != nullptr) return std::string(hf_name);
  if (gguf_architecture_ == "qwen3")
    if (auto mapped = qwen3_gguf_tensor_name(hf_name)) return *mapped;
  return std::string(hf_name);
}

IZWI_DECL bool ModelWeights::contains(std::string_view hf_name) const noexcept {
  if (const ModelDirectory* d = directory()) return d->find(hf_name).has_value();
  try {
    return gguf()->find_tensor(stored_name(hf_name)) != nullptr;
  } catch (...) {  // stored_name allocates; out of memory means "cannot tell", i.e. not usable
    return false;
  }
}

IZWI_DECL WeightView ModelWeights::get(std::string_view hf_name) const {
  WeightView view;
  view.name = std::string(hf_name);
  if (const ModelDirectory* d = directory()) {
    const TensorLocation at = d->at(hf_name);
    view.dtype = at.info->dtype;
    view.shape = at.info->shape;
    view.bytes = at.file->bytes(*at.info);
    return view;
  }
  const GgufFile& f = *gguf();
  const std::string stored = stored_name(hf_name);
  const GgufTensorInfo* info = f.find_tensor(stored);
  if (info == nullptr) {
    std::string problem = "missing tensor";
    if (stored != hf_name) problem += " (looked up in the GGUF file as '" + stored + "')";
    throw format_error(f.name(), std::string(hf_name), problem);
  }
  view.dtype = info->dtype();
  view.shape = info->shape();
  view.bytes = f.bytes(*info);
  return view;
}

IZWI_DECL WeightView ModelWeights::get(std::string_view hf_name, std::span<const std::uint64_t> shape) const {
  if (const ModelDirectory* d = directory()) {
    d->expect_shape(hf_name, shape);
  } else {
    const std::string stored = stored_name(hf_name);
    if (gguf()->find_tensor(stored) != nullptr) gguf()->expect_shape(stored, shape);
  }
  return get(hf_name);
}

IZWI_DECL std::vector<float> ModelWeights::to_f32(std::string_view hf_name, std::span<const std::uint64_t> shape) const {
  get(hf_name, shape);  // existence and shape, with the errors of get()
  if (const ModelDirectory* d = directory()) return d->to_f32(hf_name);
  return gguf()->to_f32(stored_name(hf_name));
}

}  // namespace izwi::io
