#pragma once
// Bodies of include/izwi/io/gguf.hpp, except the parser and GgufFile's
// constructor (detail/gguf_parser.hpp, included after this file).

#include <izwi/core/error.hpp>
#include <izwi/io/detail/half_float.hpp>
#include <izwi/io/detail/safetensors_storage.hpp>
#include <izwi/io/detail/utf8.hpp>
#include <izwi/io/quantize.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <concepts>
#include <cstring>
#include <fstream>
#include <limits>
#include <type_traits>
#include <utility>

namespace izwi::io {

static_assert(std::endian::native == std::endian::little, "GGUF is read and written in place as little-endian");

inline std::string_view to_string(GgufValueType type) noexcept {
  switch (type) {
    case GgufValueType::uint8: return "u8";
    case GgufValueType::int8: return "i8";
    case GgufValueType::uint16: return "u16";
    case GgufValueType::int16: return "i16";
    case GgufValueType::uint32: return "u32";
    case GgufValueType::int32: return "i32";
    case GgufValueType::float32: return "f32";
    case GgufValueType::boolean: return "bool";
    case GgufValueType::string: return "string";
    case GgufValueType::array: return "array";
    case GgufValueType::uint64: return "u64";
    case GgufValueType::int64: return "i64";
    case GgufValueType::float64: return "f64";
  }
  return "unknown";
}

inline std::string_view to_string(GgmlType type) noexcept {
  switch (type) {
    case GgmlType::f32: return "F32";
    case GgmlType::f16: return "F16";
    case GgmlType::q8_0: return "Q8_0";
    case GgmlType::bf16: return "BF16";
  }
  return "unknown";
}

inline DType to_dtype(GgmlType type) noexcept {
  switch (type) {
    case GgmlType::f32: return DType::f32;
    case GgmlType::f16: return DType::f16;
    case GgmlType::q8_0: return DType::q8_0;
    case GgmlType::bf16: return DType::bf16;
  }
  return DType::f32;
}

inline GgmlType to_ggml_type(DType type) noexcept {
  switch (type) {
    case DType::f32: return GgmlType::f32;
    case DType::f16: return GgmlType::f16;
    case DType::bf16: return GgmlType::bf16;
    case DType::q8_0: return GgmlType::q8_0;
  }
  return GgmlType::f32;
}

inline std::optional<std::uint64_t> ggml_byte_size(GgmlType type, std::uint64_t element_count) noexcept {
  std::uint64_t units = element_count, unit_bytes = 0;
  switch (type) {
    case GgmlType::f32: unit_bytes = 4; break;
    case GgmlType::f16:
    case GgmlType::bf16: unit_bytes = 2; break;
    case GgmlType::q8_0:
      if (element_count % q8_0_block_values != 0) return std::nullopt;
      units = element_count / q8_0_block_values;
      unit_bytes = q8_0_block_bytes;
      break;
  }
  if (unit_bytes == 0 || units > std::numeric_limits<std::uint64_t>::max() / unit_bytes) return std::nullopt;
  return units * unit_bytes;
}

namespace detail {

constexpr bool gguf_is_unsigned(GgufValueType t) noexcept {
  return t == GgufValueType::uint8 || t == GgufValueType::uint16 || t == GgufValueType::uint32 || t == GgufValueType::uint64;
}
constexpr bool gguf_is_signed(GgufValueType t) noexcept {
  return t == GgufValueType::int8 || t == GgufValueType::int16 || t == GgufValueType::int32 || t == GgufValueType::int64;
}
constexpr bool gguf_is_float(GgufValueType t) noexcept {
  return t == GgufValueType::float32 || t == GgufValueType::float64;
}
/// Bytes of one element on disk; 0 for string and array.
constexpr std::size_t gguf_scalar_bytes(GgufValueType t) noexcept {
  switch (t) {
    case GgufValueType::uint8:
    case GgufValueType::int8:
    case GgufValueType::boolean: return 1;
    case GgufValueType::uint16:
    case GgufValueType::int16: return 2;
    case GgufValueType::uint32:
    case GgufValueType::int32:
    case GgufValueType::float32: return 4;
    case GgufValueType::uint64:
    case GgufValueType::int64:
    case GgufValueType::float64: return 8;
    default: return 0;
  }
}
/// Range of a GGUF integer type, as [min, max] in int128-free form.
inline bool gguf_signed_fits(GgufValueType t, std::int64_t v) noexcept {
  switch (t) {
    case GgufValueType::int8: return v >= INT8_MIN && v <= INT8_MAX;
    case GgufValueType::int16: return v >= INT16_MIN && v <= INT16_MAX;
    case GgufValueType::int32: return v >= INT32_MIN && v <= INT32_MAX;
    case GgufValueType::int64: return true;
    default: return false;
  }
}
inline bool gguf_unsigned_fits(GgufValueType t, std::uint64_t v) noexcept {
  switch (t) {
    case GgufValueType::uint8: return v <= UINT8_MAX;
    case GgufValueType::uint16: return v <= UINT16_MAX;
    case GgufValueType::uint32: return v <= UINT32_MAX;
    case GgufValueType::uint64: return true;
    default: return false;
  }
}

inline std::string dims_text(std::span<const std::uint64_t> dims) {
  std::string text = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i) text += ", ";
    text += std::to_string(dims[i]);
  }
  return text + "]";
}

}  // namespace detail

