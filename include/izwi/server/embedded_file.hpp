#pragma once
// EmbeddedFile: a file compiled into the program, served as it is (the web
// playground's page, styles and scripts; Server::serve_web_ui).
// cmake/izwiEmbedFiles.cmake generates the tables; this header is all a
// generated source includes, so it stays free of Beast and Asio.

#include <string_view>

namespace izwi::server {

struct EmbeddedFile {
  /// The URL path it answers: "/" for the page, "/ui/<name>" for the rest.
  std::string_view path;
  /// Its Content-Type ("text/javascript; charset=utf-8").
  std::string_view content_type;
  /// Its bytes (static storage).
  std::string_view body;
  /// The first 16 hex digits of the SHA-256 of `body`: the ETag, and the
  /// `?v=` with which the page links this exact version.
  std::string_view digest;
};

}  // namespace izwi::server
