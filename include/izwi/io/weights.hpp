#pragma once
// ModelWeights: a model's weights by their Hugging Face names, whichever
// format holds them -- a Hugging Face directory (config.json + safetensors,
// single or sharded) or a GGUF file. Model families load through this one
// interface, so a checkpoint from the hub and a GGUF of the same model read
// the same way:
//
//   auto weights = izwi::io::ModelWeights::open(path);   // a directory or a .gguf file
//   auto config = weights.transformer_config();
//   auto q = weights.get("model.layers.0.self_attn.q_proj.weight",
//                        {config.num_attention_heads * config.head_dim, config.hidden_size});
//   // q.dtype (f32/f16/bf16/q8_0), q.shape (row-major), q.bytes (in the mapping)
//
// For GGUF, Hugging Face names are translated with the architecture's table
// (qwen3 today, gguf_qwen3.hpp); shapes are compared in row-major order for
// both formats (GGUF's ne reversed, see gguf.hpp), and no bytes are copied.

#include <izwi/config.hpp>
#include <izwi/core/dtype.hpp>
#include <izwi/io/config.hpp>
#include <izwi/io/gguf.hpp>
#include <izwi/io/gguf_qwen3.hpp>
#include <izwi/io/model_directory.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace izwi::io {

/// One tensor, in place: its element type, row-major shape and raw
/// little-endian bytes (Q8_0: 34-byte blocks of 32 values along the last
/// dimension). `bytes` lives as long as the ModelWeights it came from.
struct WeightView {
  std::string name;  ///< the Hugging Face name asked for
  DType dtype = DType::f32;
  std::vector<std::uint64_t> shape;
  std::span<const std::byte> bytes;

  std::uint64_t element_count() const noexcept;
};

class ModelWeights {
 public:
  enum class Format { safetensors, gguf };

  /// A directory opens as a Hugging Face model (ModelDirectory), a regular
  /// file as GGUF, mapped or read as `memory` says. izwi::error if `path` is
  /// neither; the readers' errors otherwise.
  static ModelWeights open(const std::filesystem::path& path, FileMemory memory = FileMemory::map);
  explicit ModelWeights(ModelDirectory directory);
  explicit ModelWeights(GgufFile file);

  Format format() const noexcept { return source_.index() == 0 ? Format::safetensors : Format::gguf; }
  /// The directory or file, as opened.
  std::string name() const;
  /// The hyperparameters: config.json, or the GGUF metadata (qwen3).
  TransformerConfig transformer_config() const;

  /// The GGUF name a Hugging Face name is looked up as (itself for safetensors,
  /// and for GGUF architectures without a name table).
  std::string stored_name(std::string_view hf_name) const;
  bool contains(std::string_view hf_name) const noexcept;
  /// The tensor; format_error "missing tensor" naming the file and both names.
  WeightView get(std::string_view hf_name) const;
  /// As get(), after checking the row-major shape (format_error with both shapes).
  WeightView get(std::string_view hf_name, std::span<const std::uint64_t> shape) const;
  WeightView get(std::string_view hf_name, std::initializer_list<std::uint64_t> shape) const {
    return get(hf_name, std::span<const std::uint64_t>(shape.begin(), shape.size()));
  }
  /// The values as float32 (F16/BF16 widened, Q8_0 dequantized), shape checked.
  std::vector<float> to_f32(std::string_view hf_name, std::span<const std::uint64_t> shape) const;
  std::vector<float> to_f32(std::string_view hf_name, std::initializer_list<std::uint64_t> shape) const {
    return to_f32(hf_name, std::span<const std::uint64_t>(shape.begin(), shape.size()));
  }

  /// The underlying reader (nullptr for the other format).
  const ModelDirectory* directory() const noexcept { return std::get_if<ModelDirectory>(&source_); }
  const GgufFile* gguf() const noexcept { return std::get_if<GgufFile>(&source_); }

 private:
  std::variant<ModelDirectory, GgufFile> source_;
  std::string gguf_architecture_;  ///< general.architecture, when GGUF
};

}  // namespace izwi::io

#if !defined(IZWI_SEPARATE_COMPILATION)
#include <izwi/io/impl/weights.ipp>
#endif