// --- GgufValue ---------------------------------------------------------------

inline GgufValue GgufValue::strings(std::vector<std::string> v) {
  return GgufValue(GgufValueType::string, Storage(std::move(v)), true);
}

inline GgufValue GgufValue::integers(GgufValueType element, std::vector<std::int64_t> v) {
  if (detail::gguf_is_unsigned(element)) {
    std::vector<std::uint64_t> u;
    u.reserve(v.size());
    for (auto x : v) {
      if (x < 0 || !detail::gguf_unsigned_fits(element, static_cast<std::uint64_t>(x)))
        throw izwi::error("GgufValue: " + std::to_string(x) + " does not fit in " + std::string(to_string(element)));
      u.push_back(static_cast<std::uint64_t>(x));
    }
    return GgufValue(element, Storage(std::move(u)), true);
  }
  if (!detail::gguf_is_signed(element))
    throw izwi::error("GgufValue: an integer array cannot have elements of type " + std::string(to_string(element)));
  for (auto x : v)
    if (!detail::gguf_signed_fits(element, x))
      throw izwi::error("GgufValue: " + std::to_string(x) + " does not fit in " + std::string(to_string(element)));
  return GgufValue(element, Storage(std::move(v)), true);
}

inline GgufValue GgufValue::unsigned_integers(GgufValueType element, std::vector<std::uint64_t> v) {
  if (!detail::gguf_is_unsigned(element))
    throw izwi::error("GgufValue: an unsigned array cannot have elements of type " + std::string(to_string(element)));
  for (auto x : v)
    if (!detail::gguf_unsigned_fits(element, x))
      throw izwi::error("GgufValue: " + std::to_string(x) + " does not fit in " + std::string(to_string(element)));
  return GgufValue(element, Storage(std::move(v)), true);
}

inline GgufValue GgufValue::floats(GgufValueType element, std::vector<double> v) {
  if (!detail::gguf_is_float(element))
    throw izwi::error("GgufValue: a float array cannot have elements of type " + std::string(to_string(element)));
  if (element == GgufValueType::float32)
    for (auto& x : v) x = static_cast<double>(static_cast<float>(x));  // what the file will hold
  return GgufValue(element, Storage(std::move(v)), true);
}

inline GgufValue GgufValue::booleans(std::vector<bool> v) {
  return GgufValue(GgufValueType::boolean, Storage(std::move(v)), true);
}

