#pragma once
// Server-Sent Events framing (WHATWG HTML, "Server-sent events"), as OpenAI
// streams chat and completion chunks:
//
//   data: {"id":"chatcmpl-...","object":"chat.completion.chunk",...}\n\n
//   ...
//   data: [DONE]\n\n
//
// and a comment line as keep-alive (": ping\n\n"), which clients ignore.
//
// An event ends at the first empty line, and CR, LF and CRLF all end a line,
// so a payload holding a line break would end its event early or inject a
// field. data() therefore writes one "data:" line per line of the payload;
// a conforming client joins them back with "\n". Serialized JSON never holds
// a raw line break (Boost.JSON escapes them), so chunks go out on one line;
// the splitting is the guarantee for any other payload.

#include <string>
#include <string_view>

namespace izwi::server::sse {

/// The stream's end, as OpenAI sends it.
inline constexpr std::string_view done = "data: [DONE]\n\n";
/// A comment event that keeps an idle connection (and proxies) alive.
inline constexpr std::string_view keep_alive = ": ping\n\n";
/// The Content-Type of an event stream.
inline constexpr std::string_view content_type = "text/event-stream";

/// Appends one event carrying `payload` as its data.
void append_data(std::string& out, std::string_view payload);
/// One event carrying `payload`: "data: <payload>\n\n".
std::string data(std::string_view payload);
/// One event with an event type: "event: <name>\ndata: <payload>\n\n".
/// Line breaks in `name` are replaced by spaces.
std::string event(std::string_view name, std::string_view payload);
/// A comment line (": <text>\n\n"); line breaks in `text` are replaced by spaces.
std::string comment(std::string_view text);

}  // namespace izwi::server::sse

#include "izwi/server/impl/sse.hpp"
