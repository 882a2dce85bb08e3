#pragma once
// The GGUF header parser and GgufFile's validating constructor.
//
// Every read goes through ByteCursor, which checks the remaining length
// first; every count read from the file is compared with the bytes left
// before anything is reserved, so a lying header costs neither memory nor an
// out-of-bounds read. Defined here, after gguf.hpp's bodies, so this header
// and gguf.hpp each compile on their own.

#include <izwi/config.hpp>
#include <izwi/io/detail/safetensors_storage.hpp>
#include <izwi/io/detail/utf8.hpp>
#include <izwi/io/gguf.hpp>
#include <izwi/io/quantize.hpp>

#include <algorithm>
#include <cstring>
#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <utility>

namespace izwi::io::detail {

/// "[a, b, c]" for an error message. Defined in io/impl/gguf.ipp; declared
/// here too (IZWI_DECL, as its definition), so this header compiles on its
/// own in the separate-compilation mode, where gguf.hpp leaves that body out.
IZWI_DECL std::string dims_text(std::span<const std::uint64_t> dims);

/// ggml's name for a type id (for the error that refuses it).
inline std::string ggml_type_name(std::uint32_t id) {
  static constexpr const char* names[] = {
      "F32",     "F16",    "Q4_0",    "Q4_1",    "Q4_2 (removed)", "Q4_3 (removed)", "Q5_0",  "Q5_1",  "Q8_0", "Q8_1",
      "Q2_K",    "Q3_K",   "Q4_K",    "Q5_K",    "Q6_K",           "Q8_K",           "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S",
      "IQ4_NL",  "IQ3_S",  "IQ2_S",   "IQ4_XS",  "I8",             "I16",            "I32",   "I64",   "F64",  "IQ1_M",
      "BF16",    "Q4_0_4_4 (removed)", "Q4_0_4_8 (removed)", "Q4_0_8_8 (removed)", "TQ1_0", "TQ2_0",
      "IQ4_NL_4_4 (removed)", "IQ4_NL_4_8 (removed)", "IQ4_NL_8_8 (removed)", "MXFP4"};
  if (id < std::size(names)) return names[id];
  return "unknown type id " + std::to_string(id);
}

struct ParsedGguf {
  std::uint32_t version = 0;
  std::uint64_t alignment = 32;
  std::uint64_t data_offset = 0;
  std::vector<GgufMetadataEntry> metadata;
  std::vector<GgufTensorInfo> tensors;
};

class GgufParser {
 public:
  GgufParser(std::span<const std::byte> bytes, const std::string& file) : bytes_(bytes), file_(file) {}