inline std::size_t GgufValue::size() const noexcept {
  if (!is_array()) return 1;
  return std::visit(
      [](const auto& s) -> std::size_t {
        if constexpr (requires { s.size(); } && !std::is_same_v<std::decay_t<decltype(s)>, std::string>) return s.size();
        else return 1;
      },
      storage_);
}

inline std::string GgufValue::describe() const {
  if (is_array()) return "an array of " + std::to_string(size()) + " " + std::string(to_string(element_));
  return "a " + std::string(to_string(type_));
}

inline std::int64_t GgufValue::as_int64() const {
  if (!is_array()) {
    if (const auto* s = std::get_if<std::int64_t>(&storage_)) return *s;
    if (const auto* u = std::get_if<std::uint64_t>(&storage_)) {
      if (*u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        throw izwi::error("value " + std::to_string(*u) + " does not fit in int64");
      return static_cast<std::int64_t>(*u);
    }
  }
  throw izwi::error("is " + describe() + ", not an integer");
}

inline std::uint64_t GgufValue::as_uint64() const {
  if (!is_array()) {
    if (const auto* u = std::get_if<std::uint64_t>(&storage_)) return *u;
    if (const auto* s = std::get_if<std::int64_t>(&storage_)) {
      if (*s < 0) throw izwi::error("value " + std::to_string(*s) + " is negative, an unsigned integer is required");
      return static_cast<std::uint64_t>(*s);
    }
  }
  throw izwi::error("is " + describe() + ", not an integer");
}

inline double GgufValue::as_double() const {
  if (!is_array())
    if (const auto* d = std::get_if<double>(&storage_)) return *d;
  throw izwi::error("is " + describe() + ", not a float");
}

inline bool GgufValue::as_bool() const {
  if (!is_array())
    if (const auto* b = std::get_if<bool>(&storage_)) return *b;
  throw izwi::error("is " + describe() + ", not a bool");
}

inline const std::string& GgufValue::as_string() const {
  if (!is_array())
    if (const auto* s = std::get_if<std::string>(&storage_)) return *s;
  throw izwi::error("is " + describe() + ", not a string");
}

inline const std::vector<std::string>& GgufValue::as_strings() const {
  if (const auto* s = std::get_if<std::vector<std::string>>(&storage_)) return *s;
  throw izwi::error("is " + describe() + ", not an array of strings");
}

inline std::vector<std::int64_t> GgufValue::as_int64s() const {
  if (const auto* s = std::get_if<std::vector<std::int64_t>>(&storage_)) return *s;
  if (const auto* u = std::get_if<std::vector<std::uint64_t>>(&storage_)) {
    std::vector<std::int64_t> out;
    out.reserve(u->size());
    for (auto x : *u) {
      if (x > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        throw izwi::error("element " + std::to_string(x) + " does not fit in int64");
      out.push_back(static_cast<std::int64_t>(x));
    }
    return out;
  }
  throw izwi::error("is " + describe() + ", not an array of integers");
}

inline const std::vector<std::uint64_t>& GgufValue::as_uint64s() const {
  if (const auto* u = std::get_if<std::vector<std::uint64_t>>(&storage_)) return *u;
  throw izwi::error("is " + describe() + ", not an array of unsigned integers");
}

inline std::vector<double> GgufValue::as_doubles() const {
  if (const auto* d = std::get_if<std::vector<double>>(&storage_)) return *d;
  throw izwi::error("is " + describe() + ", not an array of floats");
}

inline const std::vector<bool>& GgufValue::as_bools() const {
  if (const auto* b = std::get_if<std::vector<bool>>(&storage_)) return *b;
  throw izwi::error("is " + describe() + ", not an array of bools");
}

// --- GgufTensorInfo -------------------------------------------------------------

inline std::vector<std::uint64_t> GgufTensorInfo::shape() const { return {dims.rbegin(), dims.rend()}; }

inline std::uint64_t GgufTensorInfo::element_count() const noexcept {
  std::uint64_t n = 1;
  for (auto d : dims) n *= d;  // checked against overflow when the file opened
  return n;
}

// --- GgufFile accessors ----------------------------------------------------------

inline GgufFile GgufFile::open(const std::filesystem::path& path, FileMemory memory) {
  return GgufFile(detail::SafetensorsStorage::open(path, memory), path.string());
}

inline GgufFile GgufFile::from_bytes(std::vector<std::byte> bytes, std::string display_name) {
  return GgufFile(detail::SafetensorsStorage::own(std::move(bytes)), std::move(display_name));
}

inline GgufFile::GgufFile(GgufFile&&) noexcept = default;
inline GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;
inline GgufFile::~GgufFile() = default;

inline const GgufValue* GgufFile::find_metadata(std::string_view key) const noexcept {
  const auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].value;
}

inline const GgufValue& GgufFile::metadata(std::string_view key) const {
  if (const GgufValue* v = find_metadata(key)) return *v;
  throw format_error(name_, "", "metadata '" + std::string(key) + "': missing");
}

template <class T>
T GgufFile::get(std::string_view key) const {
  const GgufValue& value = metadata(key);
  try {
    if constexpr (std::is_same_v<T, bool>) {
      return value.as_bool();
    } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      const std::int64_t v = value.as_int64();
      if (!std::in_range<T>(v)) throw izwi::error("value " + std::to_string(v) + " is out of range");
      return static_cast<T>(v);
    } else if constexpr (std::is_integral_v<T>) {
      const std::uint64_t v = value.as_uint64();
      if (!std::in_range<T>(v)) throw izwi::error("value " + std::to_string(v) + " is out of range");
      return static_cast<T>(v);
    } else if constexpr (std::is_floating_point_v<T>) {
      return static_cast<T>(value.as_double());
    } else if constexpr (std::is_same_v<T, std::string>) {
      return value.as_string();
    } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
      return value.as_strings();
    } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
      return value.as_int64s();
    } else if constexpr (std::is_same_v<T, std::vector<double>>) {
      return value.as_doubles();
    } else {
      static_assert(sizeof(T) == 0, "GgufFile::get reads bool, integers, float, double, std::string and vectors of "
                                    "std::string, std::int64_t, double");
    }
  } catch (const format_error&) {
    throw;
  } catch (const izwi::error& e) {
    throw format_error(name_, "", "metadata '" + std::string(key) + "': " + e.what());
  }
}

