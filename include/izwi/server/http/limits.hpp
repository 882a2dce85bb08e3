#pragma once
// Limits of the HTTP layer: how much a client may send, how long it may take,
// how many connections it may hold. Defaults suit an operator's server;
// tests shrink the timeouts to milliseconds.

#include <chrono>
#include <cstddef>
#include <cstdint>

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
  /// Open connections; the next one is answered 503 and closed. The server
  /// lowers it to what the process's open-file limit leaves room for
  /// (connection_limit_for).
  std::size_t max_connections = 1024;
  /// Bytes a connection may have read and not yet parsed: pipelined requests
  /// waiting their turn, and the longest chunk-size line (with extensions) or
  /// trailer a chunked body may send. Beyond, pipelined bytes wait in the
  /// kernel and an over-long chunk line is answered 400.
  std::size_t max_buffered_bytes = 64 * 1024;
  /// Longest chunk extension (";name=value" after a chunk size) accepted.
  std::size_t max_chunk_extension_bytes = 1024;
};

/// Descriptors kept free for everything but client connections: the
/// listening socket, model files, engine and Asio internals, logs.
inline constexpr std::size_t reserved_file_descriptors = 64;

/// The connections a server can hold when the process may open `fd_limit`
/// files: `requested`, or fewer so that accepting never fails for want of a
/// descriptor (which would leave clients unanswered instead of refused with
/// 503). At least 1.
inline std::size_t connection_limit_for(std::size_t requested, std::uint64_t fd_limit) noexcept {
  if (fd_limit <= reserved_file_descriptors + 1) return 1;
  const std::uint64_t room = fd_limit - reserved_file_descriptors;
  return requested < room ? requested : static_cast<std::size_t>(room);
}

}  // namespace izwi::server::http
