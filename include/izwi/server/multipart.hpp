#pragma once
// multipart/form-data (RFC 7578, framing from RFC 2046 §5.1.1), as OpenAI's
// audio endpoints receive it:
//
//   Content-Type: multipart/form-data; boundary=XyZ
//
//   --XyZ\r\n
//   Content-Disposition: form-data; name="file"; filename="a.wav"\r\n
//   Content-Type: audio/wav\r\n
//   \r\n
//   <bytes>\r\n
//   --XyZ\r\n
//   Content-Disposition: form-data; name="model"\r\n
//   \r\n
//   whisper-1\r\n
//   --XyZ--\r\n
//
// The parser works on the whole body in memory (the HTTP layer has read it,
// within its size limit) and copies no part body: Part::body views the
// request body, which must outlive the parts. It never reads past the body,
// whatever the input (a fuzz target checks that), and reports every
// malformation as ApiError 400 with a message a client can act on: no
// boundary, a truncated body, no final boundary, a part without
// Content-Disposition: form-data or without a name, too many parts, headers
// too large. Duplicate names are kept, in order (OpenAI's
// timestamp_granularities[] arrives that way); a single-valued field sent
// twice is refused by FormData::single.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "izwi/server/api_error.hpp"

namespace izwi::server::multipart {

struct Part {
  /// Content-Disposition's name.
  std::string name;
  /// Content-Disposition's filename, for file fields.
  std::optional<std::string> filename;
  /// The part's Content-Type; "text/plain" when absent (RFC 7578 §4.4).
  std::string content_type = "text/plain";
  /// The part's bytes, a view into the request body.
  std::string_view body;
};

struct Limits {
  /// Parts beyond this are refused (an upload has a file and a few fields).
  std::size_t max_parts = 64;
  /// Bytes of one part's header block, its blank line included.
  std::size_t max_header_bytes = 16 * 1024;
};

struct FormData {
  std::vector<Part> parts;

  /// The first part named `name`, or nullptr.
  const Part* find(std::string_view name) const noexcept;
  /// The part named `name`, or nullptr; ApiError 400 naming the field when
  /// the form holds it more than once. For single-valued fields: a client
  /// that sends one twice has said two things, and which it meant is not for
  /// the server to guess (the first, or the last as FastAPI's forms take it).
  const Part* single(std::string_view name) const;
  /// Every part named `name`, in order.
  std::vector<const Part*> find_all(std::string_view name) const;
};

/// The boundary parameter of a multipart/form-data Content-Type (quoted or
/// not, parameter name in any case). 400 when the media type is not
/// multipart/form-data, or the boundary is missing or not 1 to 70 of RFC
/// 2046's characters.
std::string boundary_from_content_type(std::string_view content_type);

/// Parses a body framed by `boundary` (without the leading "--").
FormData parse(std::string_view body, std::string_view boundary, const Limits& limits = {});

/// boundary_from_content_type, then parse.
FormData parse_form_data(std::string_view content_type, std::string_view body, const Limits& limits = {});

}  // namespace izwi::server::multipart

#include "izwi/server/impl/multipart.hpp"
