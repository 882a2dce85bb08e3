#pragma once
// Bodies of include/izwi/io/safetensors.hpp.
// Inline in header-only builds; compiled once, in <izwi/io/src.hpp>, under
// IZWI_SEPARATE_COMPILATION (see izwi/config.hpp).

#include <izwi/io/detail/half_float.hpp>
#include <izwi/io/detail/safetensors_header.hpp>
#include <izwi/io/detail/safetensors_storage.hpp>

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>
#include <numeric>
#include <set>

namespace izwi::io {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; izwi reads it in place");

IZWI_DECL std::uint64_t TensorInfo::element_count() const noexcept {
  std::uint64_t count = 1;
  for (auto d : shape) count *= d;  // validated against overflow when the file opened
  return count;
}

namespace detail {

IZWI_DECL std::string shape_text(std::span<const std::uint64_t> shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

// Maps a header dtype to izwi's; throws for the ones safetensors defines but
// izwi does not compute with, and for strings that are no dtype at all.
IZWI_DECL DType safetensors_dtype(const std::string& file, const std::string& tensor, const std::string& dtype) {
  if (dtype == "F32") return DType::f32;
  if (dtype == "F16") return DType::f16;
  if (dtype == "BF16") return DType::bf16;
  static constexpr std::string_view known_unsupported[] = {
      "F64", "I64", "I32", "I16", "I8", "U64", "U32", "U16", "U8", "BOOL",
      "F8_E4M3", "F8_E5M2", "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4", "C64"};
  for (auto known : known_unsupported)
    if (dtype == known) throw format_error(file, tensor, "unsupported dtype " + dtype + " (izwi reads F32, F16, BF16)");
  throw format_error(file, tensor, "unknown dtype '" + dtype + "'");
}

}  // namespace detail

IZWI_DECL SafetensorsFile::SafetensorsFile(std::unique_ptr<detail::SafetensorsStorage> storage, std::string name)
    : storage_(std::move(storage)), name_(std::move(name)) {
  const std::span<const std::byte> all = storage_->bytes();
  if (all.size() < 8)
    throw format_error(name_, "", "truncated: " + std::to_string(all.size()) + " bytes, shorter than the 8-byte header length");
  std::uint64_t header_length = 0;
  std::memcpy(&header_length, all.data(), 8);
  if (header_length > safetensors_max_header_bytes)
    throw format_error(name_, "", "header length " + std::to_string(header_length) + " exceeds the 100 MB limit");
  if (header_length > all.size() - 8)
    throw format_error(name_, "", "truncated: header length " + std::to_string(header_length) + " runs past the end of the " +
                                      std::to_string(all.size()) + "-byte file");
  if (header_length == 0) throw format_error(name_, "", "empty header");

  const std::string_view header_text(reinterpret_cast<const char*>(all.data() + 8), header_length);
  detail::ParsedHeader header = detail::read_safetensors_header(header_text, name_);
  data_ = all.subspan(8 + header_length);
  metadata_ = std::move(header.metadata);

  tensors_.reserve(header.tensors.size());
  for (auto& entry : header.tensors) {
    TensorInfo info;
    info.name = std::move(entry.name);
    info.dtype = detail::safetensors_dtype(name_, info.name, entry.dtype);
    info.shape = std::move(entry.shape);
    info.data_begin = entry.begin;
    info.data_end = entry.end;
    if (info.data_end < info.data_begin)
      throw format_error(name_, info.name, "data_offsets end " + std::to_string(info.data_end) + " is before begin " +
                                               std::to_string(info.data_begin));
    if (info.data_end > data_.size())
      throw format_error(name_, info.name, "data_offsets [" + std::to_string(info.data_begin) + ", " +
                                               std::to_string(info.data_end) + ") run past the " +
                                               std::to_string(data_.size()) + "-byte data section (truncated file?)");
    std::uint64_t bytes = dtype_size(info.dtype);
    for (auto d : info.shape) {
      if (d != 0 && bytes > UINT64_MAX / d) throw format_error(name_, info.name, "shape " + detail::shape_text(info.shape) + " overflows");
      bytes *= d;
    }
    if (bytes != info.byte_size())
      throw format_error(name_, info.name, "shape " + detail::shape_text(info.shape) + " of " + std::string(to_string(info.dtype)) +
                                               " needs " + std::to_string(bytes) + " bytes but data_offsets span " +
                                               std::to_string(info.byte_size()));
    tensors_.push_back(std::move(info));
  }

  // Ranges must tile the data section exactly: sorted, no overlap, no hole,
  // nothing after the last tensor (the reference implementation's rule).
  std::stable_sort(tensors_.begin(), tensors_.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return a.data_begin != b.data_begin ? a.data_begin < b.data_begin : a.data_end < b.data_end;
  });
  std::uint64_t expected_begin = 0;
  for (const auto& t : tensors_) {
    if (t.data_begin < expected_begin)
      throw format_error(name_, t.name, "data_offsets [" + std::to_string(t.data_begin) + ", " + std::to_string(t.data_end) +
                                            ") overlap the previous tensor, which ends at " + std::to_string(expected_begin));
    if (t.data_begin > expected_begin)
      throw format_error(name_, t.name, "hole in the data section: bytes [" + std::to_string(expected_begin) + ", " +
                                            std::to_string(t.data_begin) + ") belong to no tensor");
    expected_begin = t.data_end;
  }
  if (expected_begin != data_.size())
    throw format_error(name_, "", "data section holds " + std::to_string(data_.size()) + " bytes but the tensors cover " +
                                      std::to_string(expected_begin));
  for (std::size_t i = 0; i < tensors_.size(); ++i) index_.emplace(tensors_[i].name, i);
}

IZWI_DECL SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path, FileMemory memory) {
  return SafetensorsFile(detail::SafetensorsStorage::open(path, memory), path.string());
}

