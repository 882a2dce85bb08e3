#pragma once
// The JSON header of a safetensors file, read through izwi::io::parse_json
// (Boost.JSON) and then held to the header's restricted shape: an object whose
// members are either "__metadata__" (an object of strings) or a tensor (an
// object with exactly "dtype": string, "shape": [non-negative integers],
// "data_offsets": [begin, end]). Anything else -- unknown keys, duplicate
// keys, fractions, negative numbers, bad escapes, invalid UTF-8, trailing
// bytes other than the spaces writers pad with -- is refused with
// format_error naming the file and, where one is involved, the tensor.

#include <izwi/io/format_error.hpp>
#include <izwi/io/json.hpp>

#include <boost/json/monotonic_resource.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace izwi::io::detail {

struct HeaderTensor {
  std::string name;
  std::string dtype;
  std::vector<std::uint64_t> shape;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

struct ParsedHeader {
  std::vector<HeaderTensor> tensors;  ///< in header order
  std::map<std::string, std::string, std::less<>> metadata;
};

/// Offset of the header in the file: its 8-byte length comes first.
inline constexpr std::size_t safetensors_header_offset = 8;

/// An array of at most 64 non-negative integers (a shape or data_offsets).
inline std::vector<std::uint64_t> header_integer_array(const std::string& file, const std::string& tensor,
                                                       const JsonValue& value, const std::string& what) {
  const auto fail = [&](const std::string& problem) { throw format_error(file, tensor, "'" + what + "' " + problem); };
  const JsonArray* array = value.if_array();
  if (array == nullptr) fail("is not an array");
  if (array->size() > 64) fail("has more than 64 entries");
  std::vector<std::uint64_t> values;
  values.reserve(array->size());
  for (const JsonValue& element : *array) {
    if (const auto* u = element.if_uint64()) {
      values.push_back(*u);
    } else if (const auto* i = element.if_int64(); i != nullptr && *i >= 0) {
      values.push_back(static_cast<std::uint64_t>(*i));
    } else if (const auto* d = element.if_double(); d != nullptr && *d >= 18446744073709551616.0) {
      fail("value overflows 64 bits");
    } else if (element.is_double()) {
      fail("holds a non-integer number");
    } else {
      fail("holds something other than a non-negative integer");
    }
  }
  return values;
}

inline HeaderTensor header_tensor(const std::string& file, std::string name, const JsonValue& value) {
  HeaderTensor tensor;
  tensor.name = std::move(name);
  const auto fail = [&](const std::string& problem) { throw format_error(file, tensor.name, problem); };
  const JsonObject* entry = value.if_object();
  if (entry == nullptr) fail("entry is not an object");
  bool have_dtype = false, have_shape = false, have_offsets = false;
  for (const auto& member : *entry) {
    const std::string_view key(member.key().data(), member.key().size());
    if (key == "dtype") {
      const auto dtype = json_string(member.value());
      if (!dtype) fail("'dtype' is not a string");
      tensor.dtype = std::string(*dtype);
      have_dtype = true;
    } else if (key == "shape") {
      tensor.shape = header_integer_array(file, tensor.name, member.value(), "shape");
      have_shape = true;
    } else if (key == "data_offsets") {
      const auto offsets = header_integer_array(file, tensor.name, member.value(), "data_offsets");
      if (offsets.size() != 2) fail("'data_offsets' must hold exactly [begin, end]");
      tensor.begin = offsets[0];
      tensor.end = offsets[1];
      have_offsets = true;
    } else {
      fail("unknown key '" + std::string(key) + "' (expected dtype, shape, data_offsets)");
    }
  }
  if (!have_dtype) fail("missing 'dtype'");
  if (!have_shape) fail("missing 'shape'");
  if (!have_offsets) fail("missing 'data_offsets'");
  return tensor;
}

inline void header_metadata(const std::string& file, const JsonValue& value,
                            std::map<std::string, std::string, std::less<>>& metadata) {
  const JsonObject* object = value.if_object();
  if (object == nullptr) throw format_error(file, "", "__metadata__ must be an object of strings");
  for (const auto& member : *object) {
    const std::string key(member.key());
    const auto text = json_string(member.value());
    if (!text) throw format_error(file, "", "__metadata__ value of '" + key + "' is not a string");
    metadata.emplace(key, std::string(*text));
  }
}

/// Reads the header text (the bytes after the length, padding included).
inline ParsedHeader read_safetensors_header(std::string_view text, const std::string& file) {
  boost::json::monotonic_resource arena;
  JsonValue doc;
  try {
    doc = parse_json(text, file, &arena);
  } catch (const json_error& e) {
    throw format_error(file, "", "invalid header JSON at byte " + std::to_string(e.offset() + safetensors_header_offset) +
                                     ": " + e.problem());
  }
  const JsonObject* root = doc.if_object();
  if (root == nullptr) throw format_error(file, "", "invalid header JSON: the header must be a JSON object");
  ParsedHeader header;
  header.tensors.reserve(root->size());
  for (const auto& member : *root) {
    std::string key(member.key());
    if (key == "__metadata__") {
      header_metadata(file, member.value(), header.metadata);
    } else {
      header.tensors.push_back(header_tensor(file, std::move(key), member.value()));
    }
  }
  return header;
}

}  // namespace izwi::io::detail