template <class T>
T GgufFile::get(std::string_view key, T fallback) const {
  if (find_metadata(key) == nullptr) return fallback;
  return get<T>(key);
}

inline const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const noexcept {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

inline const GgufTensorInfo& GgufFile::tensor(std::string_view name) const {
  if (const GgufTensorInfo* t = find_tensor(name)) return *t;
  throw format_error(name_, std::string(name), "missing tensor");
}

inline const GgufTensorInfo& GgufFile::expect_shape(std::string_view name,
                                                    std::span<const std::uint64_t> row_major_shape) const {
  const GgufTensorInfo& t = tensor(name);
  const std::vector<std::uint64_t> shape = t.shape();
  if (!std::equal(shape.begin(), shape.end(), row_major_shape.begin(), row_major_shape.end()))
    throw format_error(name_, t.name, "shape " + detail::dims_text(shape) + " (row-major; GGUF ne " +
                                          detail::dims_text(t.dims) + "), expected " + detail::dims_text(row_major_shape));
  return t;
}

inline std::span<const std::byte> GgufFile::bytes(std::string_view name) const { return bytes(tensor(name)); }

inline std::span<const std::byte> GgufFile::bytes(const GgufTensorInfo& t) const {
  return data_.subspan(t.offset, t.byte_size);
}

inline std::vector<float> GgufFile::to_f32(std::string_view name) const {
  const GgufTensorInfo& t = tensor(name);
  const std::span<const std::byte> raw = bytes(t);
  std::vector<float> out(t.element_count());
  switch (t.type) {
    case GgmlType::f32:
      if (!out.empty()) std::memcpy(out.data(), raw.data(), raw.size());
      break;
    case GgmlType::f16:
    case GgmlType::bf16:
      for (std::size_t i = 0; i < out.size(); ++i) {
        std::uint16_t bits;
        std::memcpy(&bits, raw.data() + 2 * i, 2);
        out[i] = t.type == GgmlType::f16 ? detail::f16_to_f32(bits) : detail::bf16_to_f32(bits);
      }
      break;
    case GgmlType::q8_0:
      dequantize_q8_0(raw, out);
      break;
  }
  return out;
}

inline std::vector<float> GgufFile::to_f32(std::string_view name, std::span<const std::uint64_t> row_major_shape) const {
  expect_shape(name, row_major_shape);
  return to_f32(name);
}

// --- GgufWriter --------------------------------------------------------------------

inline GgufWriter::GgufWriter(std::uint32_t alignment) : alignment_(alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    throw izwi::error("GgufWriter: alignment " + std::to_string(alignment) + " is not a power of two");
}

inline void GgufWriter::set(std::string key, GgufValue value) {
  if (key.empty() || !detail::is_valid_utf8(key)) throw izwi::error("GgufWriter: a metadata key must be non-empty UTF-8");
  if (key == "general.alignment")
    throw izwi::error("GgufWriter: general.alignment is set by the constructor (GgufWriter(alignment))");
  for (auto& entry : metadata_)
    if (entry.key == key) {
      entry.value = std::move(value);
      return;
    }
  metadata_.push_back({std::move(key), std::move(value)});
}

namespace detail {
inline std::vector<std::uint64_t> gguf_dims_from_shape(const std::string& name, GgmlType type,
                                                       std::span<const std::uint64_t> row_major_shape,
                                                       std::uint64_t& element_count) {
  if (name.empty() || name.size() > gguf_max_tensor_name_bytes || !is_valid_utf8(name))
    throw izwi::error("GgufWriter: tensor name '" + name + "' must be 1 to 63 bytes of UTF-8");
  if (row_major_shape.size() > gguf_max_dims)
    throw izwi::error("GgufWriter: tensor '" + name + "' has " + std::to_string(row_major_shape.size()) +
                      " dimensions, GGUF allows at most 4");
  element_count = 1;
  for (auto d : row_major_shape) {
    if (d > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) ||
        (d != 0 && element_count > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) / d))
      throw izwi::error("GgufWriter: tensor '" + name + "' has too many elements");
    element_count *= d;
  }
  std::vector<std::uint64_t> dims(row_major_shape.rbegin(), row_major_shape.rend());
  if (dims.empty()) dims.push_back(1);  // ggml has no rank-0 tensors: a scalar is ne = [1]
  if (type == GgmlType::q8_0 && dims[0] % q8_0_block_values != 0)
    throw izwi::error("GgufWriter: tensor '" + name + "' rows have " + std::to_string(dims[0]) +
                      " values; Q8_0 needs a multiple of 32");
  return dims;
}
}  // namespace detail

