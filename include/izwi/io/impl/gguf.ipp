#pragma once
// The non-template bodies of <izwi/io/gguf.hpp>: `inline` there when izwi is used
// header-only, compiled once in <izwi/io/src.hpp> under IZWI_SEPARATE_COMPILATION
// (see izwi/config.hpp).

#include <izwi/io/gguf.hpp>
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

IZWI_DECL std::string_view to_string(GgufValueType type) noexcept {
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

IZWI_DECL std::string_view to_string(GgmlType type) noexcept {
  switch (type) {
    case GgmlType::f32: return "F32";
    case GgmlType::f16: return "F16";
    case GgmlType::q8_0: return "Q8_0";
    case GgmlType::bf16: return "BF16";
  }
  return "unknown";
}

IZWI_DECL DType to_dtype(GgmlType type) noexcept {
  switch (type) {
    case GgmlType::f32: return DType::f32;
    case GgmlType::f16: return DType::f16;
    case GgmlType::q8_0: return DType::q8_0;
    case GgmlType::bf16: return DType::bf16;
  }
  return DType::f32;
}

IZWI_DECL GgmlType to_ggml_type(DType type) noexcept {
  switch (type) {
    case DType::f32: return GgmlType::f32;
    case DType::f16: return GgmlType::f16;
    case DType::bf16: return GgmlType::bf16;
    case DType::q8_0: return GgmlType::q8_0;
  }
  return GgmlType::f32;
}

IZWI_DECL std::optional<std::uint64_t> ggml_byte_size(GgmlType type, std::uint64_t element_count) noexcept {
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

/// Range of a GGUF integer type, as [min, max] in int128-free form.
IZWI_DECL bool gguf_signed_fits(GgufValueType t, std::int64_t v) noexcept {
  switch (t) {
    case GgufValueType::int8: return v >= INT8_MIN && v <= INT8_MAX;
    case GgufValueType::int16: return v >= INT16_MIN && v <= INT16_MAX;
    case GgufValueType::int32: return v >= INT32_MIN && v <= INT32_MAX;
    case GgufValueType::int64: return true;
    default: return false;
  }
}
IZWI_DECL bool gguf_unsigned_fits(GgufValueType t, std::uint64_t v) noexcept {
  switch (t) {
    case GgufValueType::uint8: return v <= UINT8_MAX;
    case GgufValueType::uint16: return v <= UINT16_MAX;
    case GgufValueType::uint32: return v <= UINT32_MAX;
    case GgufValueType::uint64: return true;
    default: return false;
  }
}

IZWI_DECL std::string dims_text(std::span<const std::uint64_t> dims) {
  std::string text = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i) text += ", ";
    text += std::to_string(dims[i]);
  }
  return text + "]";
}

}  // namespace detail

// --- GgufValue ---------------------------------------------------------------

IZWI_DECL GgufValue GgufValue::strings(std::vector<std::string> v) {
  return GgufValue(GgufValueType::string, Storage(std::move(v)), true);
}

