#pragma once
// safetensors: the weight format of checkpoints on the Hugging Face hub.
//
// Layout of a file: 8 bytes little-endian N, then N bytes of JSON header, then
// the data section. The header maps tensor names to
// {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the
// data section) and may hold "__metadata__", a string-to-string map.
//
// SafetensorsFile maps the file read-only (or reads it into memory:
// io::FileMemory) and validates the whole header when it opens: every tensor
// lies inside the file, byte ranges neither overlap nor leave holes, each
// range is exactly shape x element size, no name repeats, and the dtype is
// one izwi computes with (F32, F16, BF16). Anything else is a format_error
// naming the file, the tensor and the problem; after open() succeeds, no
// accessor can read outside the file's bytes.
//
//   auto file = izwi::io::SafetensorsFile::open("model.safetensors");
//   std::vector<float> w = file.to_f32("lm_head.weight", {vocab, hidden});
//
// Sharded checkpoints (model.safetensors.index.json) build on this class.

#include <izwi/config.hpp>
#include <izwi/core/dtype.hpp>
#include <izwi/io/file_memory.hpp>
#include <izwi/io/format_error.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace izwi::io {

/// One tensor as the header describes it.
struct TensorInfo {
  std::string name;
  DType dtype = DType::f32;
  std::vector<std::uint64_t> shape;  ///< empty for a scalar
  std::uint64_t data_begin = 0;      ///< byte offset into the data section
  std::uint64_t data_end = 0;        ///< one past the last byte

  /// Product of the shape (1 for a scalar, 0 if any dimension is 0).
  std::uint64_t element_count() const noexcept;
  std::uint64_t byte_size() const noexcept { return data_end - data_begin; }
};

namespace detail {
class SafetensorsStorage;
}

/// A validated, read-only safetensors file. Move-only; the mapping lives as
/// long as the object, and spans returned by bytes() are valid that long.
class SafetensorsFile {
 public:
  /// Maps (or reads, FileMemory::read) `path` and validates it. Throws
  /// format_error (or izwi::error when the file cannot be opened or read)
  /// with the path in the message.
  static SafetensorsFile open(const std::filesystem::path& path, FileMemory memory = FileMemory::map);

  /// Validates a file held in memory (tests, fuzzing, uploads); `display_name`
  /// stands for the file in error messages.
  static SafetensorsFile from_bytes(std::vector<std::byte> bytes, std::string display_name = "<memory>");

  SafetensorsFile(SafetensorsFile&&) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;
  ~SafetensorsFile();

  /// The file as named to open() (or the display name).
  const std::string& name() const noexcept { return name_; }

  /// All tensors, in the order of their bytes in the data section.
  std::span<const TensorInfo> tensors() const noexcept { return tensors_; }

  /// The tensor called `name`, or nullptr.
  const TensorInfo* find(std::string_view name) const noexcept;

  /// The tensor called `name`; throws format_error "missing tensor" if absent.
  const TensorInfo& at(std::string_view name) const;

  /// The raw little-endian bytes of a tensor (not necessarily aligned for the
  /// element type: copy, or use to_f32()).
  std::span<const std::byte> bytes(std::string_view name) const;
  std::span<const std::byte> bytes(const TensorInfo& tensor) const;

  /// The tensor converted to float32 (F16 and BF16 widened exactly).
  std::vector<float> to_f32(std::string_view name) const;

  /// As above, but first checks the shape; a mismatch is a format_error that
  /// shows both shapes.
  std::vector<float> to_f32(std::string_view name, std::span<const std::uint64_t> expected_shape) const;
  std::vector<float> to_f32(std::string_view name, std::initializer_list<std::uint64_t> expected_shape) const {
    return to_f32(name, std::span<const std::uint64_t>(expected_shape.begin(), expected_shape.size()));
  }

  /// The tensor's header entry after checking its shape; a mismatch is a
  /// format_error that shows both shapes.
  const TensorInfo& expect_shape(std::string_view name, std::span<const std::uint64_t> expected_shape) const;
  const TensorInfo& expect_shape(std::string_view name, std::initializer_list<std::uint64_t> expected_shape) const {
    return expect_shape(name, std::span<const std::uint64_t>(expected_shape.begin(), expected_shape.size()));
  }

  /// The "__metadata__" map (empty if the header has none).
  const std::map<std::string, std::string, std::less<>>& metadata() const noexcept { return metadata_; }

 private:
  SafetensorsFile(std::unique_ptr<detail::SafetensorsStorage> storage, std::string name);

  std::unique_ptr<detail::SafetensorsStorage> storage_;
  std::string name_;
  std::span<const std::byte> data_;  ///< the data section inside storage_
  std::vector<TensorInfo> tensors_;
  std::map<std::string, std::size_t, std::less<>> index_;  ///< name -> position in tensors_
  std::map<std::string, std::string, std::less<>> metadata_;
};

/// A tensor to write: `data` must hold exactly shape x element-size bytes,
/// little-endian.
struct TensorToWrite {
  std::string name;
  DType dtype = DType::f32;
  std::vector<std::uint64_t> shape;
  std::span<const std::byte> data;
};

/// Writes a safetensors file (header padded with spaces to an 8-byte multiple,
/// tensors in the given order). Used by tests and tools that build small
/// checkpoints. Throws izwi::error if a tensor's size does not match its shape,
/// a name repeats, or the file cannot be written.
void write_safetensors(const std::filesystem::path& path, std::span<const TensorToWrite> tensors,
                       const std::map<std::string, std::string, std::less<>>& metadata = {});

/// The same bytes as write_safetensors() would write, in memory.
std::vector<std::byte> serialize_safetensors(std::span<const TensorToWrite> tensors,
                                             const std::map<std::string, std::string, std::less<>>& metadata = {});

/// Largest header accepted (the format's own limit, 100 MB): a larger length
/// field is treated as corrupt rather than allocated.
inline constexpr std::uint64_t safetensors_max_header_bytes = 100'000'000;

}  // namespace izwi::io

#if !defined(IZWI_SEPARATE_COMPILATION)
#include <izwi/io/impl/safetensors.ipp>
#endif
