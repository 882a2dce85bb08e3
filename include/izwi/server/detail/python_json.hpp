#pragma once
// JSON text as Python's json.dumps writes it with ensure_ascii=False: the
// form of Hugging Face chat templates' `tojson` filter, which is how a
// template writes the request's tool definitions into the prompt. Where it
// differs from Boost.JSON's serializer: ", " between items and ": " after
// keys; floats as Python's repr (1.0, 1e-05, 1e+16); control characters as
// \u00XX in lower-case hex. Keys stay in the order the client sent them and
// text outside ASCII is written as is, as json.dumps does with its defaults
// (sort_keys=False) and ensure_ascii=False.

#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <system_error>

#include <boost/json/value.hpp>

namespace izwi::server::detail {

/// `text` escaped for the inside of a JSON string, as json.dumps escapes it
/// with ensure_ascii=False (and as the server's SSE envelopes need it,
/// openai::append_json_escaped): quote, backslash, \b \f \n \r \t, other
/// control bytes as \u00XX in lower-case hex; everything else as is.
inline void append_escaped_json_text(std::string& out, std::string_view text) {
  static constexpr char hex[] = "0123456789abcdef";
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (u < 0x20) {
          out += "\\u00";
          out += hex[u >> 4];
          out += hex[u & 0xF];
        } else {
          out += c;
        }
    }
  }
}

inline void append_python_json_string(std::string& out, std::string_view text) {
  out += '"';
  append_escaped_json_text(out, text);
  out += '"';
}

/// repr(float) of Python 3: the shortest digits that read back to the same
/// double, in fixed notation for decimal exponents from -4 to 15 (with ".0"
/// when integral), otherwise as d.ddde±XX.
inline void append_python_float(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
    return;
  }
  if (std::isinf(value)) {
    out += value < 0 ? "-Infinity" : "Infinity";
    return;
  }
  std::array<char, 64> buffer{};
  const auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value,
                                       std::chars_format::scientific);
  if (ec != std::errc{}) return;  // cannot happen with 64 bytes
  const std::string_view scientific(buffer.data(), static_cast<std::size_t>(end - buffer.data()));
  const std::size_t e = scientific.find('e');
  const bool negative = scientific.front() == '-';
  std::string digits;  // significant digits, without sign and point
  for (const char c : scientific.substr(negative ? 1 : 0, e - (negative ? 1 : 0)))
    if (c != '.') digits += c;
  const int exponent = std::atoi(std::string(scientific.substr(e + 1)).c_str());
  if (negative) out += '-';
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out += "0.";
      out.append(static_cast<std::size_t>(-exponent - 1), '0');
      out += digits;
    } else if (digits.size() <= static_cast<std::size_t>(exponent) + 1) {
      out += digits;
      out.append(static_cast<std::size_t>(exponent) + 1 - digits.size(), '0');
      out += ".0";
    } else {
      out += digits.substr(0, static_cast<std::size_t>(exponent) + 1);
      out += '.';
      out += digits.substr(static_cast<std::size_t>(exponent) + 1);
    }
    return;
  }
  out += digits.front();
  if (digits.size() > 1) {
    out += '.';
    out += digits.substr(1);
  }
  std::array<char, 16> exponent_text{};
  std::snprintf(exponent_text.data(), exponent_text.size(), "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  out += exponent_text.data();
}

inline void append_python_json(std::string& out, const boost::json::value& value) {
  switch (value.kind()) {
    case boost::json::kind::null: out += "null"; break;
    case boost::json::kind::bool_: out += value.get_bool() ? "true" : "false"; break;
    case boost::json::kind::int64: out += std::to_string(value.get_int64()); break;
    case boost::json::kind::uint64: out += std::to_string(value.get_uint64()); break;
    case boost::json::kind::double_: append_python_float(out, value.get_double()); break;
    case boost::json::kind::string: {
      const auto& s = value.get_string();
      append_python_json_string(out, std::string_view(s.data(), s.size()));
      break;
    }
    case boost::json::kind::array: {
      out += '[';
      bool first = true;
      for (const auto& item : value.get_array()) {
        if (!first) out += ", ";
        first = false;
        append_python_json(out, item);
      }
      out += ']';
      break;
    }
    case boost::json::kind::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, item] : value.get_object()) {
        if (!first) out += ", ";
        first = false;
        append_python_json_string(out, std::string_view(key.data(), key.size()));
        out += ": ";
        append_python_json(out, item);
      }
      out += '}';
      break;
    }
  }
}

/// `value` as json.dumps(value, ensure_ascii=False) writes it.
inline std::string python_json_dumps(const boost::json::value& value) {
  std::string out;
  append_python_json(out, value);
  return out;
}

}  // namespace izwi::server::detail