IZWI_DECL GgufValue GgufValue::integers(GgufValueType element, std::vector<std::int64_t> v) {
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

IZWI_DECL GgufValue GgufValue::unsigned_integers(GgufValueType element, std::vector<std::uint64_t> v) {
  if (!detail::gguf_is_unsigned(element))
    throw izwi::error("GgufValue: an unsigned array cannot have elements of type " + std::string(to_string(element)));
  for (auto x : v)
    if (!detail::gguf_unsigned_fits(element, x))
      throw izwi::error("GgufValue: " + std::to_string(x) + " does not fit in " + std::string(to_string(element)));
  return GgufValue(element, Storage(std::move(v)), true);
}

IZWI_DECL GgufValue GgufValue::floats(GgufValueType element, std::vector<double> v) {
  if (!detail::gguf_is_float(element))
    throw izwi::error("GgufValue: a float array cannot have elements of type " + std::string(to_string(element)));
  if (element == GgufValueType::float32)
    for (auto& x : v) x = static_cast<double>(static_cast<float>(x));  // what the file will hold
  return GgufValue(element, Storage(std::move(v)), true);
}

IZWI_DECL GgufValue GgufValue::booleans(std::vector<bool> v) {
  return GgufValue(GgufValueType::boolean, Storage(std::move(v)), true);
}

IZWI_DECL std::size_t GgufValue::size() const noexcept {
  if (!is_array()) return 1;
  return std::visit(
      [](const auto& s) -> std::size_t {
        if constexpr (requires { s.size(); } && !std::is_same_v<std::decay_t<decltype(s)>, std::string>) return s.size();
        else return 1;
      },
      storage_);
}

IZWI_DECL std::string GgufValue::describe() const {
  if (is_array()) return "an array of " + std::to_string(size()) + " " + std::string(to_string(element_));
  return "a " + std::string(to_string(type_));
}

IZWI_DECL std::int64_t GgufValue::as_int64() const {
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

IZWI_DECL std::uint64_t GgufValue::as_uint64() const {
  if (!is_array()) {
    if (const auto* u = std::get_if<std::uint64_t>(&storage_)) return *u;
    if (const auto* s = std::get_if<std::int64_t>(&storage_)) {
      if (*s < 0) throw izwi::error("value " + std::to_string(*s) + " is negative, an unsigned integer is required");
      return static_cast<std::uint64_t>(*s);
    }
  }
  throw izwi::error("is " + describe() + ", not an integer");
}

IZWI_DECL double GgufValue::as_double() const {
  if (!is_array())
    if (const auto* d = std::get_if<double>(&storage_)) return *d;
  throw izwi::error("is " + describe() + ", not a float");
}

IZWI_DECL bool GgufValue::as_bool() const {
  if (!is_array())
    if (const auto* b = std::get_if<bool>(&storage_)) return *b;
  throw izwi::error("is " + describe() + ", not a bool");
}

IZWI_DECL const std::string& GgufValue::as_string() const {
  if (!is_array())
    if (const auto* s = std::get_if<std::string>(&storage_)) return *s;
  throw izwi::error("is " + describe() + ", not a string");
}

IZWI_DECL const std::vector<std::string>& GgufValue::as_strings() const {
  if (const auto* s = std::get_if<std::vector<std::string>>(&storage_)) return *s;
  throw izwi::error("is " + describe() + ", not an array of strings");
}

IZWI_DECL std::vector<std::int64_t> GgufValue::as_int64s() const {
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

IZWI_DECL const std::vector<std::uint64_t>& GgufValue::as_uint64s() const {
  if (const auto* u = std::get_if<std::vector<std::uint64_t>>(&storage_)) return *u;
  throw izwi::error("is " + describe() + ", not an array of unsigned integers");
}

IZWI_DECL std::vector<double> GgufValue::as_doubles() const {
  if (const auto* d = std::get_if<std::vector<double>>(&storage_)) return *d;
  throw izwi::error("is " + describe() + ", not an array of floats");
}

IZWI_DECL const std::vector<bool>& GgufValue::as_bools() const {
  if (const auto* b = std::get_if<std::vector<bool>>(&storage_)) return *b;
  throw izwi::error("is " + describe() + ", not an array of bools");
}

// --- GgufTensorInfo -------------------------------------------------------------

IZWI_DECL std::vector<std::uint64_t> GgufTensorInfo::shape() const { return {dims.rbegin(), dims.rend()}; }

IZWI_DECL std::uint64_t GgufTensorInfo::element_count() const noexcept {
  std::uint64_t n = 1;
  for (auto d : dims) n *= d;  // checked against overflow when the file opened
  return n;
}

// --- GgufFile accessors ----------------------------------------------------------

IZWI_DECL GgufFile GgufFile::open(const std::filesystem::path& path, FileMemory memory) {
  return GgufFile(detail::SafetensorsStorage::open(path, memory), path.string());
}

IZWI_DECL GgufFile GgufFile::from_bytes(std::vector<std::byte> bytes, std::string display_name) {
  return GgufFile(detail::SafetensorsStorage::own(std::move(bytes)), std::move(display_name));
}

IZWI_DECL GgufFile::GgufFile(GgufFile&&) noexcept = default;
IZWI_DECL GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;
IZWI_DECL GgufFile::~GgufFile() = default;

IZWI_DECL const GgufValue* GgufFile::find_metadata(std::string_view key) const noexcept {
  const auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].value;
}

IZWI_DECL const GgufValue& GgufFile::metadata(std::string_view key) const {
  if (const GgufValue* v = find_metadata(key)) return *v;
  throw format_error(name_, "", "metadata '" + std::string(key) + "': missing");
}

IZWI_DECL const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const noexcept {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

IZWI_DECL const GgufTensorInfo& GgufFile::tensor(std::string_view name) const {
  if (const GgufTensorInfo* t = find_tensor(name)) return *t;
  throw format_error(name_, std::string(name), "missing tensor");
}

IZWI_DECL const GgufTensorInfo& GgufFile::expect_shape(std::string_view name,
                                                    std::span<const std::uint64_t> row_major_shape) const {
  const GgufTensorInfo& t = tensor(name);
  const std::vector<std::uint64_t> shape = t.shape();
  if (!std::equal(shape.begin(), shape.end(), row_major_shape.begin(), row_major_shape.end()))
    throw format_error(name_, t.name, "shape " + detail::dims_text(shape) + " (row-major; GGUF ne " +
                                          detail::dims_text(t.dims) + "), expected " + detail::dims_text(row_major_shape));
  return t;
}

IZWI_DECL std::span<const std::byte> GgufFile::bytes(std::string_view name) const { return bytes(tensor(name)); }

IZWI_DECL std::span<const std::byte> GgufFile::bytes(const GgufTensorInfo& t) const {
  return data_.subspan(t.offset, t.byte_size);
}

IZWI_DECL std::vector<float> GgufFile::to_f32(std::string_view name) const {
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

IZWI_DECL std::vector<float> GgufFile::to_f32(std::string_view name, std::span<const std::uint64_t> row_major_shape) const {
  expect_shape(name, row_major_shape);
  return to_f32(name);
}

// --- GgufWriter --------------------------------------------------------------------

IZWI_DECL GgufWriter::GgufWriter(std::uint32_t alignment) : alignment_(alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    throw izwi::error("GgufWriter: alignment " + std::to_string(alignment) + " is not a power of two");
}

IZWI_DECL void GgufWriter::set(std::string key, GgufValue value) {
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
IZWI_DECL std::vector<std::uint64_t> gguf_dims_from_shape(const std::string& name, GgmlType type,
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

IZWI_DECL void GgufWriter::add_tensor(std::string name, GgmlType type, std::span<const std::uint64_t> row_major_shape,
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

IZWI_DECL void GgufWriter::add_tensor_bytes(std::string name, GgmlType type, std::span<const std::uint64_t> row_major_shape,
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

IZWI_DECL std::vector<std::byte> GgufWriter::serialize() const {
  std::vector<std::byte> out;
  std::size_t total = 1024;
  for (const auto& t : tensors_) total += t.data.size() + alignment_;
  out.reserve(total);
  detail::GgufMemorySink sink{out};
  emit(sink);
  return out;
}

IZWI_DECL void GgufWriter::write(const std::filesystem::path& path) const {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw izwi::error(path.string() + ": cannot create");
  detail::GgufFileSink sink{out};
  emit(sink);
  out.flush();
  if (!out) throw izwi::error(path.string() + ": write failed");
}

}  // namespace izwi::io

// The parser and GgufFile's constructor.
#include <izwi/io/detail/gguf_parser.hpp>
