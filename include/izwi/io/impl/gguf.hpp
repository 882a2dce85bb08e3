#pragma once
// The template bodies of include/izwi/io/gguf.hpp (GgufFile::get, the
// writer's emitters), in every mode; the rest is in gguf.ipp.

#include <izwi/core/error.hpp>

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

}  // namespace detail

// --- GgufValue ---------------------------------------------------------------

// --- GgufTensorInfo -------------------------------------------------------------

// --- GgufFile accessors ----------------------------------------------------------

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

// --- GgufWriter --------------------------------------------------------------------

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

}  // namespace izwi::io
