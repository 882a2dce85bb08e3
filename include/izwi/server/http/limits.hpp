#pragma once
// Limits of the HTTP layer: how much a client may send, how long it may take,
// how many connections it may hold. Defaults suit an operator's server;
// tests shrink the timeouts to milliseconds.

#include <chrono>
#include <cstddef>

namespace izwi::server::http {

struct Limits {
  /// Largest request body; a bigger one is answered 413 without reading it
  /// (Content-Length) or as soon as it passes the limit (chunked). 25 MB
  /// holds OpenAI's largest audio upload.
  std::size_t max_body_bytes = std::size_t{25} << 20;
  /// Largest request line plus headers; beyond it, 431.
  std::size_t max_header_bytes = 16 * 1024;
  /// From a request's first byte to the end of its headers. A client that
  /// trickles a header (slow loris) is disconnected when it runs out.
  std::chrono::milliseconds header_timeout{10'000};
  /// For the whole body, after the headers.
  std::chrono::milliseconds body_timeout{60'000};
  /// A connection waiting for its next request (keep-alive) is closed after this.
  std::chrono::milliseconds idle_timeout{30'000};
  /// One write of a response (a client that stops reading is dropped).
  std::chrono::milliseconds write_timeout{60'000};
  /// Open connections; the next one is answered 503 and closed.
  std::size_t max_connections = 1024;
};

}  // namespace izwi::server::http