inline void GgufWriter::add_tensor(std::string name, GgmlType type, std::span<const std::uint64_t> row_major_shape,
                                   std::span<const float> values) {
  std::uint64_t count = 0;
  std::vector<std::uint64_t> dims = detail::gguf_dims_from_shape(name, type, row_major_shape, count);
  if (values.size() != count)
    throw izwi::error("GgufWriter: tensor '" + name + "' has " + std::to_string(values.size()) + " values, its shape " +
                      detail::dims_text(row_major_shape) + " needs " + std::to_string(count));
  std::vector<std::byte> data;
  switch (type) {
    case GgmlType::f32:
      data.resize(values.size() * 4);
      if (!values.empty()) std::memcpy(data.data(), values.data(), data.size());
      break;
    case GgmlType::f16:
    case GgmlType::bf16:
      data.resize(values.size() * 2);
      for (std::size_t i = 0; i < values.size(); ++i) {
        const std::uint16_t bits = type == GgmlType::f16 ? detail::f32_to_f16(values[i]) : detail::f32_to_bf16(values[i]);
        std::memcpy(data.data() + 2 * i, &bits, 2);
      }
      break;
    case GgmlType::q8_0:
      data = quantize_q8_0(values);
      break;
  }
  add_tensor_bytes(std::move(name), type, row_major_shape, std::move(data));
}

