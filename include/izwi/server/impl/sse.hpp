#pragma once

#include <cstddef>

namespace izwi::server::sse {

namespace detail {

/// Appends `text` with every CR, LF and CRLF replaced by `replacement`.
inline void append_single_line(std::string& out, std::string_view text, char replacement) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\r') {
      out += replacement;
      if (i + 1 < text.size() && text[i + 1] == '\n') ++i;
    } else if (c == '\n') {
      out += replacement;
    } else {
      out += c;
    }
  }
}

}  // namespace detail

inline void append_data(std::string& out, std::string_view payload) {
  out.reserve(out.size() + payload.size() + 8);
  out += "data: ";
  for (std::size_t i = 0; i < payload.size(); ++i) {
    const char c = payload[i];
    if (c == '\r' || c == '\n') {
      if (c == '\r' && i + 1 < payload.size() && payload[i + 1] == '\n') ++i;
      out += "\ndata: ";
    } else {
      out += c;
    }
  }
  out += "\n\n";
}

inline std::string data(std::string_view payload) {
  std::string out;
  append_data(out, payload);
  return out;
}

inline std::string event(std::string_view name, std::string_view payload) {
  std::string out = "event: ";
  detail::append_single_line(out, name, ' ');
  out += '\n';
  append_data(out, payload);
  return out;
}

inline std::string comment(std::string_view text) {
  std::string out = ": ";
  detail::append_single_line(out, text, ' ');
  out += "\n\n";
  return out;
}

}  // namespace izwi::server::sse
