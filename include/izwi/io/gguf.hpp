#pragma once
// GGUF: llama.cpp's single-file model format (version 3; version 2 has the
// same layout and is read too). Little-endian throughout:
//
//   "GGUF"  u32 version  u64 tensor_count  u64 metadata_count
//   metadata_count x { string key, u32 value_type, value }
//   tensor_count   x { string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type, u64 offset }
//   zero padding to `alignment` (general.alignment, a u32 power of two, default 32)
//   data section: each tensor at data_start + offset, offset a multiple of the alignment
//
// A string is u64 length + bytes (no terminator). An array value is
// u32 element_type, u64 count, then the elements.
//
// Dimension order. GGUF stores ne[0] first, and ne[0] is the fastest-varying
// (contiguous) dimension: a PyTorch weight of shape [out, in] (row-major, `in`
// contiguous) is stored with ne = [in, out]. GgufTensorInfo::dims keeps the
// file's order; GgufTensorInfo::shape() and every `shape` argument of this API
// are row-major (PyTorch/safetensors order), i.e. dims reversed, so model code
// checks the same shape whichever format the weights came from. The bytes are
// identical for both orders: no transposition happens.
//
// GgufFile maps the file read-only and validates everything when it opens:
// magic and version, every count against the bytes that remain (a metadata
// array claiming 2^60 elements is refused before anything is allocated),
// UTF-8 keys and tensor names, duplicate keys and names, the alignment, each
// tensor's rank (at most 4), element count, type (F32, F16, BF16, Q8_0; any
// other ggml type is refused by name), row length (Q8_0 rows are whole 32-value
// blocks), aligned offsets, data inside the file and no two tensors' bytes
// overlapping. Errors are format_error naming the file, the tensor or key, and
// the problem; after open() succeeds no accessor reads outside the mapping.
//
// GgufWriter writes what llama.cpp's gguf reader expects: tensors in the order
// added, each at an aligned offset, each (the last included) zero-padded to the
// alignment, general.alignment written only when it is not the default.

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
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace izwi::io {

/// Metadata value types, with GGUF's numeric ids.
enum class GgufValueType : std::uint32_t {
  uint8 = 0, int8 = 1, uint16 = 2, int16 = 3, uint32 = 4, int32 = 5, float32 = 6,
  boolean = 7, string = 8, array = 9, uint64 = 10, int64 = 11, float64 = 12,
};

/// "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64".
std::string_view to_string(GgufValueType type) noexcept;

/// The ggml tensor types izwi reads and writes, with ggml's numeric ids.
enum class GgmlType : std::uint32_t { f32 = 0, f16 = 1, q8_0 = 8, bf16 = 30 };

/// "F32", "F16", "Q8_0", "BF16".
std::string_view to_string(GgmlType type) noexcept;
DType to_dtype(GgmlType type) noexcept;
GgmlType to_ggml_type(DType type) noexcept;

/// Bytes a tensor of this type with `element_count` values occupies (Q8_0:
/// element_count must be a multiple of 32). nullopt on overflow.
std::optional<std::uint64_t> ggml_byte_size(GgmlType type, std::uint64_t element_count) noexcept;

/// One metadata value: a scalar or an array of scalars or strings (GGUF
/// allows no arrays of arrays in practice; llama.cpp refuses them, so does izwi).
///
/// Reading: the `as_*` accessors throw izwi::error when the value is of
/// another type (GgufFile::get<T>() wraps that into a format_error naming the
/// file and the key). Integers of any width read through as_int64/as_uint64
/// when the value fits; float32 values widen exactly to double.
class GgufValue {
 public:
  // Scalars.
  static GgufValue u8(std::uint8_t v) { return GgufValue(GgufValueType::uint8, std::uint64_t{v}); }
  static GgufValue i8(std::int8_t v) { return GgufValue(GgufValueType::int8, std::int64_t{v}); }
  static GgufValue u16(std::uint16_t v) { return GgufValue(GgufValueType::uint16, std::uint64_t{v}); }
  static GgufValue i16(std::int16_t v) { return GgufValue(GgufValueType::int16, std::int64_t{v}); }
  static GgufValue u32(std::uint32_t v) { return GgufValue(GgufValueType::uint32, std::uint64_t{v}); }
  static GgufValue i32(std::int32_t v) { return GgufValue(GgufValueType::int32, std::int64_t{v}); }
  static GgufValue u64(std::uint64_t v) { return GgufValue(GgufValueType::uint64, v); }
  static GgufValue i64(std::int64_t v) { return GgufValue(GgufValueType::int64, v); }
  static GgufValue f32(float v) { return GgufValue(GgufValueType::float32, static_cast<double>(v)); }
  static GgufValue f64(double v) { return GgufValue(GgufValueType::float64, v); }
  static GgufValue boolean(bool v) { return GgufValue(GgufValueType::boolean, v); }
  static GgufValue string(std::string v) { return GgufValue(GgufValueType::string, std::move(v)); }
  // Arrays. Integer elements are range-checked against `element` (izwi::error).
  static GgufValue strings(std::vector<std::string> v);
  static GgufValue integers(GgufValueType element, std::vector<std::int64_t> v);
  static GgufValue unsigned_integers(GgufValueType element, std::vector<std::uint64_t> v);
  static GgufValue floats(GgufValueType element, std::vector<double> v);
  static GgufValue booleans(std::vector<bool> v);

  /// GgufValueType::array for arrays.
  GgufValueType type() const noexcept { return type_; }
  /// The element type of an array; type() for a scalar.
  GgufValueType element_type() const noexcept { return element_; }
  bool is_array() const noexcept { return type_ == GgufValueType::array; }
  /// Elements of an array (1 for a scalar).
  std::size_t size() const noexcept;

  std::int64_t as_int64() const;
  std::uint64_t as_uint64() const;
  double as_double() const;  ///< float32 or float64 only
  bool as_bool() const;
  const std::string& as_string() const;
  const std::vector<std::string>& as_strings() const;
  std::vector<std::int64_t> as_int64s() const;  ///< any integer element type
  const std::vector<std::uint64_t>& as_uint64s() const;  ///< unsigned element types only
  std::vector<double> as_doubles() const;       ///< float32 or float64 elements
  const std::vector<bool>& as_bools() const;

  /// A short description for messages: "a u32", "an array of 151936 string".
  std::string describe() const;

 private:
  using Storage = std::variant<std::uint64_t, std::int64_t, double, bool, std::string, std::vector<std::uint64_t>,
                               std::vector<std::int64_t>, std::vector<double>, std::vector<bool>, std::vector<std::string>>;
  GgufValue(GgufValueType type, Storage storage) : type_(type), element_(type), storage_(std::move(storage)) {}
  GgufValue(GgufValueType element, Storage storage, bool /*array*/)
      : type_(GgufValueType::array), element_(element), storage_(std::move(storage)) {}

  GgufValueType type_;
  GgufValueType element_;
  Storage storage_;
};

/// One metadata entry, in file order.
struct GgufMetadataEntry {
  std::string key;
  GgufValue value;
};

/// One tensor as the file describes it.
struct GgufTensorInfo {
  std::string name;
  GgmlType type = GgmlType::f32;
  /// ne[0..n_dims), as stored: dims[0] is the fastest-varying dimension.
  std::vector<std::uint64_t> dims;
  std::uint64_t offset = 0;     ///< from the start of the data section
  std::uint64_t byte_size = 0;  ///< exact size of the tensor's bytes (padding excluded)

  /// Row-major shape (PyTorch/safetensors order): dims reversed.
  std::vector<std::uint64_t> shape() const;
  /// Product of dims (1 for a rank-0 tensor).
  std::uint64_t element_count() const noexcept;
  DType dtype() const noexcept { return to_dtype(type); }
};

namespace detail {
class SafetensorsStorage;  // the mapped bytes (the same mapping class serves both formats)
}  // namespace detail

/// A validated, read-only GGUF file. Move-only; spans from bytes() live as
/// long as the object.
class GgufFile {
 public:
  /// Maps (or reads, FileMemory::read) and validates `path` (format_error;
  /// izwi::error if it cannot be opened or read).
  static GgufFile open(const std::filesystem::path& path, FileMemory memory = FileMemory::map);
  /// Validates a file held in memory (tests, fuzzing); `display_name` stands
  /// for the file in errors.
  static GgufFile from_bytes(std::vector<std::byte> bytes, std::string display_name = "<memory>");

  GgufFile(GgufFile&&) noexcept;
  GgufFile& operator=(GgufFile&&) noexcept;
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;
  ~GgufFile();

  const std::string& name() const noexcept { return name_; }
  std::uint32_t version() const noexcept { return version_; }
  std::uint64_t alignment() const noexcept { return alignment_; }
  /// Absolute file offset of the data section.
  std::uint64_t data_offset() const noexcept { return data_offset_; }

  // --- metadata ---
  std::span<const GgufMetadataEntry> metadata() const noexcept { return metadata_; }
  const GgufValue* find_metadata(std::string_view key) const noexcept;
  /// The value of `key`; format_error "metadata 'key': missing" if absent.
  const GgufValue& metadata(std::string_view key) const;
  /// The value of `key` as T: bool, an integer type (range-checked), float,
  /// double, std::string, std::vector<std::string>, std::vector<std::int64_t>,
  /// std::vector<double>. format_error naming the key if absent or mistyped.
  template <class T>
  T get(std::string_view key) const;
  /// As get<T>(key), but `fallback` when the key is absent.
  template <class T>
  T get(std::string_view key, T fallback) const;
  /// general.architecture ("qwen3").
  std::string architecture() const { return get<std::string>("general.architecture"); }

  // --- tensors ---
  /// All tensors, in the order of the file's tensor infos.
  std::span<const GgufTensorInfo> tensors() const noexcept { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const noexcept;
  /// format_error "missing tensor" if absent.
  const GgufTensorInfo& tensor(std::string_view name) const;
  /// The tensor, after checking its row-major shape (format_error showing both shapes).
  const GgufTensorInfo& expect_shape(std::string_view name, std::span<const std::uint64_t> row_major_shape) const;
  const GgufTensorInfo& expect_shape(std::string_view name, std::initializer_list<std::uint64_t> row_major_shape) const {
    return expect_shape(name, std::span<const std::uint64_t>(row_major_shape.begin(), row_major_shape.size()));
  }
  /// The raw little-endian bytes (Q8_0: the 34-byte blocks).
  std::span<const std::byte> bytes(std::string_view name) const;
  std::span<const std::byte> bytes(const GgufTensorInfo& tensor) const;
  /// The values as float32: F16/BF16 widened exactly, Q8_0 dequantized.
  std::vector<float> to_f32(std::string_view name) const;
  std::vector<float> to_f32(std::string_view name, std::span<const std::uint64_t> row_major_shape) const;
  std::vector<float> to_f32(std::string_view name, std::initializer_list<std::uint64_t> row_major_shape) const {
    return to_f32(name, std::span<const std::uint64_t>(row_major_shape.begin(), row_major_shape.size()));
  }

 private:
  GgufFile(std::unique_ptr<detail::SafetensorsStorage> storage, std::string name);

  std::unique_ptr<detail::SafetensorsStorage> storage_;
  std::string name_;
  std::uint32_t version_ = 0;
  std::uint64_t alignment_ = 32;
  std::uint64_t data_offset_ = 0;
  std::span<const std::byte> data_;
  std::vector<GgufMetadataEntry> metadata_;
  std::map<std::string, std::size_t, std::less<>> metadata_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, std::size_t, std::less<>> tensor_index_;
};

/// Builds a GGUF file in memory and writes it. Tests use it to hand
/// llama.cpp the same weights izwi reads.
///
///   GgufWriter w;
///   w.set("general.architecture", GgufValue::string("qwen3"));
///   w.add_tensor("token_embd.weight", GgmlType::q8_0, {vocab, hidden}, values);
///   w.write("model.gguf");
class GgufWriter {
 public:
  /// `alignment`: a power of two (izwi::error otherwise).
  explicit GgufWriter(std::uint32_t alignment = 32);

  /// Sets (or replaces, keeping its position) a metadata entry. The key must be
  /// non-empty UTF-8; "general.alignment" is the constructor's to set.
  void set(std::string key, GgufValue value);

  /// Adds a tensor from float32 values in row-major order; `row_major_shape`
  /// is PyTorch's order (stored reversed as ne). Converted to `type`: F16/BF16
  /// rounded to nearest even, Q8_0 quantized per 32-value block (the row
  /// length, the last dimension, must be a multiple of 32).
  void add_tensor(std::string name, GgmlType type, std::span<const std::uint64_t> row_major_shape,
                  std::span<const float> values);
  void add_tensor(std::string name, GgmlType type, std::initializer_list<std::uint64_t> row_major_shape,
                  std::span<const float> values) {
    add_tensor(std::move(name), type, std::span<const std::uint64_t>(row_major_shape.begin(), row_major_shape.size()),
               values);
  }
  /// Adds a tensor whose bytes are already encoded as `type`.
  void add_tensor_bytes(std::string name, GgmlType type, std::span<const std::uint64_t> row_major_shape,
                        std::vector<std::byte> data);

  std::size_t tensor_count() const noexcept { return tensors_.size(); }

  /// The whole file in memory.
  std::vector<std::byte> serialize() const;
  /// Writes the file, streaming tensor data (no second copy of the weights).
  void write(const std::filesystem::path& path) const;

 private:
  struct PendingTensor {
    std::string name;
    GgmlType type;
    std::vector<std::uint64_t> dims;  // ne order
    std::vector<std::byte> data;
  };
  template <class Sink>
  void emit(Sink& sink) const;

  std::uint32_t alignment_;
  std::vector<GgufMetadataEntry> metadata_;
  std::vector<PendingTensor> tensors_;
};

/// Longest tensor name llama.cpp accepts (GGML_MAX_NAME - 1 bytes).
inline constexpr std::size_t gguf_max_tensor_name_bytes = 63;
/// Most dimensions a GGUF tensor may have (GGML_MAX_DIMS).
inline constexpr std::size_t gguf_max_dims = 4;

}  // namespace izwi::io

#include <izwi/io/impl/gguf.hpp>
#if !defined(IZWI_SEPARATE_COMPILATION)
#include <izwi/io/impl/gguf.ipp>
#endif
