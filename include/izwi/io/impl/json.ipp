#pragma once
// Bodies of include/izwi/io/json.hpp, but parse_json's: that one is defined
// after Boost.JSON's parser handler, in detail/json_reader.hpp, so that each
// header compiles on its own whichever is included first.
// Inline in header-only builds; compiled once, in <izwi/io/src.hpp>, under
// IZWI_SEPARATE_COMPILATION (see izwi/config.hpp).

#include <boost/json/serialize.hpp>

#include <fstream>
#include <limits>
#include <system_error>
#include <utility>

namespace izwi::io {

IZWI_DECL json_error::json_error(std::string file, std::size_t line, std::size_t column, const std::string& problem,
                              std::size_t offset)
    : izwi::error(file + ": invalid JSON at line " + std::to_string(line) + ", column " + std::to_string(column) + ": " +
                  problem),
      file_(std::move(file)),
      line_(line),
      column_(column),
      offset_(offset),
      problem_(problem) {}

IZWI_DECL JsonValue read_json_file(const std::filesystem::path& path, boost::json::storage_ptr storage) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) throw izwi::error(path.string() + ": cannot read: " + ec.message());
  if (size > json_max_file_bytes)
    throw izwi::error(path.string() + ": " + std::to_string(size) + " bytes, larger than the " +
                      std::to_string(json_max_file_bytes) + "-byte limit for a JSON file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw izwi::error(path.string() + ": cannot open");
  std::string text(static_cast<std::size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(size));
  if (static_cast<std::uintmax_t>(in.gcount()) != size) throw izwi::error(path.string() + ": short read");
  return parse_json(text, path.string(), std::move(storage));
}

IZWI_DECL std::string json_quote(std::string_view text) {
  return boost::json::serialize(boost::json::string_view(text.data(), text.size()));
}

IZWI_DECL const JsonValue* json_find(const JsonValue& value, std::string_view key) noexcept {
  const JsonObject* object = value.if_object();
  return object == nullptr ? nullptr : object->if_contains(boost::json::string_view(key.data(), key.size()));
}

IZWI_DECL std::optional<std::int64_t> json_integer(const JsonValue& value) noexcept {
  if (const auto* i = value.if_int64()) return *i;
  if (const auto* u = value.if_uint64(); u != nullptr && *u <= static_cast<std::uint64_t>(INT64_MAX))
    return static_cast<std::int64_t>(*u);
  return std::nullopt;
}

IZWI_DECL std::optional<double> json_number(const JsonValue& value) noexcept {
  if (const auto* d = value.if_double()) return *d;
  if (const auto* i = value.if_int64()) return static_cast<double>(*i);
  if (const auto* u = value.if_uint64()) return static_cast<double>(*u);
  return std::nullopt;
}

IZWI_DECL std::optional<std::string_view> json_string(const JsonValue& value) noexcept {
  if (const auto* s = value.if_string()) return std::string_view(s->data(), s->size());
  return std::nullopt;
}

IZWI_DECL std::string json_kind_phrase(const JsonValue& value) {
  switch (value.kind()) {
    case boost::json::kind::null: return "null";
    case boost::json::kind::bool_: return "a boolean";
    case boost::json::kind::int64:
    case boost::json::kind::uint64:
    case boost::json::kind::double_: return "a number";
    case boost::json::kind::string: return "a string";
    case boost::json::kind::array: return "an array";
    case boost::json::kind::object: return "an object";
  }
  return "unknown";
}

}  // namespace izwi::io

#include <izwi/io/detail/json_reader.hpp>
