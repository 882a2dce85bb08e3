#pragma once

#include <algorithm>
#include <functional>
#include <utility>

namespace izwi::server::multipart {

namespace detail {

[[noreturn]] inline void fail(const std::string& message) {
  throw ApiError::bad_request("Malformed multipart/form-data body: " + message);
}

inline char ascii_lower(char c) noexcept { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

inline bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  return true;
}

inline std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

/// RFC 2046's bchars (space allowed, but not last).
inline bool is_valid_boundary(std::string_view b) noexcept {
  if (b.empty() || b.size() > 70 || b.back() == ' ') return false;
  for (char c : b) {
    const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    std::string_view("'()+_,-./:=? ").find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

struct Parameter {
  std::string name;  ///< lower case
  std::string value;
};

/// Splits `value` into its first token ("form-data", "multipart/form-data")
/// and its ";"-separated parameters: name=token or name="quoted string".
/// Inside quotes, a backslash escapes '"' and '\' (curl writes them so;
/// browsers percent-encode '"' and send '\' as is, which is kept).
/// Returns false on an unterminated quote or a parameter without '='.
inline bool split_parameters(std::string_view value, std::string_view& type, std::vector<Parameter>& parameters) {
  std::size_t pos = value.find(';');
  type = trim(value.substr(0, pos));
  while (pos != std::string_view::npos && pos < value.size()) {
    ++pos;  // past ';'
    while (pos < value.size() && (value[pos] == ' ' || value[pos] == '\t')) ++pos;
    if (pos == value.size()) break;  // a trailing ';'
    const std::size_t equals = value.find('=', pos);
    const std::size_t semicolon = value.find(';', pos);
    if (equals == std::string_view::npos || (semicolon != std::string_view::npos && semicolon < equals)) return false;
    Parameter parameter;
    for (char c : trim(value.substr(pos, equals - pos))) parameter.name += ascii_lower(c);
    pos = equals + 1;
    while (pos < value.size() && (value[pos] == ' ' || value[pos] == '\t')) ++pos;
    if (pos < value.size() && value[pos] == '"') {
      ++pos;
      bool closed = false;
      while (pos < value.size()) {
        const char c = value[pos++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c == '\\' && pos < value.size() && (value[pos] == '"' || value[pos] == '\\')) {
          parameter.value += value[pos++];
          continue;
        }
        parameter.value += c;
      }
      if (!closed) return false;
      pos = value.find(';', pos);
    } else {
      const std::size_t end = value.find(';', pos);
      parameter.value = trim(value.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos));
      pos = end;
    }
    parameters.push_back(std::move(parameter));
  }
  return true;
}

/// Reads one part's header block (lines separated by CRLF, no blank line).
inline void parse_part_headers(std::string_view block, std::size_t index, Part& part) {
  const std::string where = "part " + std::to_string(index + 1);
  bool has_disposition = false;
  std::size_t pos = 0;
  while (pos < block.size()) {
    std::size_t end = block.find("\r\n", pos);
    if (end == std::string_view::npos) end = block.size();
    const std::string_view line = block.substr(pos, end - pos);
    pos = end + 2;
    if (line.empty()) continue;
    if (line.front() == ' ' || line.front() == '\t') fail(where + " has a folded header line (not allowed)");
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) fail(where + " has a header line without a name and ':'");
    const std::string_view name = line.substr(0, colon);
    const std::string_view value = trim(line.substr(colon + 1));
    if (iequals(name, "Content-Disposition")) {
      if (has_disposition) fail(where + " has two Content-Disposition headers");
      has_disposition = true;
      std::string_view type;
      std::vector<Parameter> parameters;
      if (!split_parameters(value, type, parameters)) fail(where + " has a malformed Content-Disposition header");
      if (!iequals(type, "form-data")) fail(where + "'s Content-Disposition is not form-data");
      bool has_name = false;
      for (auto& p : parameters) {
        if (p.name == "name" && !has_name) {
          part.name = std::move(p.value);
          has_name = true;
        } else if (p.name == "filename" && !part.filename) {
          part.filename = std::move(p.value);
        }
      }
      if (!has_name) part.name.clear();
    } else if (iequals(name, "Content-Type")) {
      if (!value.empty()) part.content_type = std::string(value);
    }
  }
  if (!has_disposition) fail(where + " has no Content-Disposition: form-data header");
  if (part.name.empty()) fail(where + "'s Content-Disposition has no name");
}

}  // namespace detail

inline const Part* FormData::find(std::string_view name) const noexcept {
  for (const Part& part : parts)
    if (part.name == name) return &part;
  return nullptr;
}

inline const Part* FormData::single(std::string_view name) const {
  const Part* found = nullptr;
  std::size_t count = 0;
  for (const Part& part : parts) {
    if (part.name != name) continue;
    if (!found) found = &part;
    ++count;
  }
  if (count > 1)
    throw ApiError::bad_request("'" + std::string(name) + "' is given " + std::to_string(count) +
                                    " times; send it once.",
                                std::string(name));
  return found;
}

inline std::vector<const Part*> FormData::find_all(std::string_view name) const {
  std::vector<const Part*> found;
  for (const Part& part : parts)
    if (part.name == name) found.push_back(&part);
  return found;
}

inline std::string boundary_from_content_type(std::string_view content_type) {
  std::string_view type;
  std::vector<detail::Parameter> parameters;
  const bool well_formed = detail::split_parameters(content_type, type, parameters);
  if (!detail::iequals(type, "multipart/form-data"))
    throw ApiError::bad_request("The request's Content-Type must be multipart/form-data.");
  if (!well_formed) throw ApiError::bad_request("The multipart/form-data Content-Type has malformed parameters.");
  for (const auto& parameter : parameters) {
    if (parameter.name != "boundary") continue;
    if (!detail::is_valid_boundary(parameter.value))
      throw ApiError::bad_request(
          "The multipart/form-data boundary must be 1 to 70 letters, digits or '()+_,-./:=? characters.");
    return parameter.value;
  }
  throw ApiError::bad_request("The multipart/form-data Content-Type has no boundary parameter.");
}

inline FormData parse(std::string_view body, std::string_view boundary, const Limits& limits) {
  using detail::fail;
  if (!detail::is_valid_boundary(boundary)) fail("invalid boundary");
  const std::string delimiter = "\r\n--" + std::string(boundary);
  const std::string_view dash_boundary = std::string_view(delimiter).substr(2);
  // Boyer-Moore: a crafted body cannot make each search cost |body| x |boundary|.
  const std::boyer_moore_searcher searcher(delimiter.begin(), delimiter.end());
  auto find_delimiter = [&](std::size_t from) -> std::size_t {
    const auto it = std::search(body.begin() + static_cast<std::ptrdiff_t>(from), body.end(), searcher);
    return it == body.end() ? std::string_view::npos : static_cast<std::size_t>(it - body.begin());
  };

  // The first boundary opens the body or follows a preamble (ignored).
  std::size_t pos = 0;
  if (body.substr(0, dash_boundary.size()) != dash_boundary) {
    const std::size_t found = find_delimiter(0);
    if (found == std::string_view::npos) fail("the opening boundary '--" + std::string(boundary) + "' is missing");
    pos = found + 2;
  }

  FormData form;
  for (;;) {
    // pos is at "--boundary".
    std::size_t p = pos + dash_boundary.size();
    if (body.substr(p, 2) == "--") return form;  // the close delimiter; an epilogue is ignored
    while (p < body.size() && (body[p] == ' ' || body[p] == '\t')) ++p;  // transport padding
    if (p >= body.size()) fail("the body ends after a boundary, without the final boundary");
    if (body.substr(p, 2) != "\r\n") fail("a boundary is not followed by CRLF");
    p += 2;

    if (form.parts.size() == limits.max_parts)
      fail("more than " + std::to_string(limits.max_parts) + " parts");
    Part part;
    std::size_t content;
    if (body.substr(p, 2) == "\r\n") {  // no headers at all
      detail::parse_part_headers({}, form.parts.size(), part);  // reports the missing Content-Disposition
      content = p + 2;
    } else {
      const std::size_t window = std::min(body.size() - p, limits.max_header_bytes);
      const std::size_t end = body.substr(p, window).find("\r\n\r\n");
      if (end == std::string_view::npos) {
        if (window == limits.max_header_bytes)
          fail("the headers of part " + std::to_string(form.parts.size() + 1) + " exceed " +
               std::to_string(limits.max_header_bytes) + " bytes");
        fail("the body ends inside the headers of part " + std::to_string(form.parts.size() + 1));
      }
      detail::parse_part_headers(body.substr(p, end), form.parts.size(), part);
      content = p + end + 4;
    }
    const std::size_t next = find_delimiter(content);
    if (next == std::string_view::npos)
      fail("the final boundary '--" + std::string(boundary) + "--' is missing (the body is truncated)");
    part.body = body.substr(content, next - content);
    form.parts.push_back(std::move(part));
    pos = next + 2;
  }
}

inline FormData parse_form_data(std::string_view content_type, std::string_view body, const Limits& limits) {
  return parse(body, boundary_from_content_type(content_type), limits);
}

}  // namespace izwi::server::multipart