inline void GgufWriter::add_tensor_bytes(std::string name, GgmlType type, std::span<const std::uint64_t> row_major_shape,
                                         std::vector<std::byte> data) {
  std::uint64_t count = 0;
  std::vector<std::uint64_t> dims = detail::gguf_dims_from_shape(name, type, row_major_shape, count);
  const auto bytes = ggml_byte_size(type, count);
  if (!bytes || *bytes != data.size())
    throw izwi::error("GgufWriter: tensor '" + name + "' has " + std::to_string(data.size()) + " bytes, " +
                      std::string(to_string(type)) + " of shape " + detail::dims_text(row_major_shape) + " needs " +
                      (bytes ? std::to_string(*bytes) : std::string("an impossible size")));
  for (const auto& t : tensors_)
    if (t.name == name) throw izwi::error("GgufWriter: tensor '" + name + "' added twice");
  tensors_.push_back({std::move(name), type, std::move(dims), std::move(data)});
}

namespace detail {

/// Little-endian GGUF primitives over a byte sink (the writer's output).
template <class Sink>
struct GgufEmitter {
  Sink& sink;

  void put(const void* p, std::size_t n) { sink(static_cast<const std::byte*>(p), n); }
  void put_u32(std::uint32_t v) { put(&v, 4); }
  void put_u64(std::uint64_t v) { put(&v, 8); }
  void put_string(const std::string& s) {
    put_u64(s.size());
    put(s.data(), s.size());
  }
  template <class V>
  void put_scalar(GgufValueType type, const V& v) {
    switch (type) {
      case GgufValueType::uint8: { const auto x = static_cast<std::uint8_t>(v); put(&x, 1); break; }
      case GgufValueType::int8: { const auto x = static_cast<std::int8_t>(v); put(&x, 1); break; }
      case GgufValueType::uint16: { const auto x = static_cast<std::uint16_t>(v); put(&x, 2); break; }
      case GgufValueType::int16: { const auto x = static_cast<std::int16_t>(v); put(&x, 2); break; }
      case GgufValueType::uint32: { const auto x = static_cast<std::uint32_t>(v); put(&x, 4); break; }
      case GgufValueType::int32: { const auto x = static_cast<std::int32_t>(v); put(&x, 4); break; }
      case GgufValueType::uint64: { const auto x = static_cast<std::uint64_t>(v); put(&x, 8); break; }
      case GgufValueType::int64: { const auto x = static_cast<std::int64_t>(v); put(&x, 8); break; }
      case GgufValueType::float32: { const auto x = static_cast<float>(v); put(&x, 4); break; }
      case GgufValueType::float64: { const auto x = static_cast<double>(v); put(&x, 8); break; }
      case GgufValueType::boolean: { const auto x = static_cast<std::uint8_t>(static_cast<bool>(v) ? 1 : 0); put(&x, 1); break; }
      default: break;
    }
  }
  /// A scalar, or every element of an array, of one metadata value.
  template <class T, class Scalar, class Array>
  void put_values(const GgufValue& value, GgufValueType element, Scalar scalar, Array array) {
    if (value.is_array())
      for (T x : (value.*array)()) put_scalar(element, x);
    else
      put_scalar(element, (value.*scalar)());
  }
  /// `n` zero bytes.
  void pad(std::uint64_t n) {
    static constexpr std::byte zeros[256] = {};
    while (n > 0) {
      const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(n, sizeof zeros));
      put(zeros, chunk);
      n -= chunk;
    }
  }
  /// Zero bytes up to the next multiple of `alignment` of `size`.
  void pad_after(std::uint64_t size, std::uint64_t alignment) { pad((alignment - size % alignment) % alignment); }
};