IZWI_DECL SafetensorsFile SafetensorsFile::from_bytes(std::vector<std::byte> bytes, std::string display_name) {
  return SafetensorsFile(detail::SafetensorsStorage::own(std::move(bytes)), std::move(display_name));
}

IZWI_DECL SafetensorsFile::SafetensorsFile(SafetensorsFile&&) noexcept = default;
IZWI_DECL SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&&) noexcept = default;
IZWI_DECL SafetensorsFile::~SafetensorsFile() = default;

IZWI_DECL const TensorInfo* SafetensorsFile::find(std::string_view name) const noexcept {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

IZWI_DECL const TensorInfo& SafetensorsFile::at(std::string_view name) const {
  if (const TensorInfo* t = find(name)) return *t;
  throw format_error(name_, std::string(name), "missing tensor");
}

IZWI_DECL std::span<const std::byte> SafetensorsFile::bytes(std::string_view name) const { return bytes(at(name)); }

IZWI_DECL std::span<const std::byte> SafetensorsFile::bytes(const TensorInfo& tensor) const {
  return data_.subspan(tensor.data_begin, tensor.byte_size());
}

IZWI_DECL std::vector<float> SafetensorsFile::to_f32(std::string_view name) const {
  const TensorInfo& tensor = at(name);
  const std::span<const std::byte> raw = bytes(tensor);
  std::vector<float> out(tensor.element_count());
  switch (tensor.dtype) {
    case DType::f32:
      if (!out.empty()) std::memcpy(out.data(), raw.data(), raw.size());
      break;
    case DType::f16:
    case DType::bf16:
      for (std::size_t i = 0; i < out.size(); ++i) {
        std::uint16_t bits;
        std::memcpy(&bits, raw.data() + 2 * i, 2);
        out[i] = tensor.dtype == DType::f16 ? detail::f16_to_f32(bits) : detail::bf16_to_f32(bits);
      }
      break;
    default:
      throw format_error(name_, tensor.name, "cannot convert " + std::string(to_string(tensor.dtype)) + " to f32");
  }
  return out;
}

IZWI_DECL const TensorInfo& SafetensorsFile::expect_shape(std::string_view name,
                                                       std::span<const std::uint64_t> expected_shape) const {
  const TensorInfo& tensor = at(name);
  if (!std::equal(tensor.shape.begin(), tensor.shape.end(), expected_shape.begin(), expected_shape.end()))
    throw format_error(name_, tensor.name, "shape " + detail::shape_text(tensor.shape) + ", expected " +
                                               detail::shape_text(expected_shape));
  return tensor;
}

IZWI_DECL std::vector<float> SafetensorsFile::to_f32(std::string_view name, std::span<const std::uint64_t> expected_shape) const {
  const TensorInfo& tensor = at(name);
  if (!std::equal(tensor.shape.begin(), tensor.shape.end(), expected_shape.begin(), expected_shape.end()))
    throw format_error(name_, tensor.name, "shape " + detail::shape_text(tensor.shape) + ", expected " +
                                               detail::shape_text(expected_shape));
  return to_f32(name);
}

IZWI_DECL std::vector<std::byte> serialize_safetensors(std::span<const TensorToWrite> tensors,
                                                    const std::map<std::string, std::string, std::less<>>& metadata) {
  std::string header = "{";
  bool first = true;
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    for (const auto& [key, value] : metadata) {
      if (!first) header += ',';
      first = false;
      header += json_quote(key) + ":" + json_quote(value);
    }
    header += "}";
  }
  std::set<std::string_view> names;
  std::uint64_t offset = 0;
  for (const auto& t : tensors) {
    if (t.name == "__metadata__" || !names.insert(t.name).second)
      throw izwi::error("write_safetensors: tensor name '" + t.name + "' repeats or is reserved");
    std::uint64_t bytes = dtype_size(t.dtype);
    for (auto d : t.shape) bytes *= d;
    if (bytes == 0 && dtype_size(t.dtype) == 0)
      throw izwi::error("write_safetensors: tensor '" + t.name + "' has a dtype safetensors cannot hold");
    if (bytes != t.data.size())
      throw izwi::error("write_safetensors: tensor '" + t.name + "' has " + std::to_string(t.data.size()) +
                        " bytes, its shape needs " + std::to_string(bytes));
    const char* dtype = t.dtype == DType::f32 ? "F32" : t.dtype == DType::f16 ? "F16" : "BF16";
    if (header.size() > 1) header += ',';
    header += json_quote(t.name) + ":{\"dtype\":\"" + dtype + "\",\"shape\":" + detail::shape_text(t.shape) +
              ",\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + bytes) + "]}";
    offset += bytes;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');

  std::vector<std::byte> out(8 + header.size() + offset);
  const std::uint64_t length = header.size();
  std::memcpy(out.data(), &length, 8);
  std::memcpy(out.data() + 8, header.data(), header.size());
  std::byte* cursor = out.data() + 8 + header.size();
  for (const auto& t : tensors) {
    if (!t.data.empty()) std::memcpy(cursor, t.data.data(), t.data.size());
    cursor += t.data.size();
  }
  return out;
}

IZWI_DECL void write_safetensors(const std::filesystem::path& path, std::span<const TensorToWrite> tensors,
                              const std::map<std::string, std::string, std::less<>>& metadata) {
  const std::vector<std::byte> bytes = serialize_safetensors(tensors, metadata);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw izwi::error(path.string() + ": cannot create");
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw izwi::error(path.string() + ": write failed");
}

}  // namespace izwi::io