  ParsedGguf parse() {
    ParsedGguf out;
    read_header(out);
    const std::uint64_t tensor_count = read_u64("the tensor count");
    const std::uint64_t metadata_count = read_u64("the metadata count");
    // Smallest possible entries: a tensor info is a 1-byte name (8 + 1), n_dims,
    // one dim, type and offset = 33 bytes; a metadata entry a 1-byte key, a type
    // and a 1-byte value = 14 bytes. More entries than that cannot fit.
    if (tensor_count > remaining() / 33)
      fail("tensor count " + std::to_string(tensor_count) + " is impossible: only " + std::to_string(remaining()) +
           " bytes follow the header");
    if (metadata_count > remaining() / 14)
      fail("metadata count " + std::to_string(metadata_count) + " is impossible: only " + std::to_string(remaining()) +
           " bytes follow the header");
    read_metadata(metadata_count, out);
    out.alignment = alignment_of(out.metadata, out.alignment);

    out.tensors.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(tensor_count, reserve_limit)));
    std::set<std::string, std::less<>> names;
    for (std::uint64_t i = 0; i < tensor_count; ++i) out.tensors.push_back(read_tensor_info(i, names, out.alignment));
    place_data_section(tensor_count, out);
    return out;
  }

 private:
  /// The magic and a version izwi reads (2 or 3, little-endian).
  void read_header(ParsedGguf& out) {
    if (bytes_.size() < 4) fail("truncated: " + std::to_string(bytes_.size()) + " bytes, shorter than the 4-byte magic");
    if (std::memcmp(bytes_.data(), "GGUF", 4) != 0) fail("bad magic: not a GGUF file (the first 4 bytes are not \"GGUF\")");
    pos_ = 4;
    out.version = read_u32("the version");
    if (out.version == 0x03000000u || out.version == 0x02000000u)
      fail("big-endian GGUF (version field reads " + std::to_string(out.version) + "); izwi reads little-endian files");
    if (out.version == 1) fail("GGUF version 1 is not supported (izwi reads versions 2 and 3)");
    if (out.version != 2 && out.version != 3)
      fail("unsupported GGUF version " + std::to_string(out.version) + " (izwi reads versions 2 and 3)");
  }

  /// metadata_count entries: non-empty UTF-8 keys, each once.
  void read_metadata(std::uint64_t metadata_count, ParsedGguf& out) {
    // Counts passed the size check, but an entry in memory is larger than its
    // smallest form on disk: reserve a bounded amount and let real entries grow it.
    out.metadata.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(metadata_count, reserve_limit)));
    std::set<std::string, std::less<>> keys;
    for (std::uint64_t i = 0; i < metadata_count; ++i) {
      const std::size_t key_at = pos_;
      std::string key = read_string("metadata key " + std::to_string(i));
      if (key.empty()) fail_at(key_at, "metadata key " + std::to_string(i) + " is empty");
      if (!is_valid_utf8(key)) fail_at(key_at, "metadata key " + std::to_string(i) + " is not valid UTF-8");
      if (!keys.insert(key).second) fail_at(key_at, "metadata '" + key + "': duplicate key");
      GgufValue value = read_value(key);
      out.metadata.push_back({std::move(key), std::move(value)});
    }
  }

  /// general.alignment when the file sets it (a u32 power of two), else `fallback`.
  std::uint64_t alignment_of(const std::vector<GgufMetadataEntry>& metadata, std::uint64_t fallback) const {
    for (const auto& entry : metadata) {
      if (entry.key != "general.alignment") continue;
      if (entry.value.type() != GgufValueType::uint32)
        fail("metadata 'general.alignment': is " + entry.value.describe() + ", must be a u32");
      const std::uint64_t a = entry.value.as_uint64();
      if (a == 0 || (a & (a - 1)) != 0)
        fail("metadata 'general.alignment': " + std::to_string(a) + " is not a power of two");
      fallback = a;
    }
    return fallback;
  }

  /// The data section starts at the next multiple of the alignment; every
  /// tensor's bytes must lie inside it and no two may overlap.
  void place_data_section(std::uint64_t tensor_count, ParsedGguf& out) const {
    const std::uint64_t header_end = pos_;
    const std::uint64_t padding = (out.alignment - header_end % out.alignment) % out.alignment;
    if (tensor_count > 0 && padding > remaining())
      fail("truncated: the file ends inside the padding before the data section (at byte " + std::to_string(bytes_.size()) + ")");
    out.data_offset = std::min<std::uint64_t>(header_end + padding, bytes_.size());
    const std::uint64_t data_size = bytes_.size() - out.data_offset;

    for (const auto& t : out.tensors) {
      if (t.offset > data_size || t.byte_size > data_size - t.offset)
        throw format_error(file_, t.name, "data [" + std::to_string(t.offset) + ", " + std::to_string(t.offset + t.byte_size) +
                                              ") runs past the end of the " + std::to_string(data_size) +
                                              "-byte data section (truncated file?)");
    }
    std::vector<const GgufTensorInfo*> by_offset;
    by_offset.reserve(out.tensors.size());
    for (const auto& t : out.tensors) by_offset.push_back(&t);
    std::sort(by_offset.begin(), by_offset.end(), [](const GgufTensorInfo* a, const GgufTensorInfo* b) {
      return a->offset != b->offset ? a->offset < b->offset : a->byte_size < b->byte_size;
    });
    for (std::size_t i = 1; i < by_offset.size(); ++i) {
      const GgufTensorInfo& prev = *by_offset[i - 1];
      const GgufTensorInfo& cur = *by_offset[i];
      if (cur.offset < prev.offset + prev.byte_size && cur.byte_size > 0 && prev.byte_size > 0)
        throw format_error(file_, cur.name, "data [" + std::to_string(cur.offset) + ", " +
                                                std::to_string(cur.offset + cur.byte_size) + ") overlaps tensor '" +
                                                prev.name + "' at [" + std::to_string(prev.offset) + ", " +
                                                std::to_string(prev.offset + prev.byte_size) + ")");
    }
  }

  [[noreturn]] void fail(const std::string& problem) const { throw format_error(file_, "", problem); }
  [[noreturn]] void fail_at(std::size_t offset, const std::string& problem) const {
    throw format_error(file_, "", problem + " (at byte " + std::to_string(offset) + ")");
  }

  std::uint64_t remaining() const noexcept { return bytes_.size() - pos_; }

  static constexpr std::uint64_t no_element = ~std::uint64_t{0};
  /// Most entries or elements reserved before they are read (the vocabulary
  /// arrays of real models are ~150k: 2^18 covers them without regrowth).
  static constexpr std::uint64_t reserve_limit = 1u << 18;

  // Error texts are built only when a read fails: `what` names the field and
  // `element` (when not no_element) the array position, so reading a
  // 151936-entry vocabulary costs no string building.
  static std::string field_name(std::string_view what, std::uint64_t element, std::string_view suffix = {}) {
    std::string text(what);
    if (element != no_element) text += "[" + std::to_string(element) + "]";
    text += suffix;
    return text;
  }

  void need(std::uint64_t n, std::string_view what, std::uint64_t element = no_element, std::string_view suffix = {}) const {
    if (n > remaining())
      fail("truncated: " + field_name(what, element, suffix) + " needs " + std::to_string(n) + " bytes at offset " +
           std::to_string(pos_) + " but the file has " + std::to_string(remaining()) + " left");
  }

  template <class T>
  T read_raw(std::string_view what, std::uint64_t element = no_element) {
    need(sizeof(T), what, element);
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::uint32_t read_u32(std::string_view what) { return read_raw<std::uint32_t>(what); }
  std::uint64_t read_u64(std::string_view what) { return read_raw<std::uint64_t>(what); }

  std::string read_string(std::string_view what, std::uint64_t element = no_element) {
    need(8, what, element, " (string length)");
    std::uint64_t length;
    std::memcpy(&length, bytes_.data() + pos_, 8);
    pos_ += 8;
    if (length > remaining()) need(length, what, element, " (string of " + std::to_string(length) + " bytes)");
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), static_cast<std::size_t>(length));
    pos_ += static_cast<std::size_t>(length);
    return s;
  }

  GgufValueType read_type(const std::string& what) {
    const std::size_t at = pos_;
    const std::uint32_t id = read_u32(what);
    if (id > static_cast<std::uint32_t>(GgufValueType::float64)) fail_at(at, what + ": unknown value type " + std::to_string(id));
    return static_cast<GgufValueType>(id);
  }

  GgufValue read_value(const std::string& key) {
    const std::string what = "metadata '" + key + "'";
    const GgufValueType type = read_type(what);
    if (type != GgufValueType::array) return read_scalar(type, what);

    const std::size_t element_at = pos_;
    const GgufValueType element = read_type(what + " (array element type)");
    if (element == GgufValueType::array)
      fail_at(element_at, what + ": arrays of arrays are not supported (llama.cpp refuses them too)");
    const std::uint64_t count = read_u64(what + " (array length)");
    // Each element takes at least this many bytes in the file (a string its
    // 8-byte length): a count the rest of the file cannot hold is a lie, and
    // is refused before anything is allocated.
    const std::uint64_t min_bytes = element == GgufValueType::string ? 8 : gguf_scalar_bytes(element);
    if (count > remaining() / min_bytes)
      fail(what + ": array of " + std::to_string(count) + " " + std::string(to_string(element)) +
           " elements cannot fit in the " + std::to_string(remaining()) + " bytes left");
    // Elements are wider in memory than on disk (a u8 is held as 64 bits):
    // reserve a bounded amount up front; the vectors grow only as far as
    // bytes really present allow.
    const auto n = static_cast<std::size_t>(count);
    const auto reserve = static_cast<std::size_t>(std::min<std::uint64_t>(count, reserve_limit));
    if (element == GgufValueType::string) {
      std::vector<std::string> v;
      v.reserve(reserve);
      for (std::size_t i = 0; i < n; ++i) v.push_back(read_string(what, i));
      return GgufValue::strings(std::move(v));
    }
    if (element == GgufValueType::boolean) {
      std::vector<bool> v;
      v.reserve(reserve);
      for (std::size_t i = 0; i < n; ++i) v.push_back(read_bool(what, i));
      return GgufValue::booleans(std::move(v));
    }
    if (gguf_is_float(element)) {
      std::vector<double> v;
      v.reserve(reserve);
      for (std::size_t i = 0; i < n; ++i) v.push_back(read_float(element, what, i));
      return GgufValue::floats(element, std::move(v));
    }
    if (gguf_is_unsigned(element)) {
      std::vector<std::uint64_t> v;
      v.reserve(reserve);
      for (std::size_t i = 0; i < n; ++i) v.push_back(read_unsigned(element, what, i));
      return GgufValue::unsigned_integers(element, std::move(v));
    }
    std::vector<std::int64_t> v;
    v.reserve(reserve);
    for (std::size_t i = 0; i < n; ++i) v.push_back(read_signed(element, what, i));
    return GgufValue::integers(element, std::move(v));
  }

  bool read_bool(std::string_view what, std::uint64_t element = no_element) {
    const std::size_t at = pos_;
    const auto b = read_raw<std::uint8_t>(what, element);
    if (b > 1) fail_at(at, field_name(what, element) + ": bool byte " + std::to_string(b) + " is neither 0 nor 1");
    return b == 1;
  }
  double read_float(GgufValueType t, std::string_view what, std::uint64_t element = no_element) {
    if (t == GgufValueType::float32) return static_cast<double>(read_raw<float>(what, element));
    return read_raw<double>(what, element);
  }
  std::uint64_t read_unsigned(GgufValueType t, std::string_view what, std::uint64_t element = no_element) {
    switch (t) {
      case GgufValueType::uint8: return read_raw<std::uint8_t>(what, element);
      case GgufValueType::uint16: return read_raw<std::uint16_t>(what, element);
      case GgufValueType::uint32: return read_raw<std::uint32_t>(what, element);
      default: return read_raw<std::uint64_t>(what, element);
    }
  }
  std::int64_t read_signed(GgufValueType t, std::string_view what, std::uint64_t element = no_element) {
    switch (t) {
      case GgufValueType::int8: return read_raw<std::int8_t>(what, element);
      case GgufValueType::int16: return read_raw<std::int16_t>(what, element);
      case GgufValueType::int32: return read_raw<std::int32_t>(what, element);
      default: return read_raw<std::int64_t>(what, element);
    }
  }

  GgufValue read_scalar(GgufValueType type, const std::string& what) {
    switch (type) {
      case GgufValueType::string: return GgufValue::string(read_string(what));
      case GgufValueType::boolean: return GgufValue::boolean(read_bool(what));
      case GgufValueType::float32: return GgufValue::f32(static_cast<float>(read_float(type, what)));
      case GgufValueType::float64: return GgufValue::f64(read_float(type, what));
      case GgufValueType::uint8: return GgufValue::u8(static_cast<std::uint8_t>(read_unsigned(type, what)));
      case GgufValueType::uint16: return GgufValue::u16(static_cast<std::uint16_t>(read_unsigned(type, what)));
      case GgufValueType::uint32: return GgufValue::u32(static_cast<std::uint32_t>(read_unsigned(type, what)));
      case GgufValueType::uint64: return GgufValue::u64(read_unsigned(type, what));
      case GgufValueType::int8: return GgufValue::i8(static_cast<std::int8_t>(read_signed(type, what)));
      case GgufValueType::int16: return GgufValue::i16(static_cast<std::int16_t>(read_signed(type, what)));
      case GgufValueType::int32: return GgufValue::i32(static_cast<std::int32_t>(read_signed(type, what)));
      case GgufValueType::int64: return GgufValue::i64(read_signed(type, what));
      case GgufValueType::array: break;
    }
    fail(what + ": unexpected array");
  }

  GgufTensorInfo read_tensor_info(std::uint64_t index, std::set<std::string, std::less<>>& names, std::uint64_t alignment) {
    GgufTensorInfo t;
    const std::string what = "tensor info " + std::to_string(index);
    const std::size_t name_at = pos_;
    t.name = read_string(what + " (name)");
    if (t.name.empty()) fail_at(name_at, what + ": empty tensor name");
    if (!is_valid_utf8(t.name)) fail_at(name_at, what + ": tensor name is not valid UTF-8");
    if (t.name.size() > gguf_max_tensor_name_bytes)
      throw format_error(file_, t.name, "name longer than " + std::to_string(gguf_max_tensor_name_bytes) + " bytes (llama.cpp's limit)");
    if (!names.insert(t.name).second) throw format_error(file_, t.name, "duplicate tensor name");

    const std::uint32_t n_dims = read_u32(what + " (n_dims)");
    if (n_dims > gguf_max_dims)
      throw format_error(file_, t.name, std::to_string(n_dims) + " dimensions; GGUF allows at most 4");
    t.dims.resize(n_dims);
    std::uint64_t count = 1;
    for (std::uint32_t d = 0; d < n_dims; ++d) {
      t.dims[d] = read_u64(what + " (ne)");
      // ggml holds ne as int64: larger values are negative there.
      if (t.dims[d] > static_cast<std::uint64_t>(INT64_MAX))
        throw format_error(file_, t.name, "dimension " + std::to_string(d) + " is " + std::to_string(t.dims[d]) + ", beyond int64");
      if (t.dims[d] != 0 && count > static_cast<std::uint64_t>(INT64_MAX) / t.dims[d])
        throw format_error(file_, t.name, "ne " + dims_text(std::span<const std::uint64_t>(t.dims.data(), d + 1)) +
                                              " has more elements than int64 can count");
      count *= t.dims[d];
    }

    const std::size_t type_at = pos_;
    const std::uint32_t type_id = read_u32(what + " (type)");
    switch (type_id) {
      case 0: t.type = GgmlType::f32; break;
      case 1: t.type = GgmlType::f16; break;
      case 8: t.type = GgmlType::q8_0; break;
      case 30: t.type = GgmlType::bf16; break;
      default:
        throw format_error(file_, t.name, "unsupported tensor type " + ggml_type_name(type_id) + " (at byte " +
                                              std::to_string(type_at) + "; izwi reads F32, F16, BF16, Q8_0)");
    }
    if (t.type == GgmlType::q8_0 && (t.dims.empty() || t.dims[0] % q8_0_block_values != 0))
      throw format_error(file_, t.name, "Q8_0 rows must be whole 32-value blocks, but ne[0] is " +
                                            (t.dims.empty() ? std::string("absent") : std::to_string(t.dims[0])));
    const auto bytes = ggml_byte_size(t.type, count);
    if (!bytes) throw format_error(file_, t.name, "byte size overflows");
    t.byte_size = *bytes;

    t.offset = read_u64(what + " (offset)");
    if (t.offset % alignment != 0)
      throw format_error(file_, t.name, "data offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                                            std::to_string(alignment));
    return t;
  }

  std::span<const std::byte> bytes_;
  const std::string& file_;
  std::size_t pos_ = 0;
};

}  // namespace izwi::io::detail

namespace izwi::io {

IZWI_DECL GgufFile::GgufFile(std::unique_ptr<detail::SafetensorsStorage> storage, std::string name)
    : storage_(std::move(storage)), name_(std::move(name)) {
  detail::ParsedGguf parsed = detail::GgufParser(storage_->bytes(), name_).parse();
  version_ = parsed.version;
  alignment_ = parsed.alignment;
  data_offset_ = parsed.data_offset;
  data_ = storage_->bytes().subspan(static_cast<std::size_t>(data_offset_));
  metadata_ = std::move(parsed.metadata);
  tensors_ = std::move(parsed.tensors);
  for (std::size_t i = 0; i < metadata_.size(); ++i) metadata_index_.emplace(metadata_[i].key, i);
  for (std::size_t i = 0; i < tensors_.size(); ++i) tensor_index_.emplace(tensors_[i].name, i);
}

}  // namespace izwi::io