/// One metadata entry: key, type, and (for arrays) element type and count, then the values.
template <class Sink>
void gguf_emit_metadata(GgufEmitter<Sink>& out, const std::string& key, const GgufValue& value) {
  out.put_string(key);
  out.put_u32(static_cast<std::uint32_t>(value.type()));
  if (value.is_array()) {
    out.put_u32(static_cast<std::uint32_t>(value.element_type()));
    out.put_u64(value.size());
  }
  const GgufValueType element = value.element_type();
  if (element == GgufValueType::string) {
    if (value.is_array())
      for (const auto& s : value.as_strings()) out.put_string(s);
    else
      out.put_string(value.as_string());
  } else if (element == GgufValueType::boolean) {
    out.template put_values<bool>(value, element, &GgufValue::as_bool, &GgufValue::as_bools);
  } else if (gguf_is_float(element)) {
    out.template put_values<double>(value, element, &GgufValue::as_double, &GgufValue::as_doubles);
  } else if (gguf_is_unsigned(element)) {
    out.template put_values<std::uint64_t>(value, element, &GgufValue::as_uint64, &GgufValue::as_uint64s);
  } else {
    out.template put_values<std::int64_t>(value, element, &GgufValue::as_int64, &GgufValue::as_int64s);
  }
}

}  // namespace detail

template <class Sink>
void GgufWriter::emit(Sink& sink) const {
  detail::GgufEmitter<Sink> out{sink};
  out.put("GGUF", 4);
  out.put_u32(3);
  out.put_u64(tensors_.size());
  out.put_u64(metadata_.size() + (alignment_ != 32 ? 1 : 0));
  if (alignment_ != 32) {
    out.put_string("general.alignment");
    out.put_u32(static_cast<std::uint32_t>(GgufValueType::uint32));
    out.put_u32(alignment_);
  }
  for (const auto& [key, value] : metadata_) detail::gguf_emit_metadata(out, key, value);
  std::uint64_t offset = 0;  // of each tensor's data, from the start of the (aligned) data section
  for (const auto& t : tensors_) {
    out.put_string(t.name);
    out.put_u32(static_cast<std::uint32_t>(t.dims.size()));
    for (auto d : t.dims) out.put_u64(d);
    out.put_u32(static_cast<std::uint32_t>(t.type));
    out.put_u64(offset);
    offset += (t.data.size() + alignment_ - 1) / alignment_ * alignment_;
  }
  out.pad_after(sink.position(), alignment_);
  for (const auto& t : tensors_) {
    out.put(t.data.data(), t.data.size());
    out.pad_after(t.data.size(), alignment_);
  }
}

namespace detail {
struct GgufMemorySink {
  std::vector<std::byte>& out;
  void operator()(const std::byte* p, std::size_t n) { out.insert(out.end(), p, p + n); }
  std::uint64_t position() const { return out.size(); }
};
struct GgufFileSink {
  std::ofstream& out;
  std::uint64_t written = 0;
  void operator()(const std::byte* p, std::size_t n) {
    out.write(reinterpret_cast<const char*>(p), static_cast<std::streamsize>(n));
    written += n;
  }
  std::uint64_t position() const { return written; }
};
}  // namespace detail

inline std::vector<std::byte> GgufWriter::serialize() const {
  std::vector<std::byte> out;
  std::size_t total = 1024;
  for (const auto& t : tensors_) total += t.data.size() + alignment_;
  out.reserve(total);
  detail::GgufMemorySink sink{out};
  emit(sink);
  return out;
}

inline void GgufWriter::write(const std::filesystem::path& path) const {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw izwi::error(path.string() + ": cannot create");
  detail::GgufFileSink sink{out};
  emit(sink);
  out.flush();
  if (!out) throw izwi::error(path.string() + ": write failed");
}

}  // namespace izwi::io
