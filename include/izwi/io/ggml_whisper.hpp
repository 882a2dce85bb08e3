#pragma once
// whisper.cpp's model file ("ggml-*.bin"): what most whisper.cpp users have on
// disk. The layout (little-endian throughout, nothing aligned):
//
//   u32 magic 0x67676d6c ("ggml")
//   i32 × 11   n_vocab, n_audio_ctx, n_audio_state, n_audio_head, n_audio_layer,
//              n_text_ctx, n_text_state, n_text_head, n_text_layer, n_mels, ftype
//   mel filters: i32 n_mel, i32 n_fft_bins (201), f32[n_mel × n_fft_bins]
//   vocabulary:  i32 count, then count × (u32 length, bytes)   -- the BPE
//                tokens; ids ≥ count (special tokens) have no entry
//   tensors until end of file, each:
//     i32 n_dims, i32 name_length, i32 ggml type, i32 ne[n_dims], name, data
//
// ne is ggml's order (fastest dimension first), the reverse of the row-major
// (torch) shape, which is what GgmlWhisperTensor::shape holds. Tensor names
// are OpenAI's (encoder.blocks.0.attn.query.weight, ...). Element types izwi
// reads: F32 (0), F16 (1), Q8_0 (8); any other type is refused, naming it and
// the tensor. The whole file is validated when it opens: every count and
// length fits in the file, no name repeats, each tensor's bytes match its
// shape; a file with only header, filters and vocabulary (whisper.cpp's
// for-tests-ggml-*.bin) is valid and has no tensors.

#include <izwi/config.hpp>
#include <izwi/core/dtype.hpp>
#include <izwi/io/format_error.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace izwi::io {

inline constexpr std::uint32_t ggml_whisper_magic = 0x67676d6c;

/// The eleven hyperparameters of the header, as stored.
struct GgmlWhisperHparams {
  std::int32_t n_vocab = 0;
  std::int32_t n_audio_ctx = 0;
  std::int32_t n_audio_state = 0;
  std::int32_t n_audio_head = 0;
  std::int32_t n_audio_layer = 0;
  std::int32_t n_text_ctx = 0;
  std::int32_t n_text_state = 0;
  std::int32_t n_text_head = 0;
  std::int32_t n_text_layer = 0;
  std::int32_t n_mels = 0;
  /// Weight type of the file (0 f32, 1 f16, 7 q8_0, ...), plus 1000 × the
  /// quantization version in quantized files.
  std::int32_t ftype = 0;
};

/// One tensor, in place (not aligned: copy before computing with it).
struct GgmlWhisperTensor {
  std::string name;
  DType dtype = DType::f32;
  std::vector<std::uint64_t> shape;  ///< row-major (ne reversed)
  std::span<const std::byte> bytes;

  std::uint64_t element_count() const noexcept;
};

/// ggml's name for a ggml type number ("q4_K", "bf16", ... "type 99" when unknown).
std::string ggml_type_name(std::int32_t type);

namespace detail {
class SafetensorsStorage;
}

class GgmlWhisperFile {
 public:
  /// Maps and validates `path`; format_error naming the file (and tensor) otherwise.
  static GgmlWhisperFile open(const std::filesystem::path& path);
  /// Validates bytes held in memory; `display_name` stands for them in errors.
  static GgmlWhisperFile from_bytes(std::vector<std::byte> bytes, std::string display_name = "<memory>");

  GgmlWhisperFile(GgmlWhisperFile&&) noexcept;
  GgmlWhisperFile& operator=(GgmlWhisperFile&&) noexcept;
  ~GgmlWhisperFile();

  const std::string& name() const noexcept { return name_; }
  const GgmlWhisperHparams& hparams() const noexcept { return hparams_; }
  /// Mel filterbank rows (n_mel × n_fft_bins, row-major).
  std::size_t mel_bins() const noexcept { return mel_bins_; }
  std::size_t mel_fft_bins() const noexcept { return mel_fft_bins_; }
  std::span<const float> mel_filters() const noexcept { return mel_filters_; }
  /// The bytes each stored token id stands for (index = id).
  std::span<const std::string> vocabulary() const noexcept { return vocabulary_; }

  std::span<const GgmlWhisperTensor> tensors() const noexcept { return tensors_; }
  const GgmlWhisperTensor* find(std::string_view tensor_name) const noexcept;
  /// format_error "missing tensor" when absent.
  const GgmlWhisperTensor& at(std::string_view tensor_name) const;

 private:
  GgmlWhisperFile() = default;
  void parse();

  std::unique_ptr<detail::SafetensorsStorage> storage_;
  std::string name_;
  GgmlWhisperHparams hparams_;
  std::size_t mel_bins_ = 0, mel_fft_bins_ = 0;
  std::vector<float> mel_filters_;
  std::vector<std::string> vocabulary_;
  std::vector<GgmlWhisperTensor> tensors_;
  std::map<std::string, std::size_t, std::less<>> index_;
};

/// A tensor to write; `data` holds the shape's elements in `dtype` (f32, f16
/// or q8_0), little-endian, row-major.
struct GgmlTensorToWrite {
  std::string name;
  DType dtype = DType::f32;
  std::vector<std::uint64_t> shape;  ///< row-major
  std::span<const std::byte> data;
};

/// Writes a ggml-whisper file (tools and tests). izwi::error when a tensor's
/// byte count does not match its shape or the file cannot be written.
void write_ggml_whisper(const std::filesystem::path& path, const GgmlWhisperHparams& hparams,
                        std::span<const float> mel_filters, std::size_t mel_bins, std::size_t mel_fft_bins,
                        std::span<const std::string> vocabulary, std::span<const GgmlTensorToWrite> tensors);

}  // namespace izwi::io

#if !defined(IZWI_SEPARATE_COMPILATION)
#include <izwi/io/impl/ggml_whisper.ipp>
#endif
