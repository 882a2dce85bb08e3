#pragma once
// The web playground's routes: GET / (the page) and GET /ui/<name> (its
// styles and scripts), answered from files compiled into the program.
// izwi-server embeds the repository's ui/ folder at build time
// (cmake/izwiEmbedFiles.cmake) and serves it unless started with --no-ui.
//
//   serve_web_ui(server, izwi_web_ui_files());   // before server.start()
//
// The routes are open (no API key): the page asks for the key itself and
// holds nothing secret. Every answer carries
//   Content-Type             the file's (from its extension, at build time)
//   ETag                     "<digest>"; a GET with If-None-Match naming it
//                            is answered 304 Not Modified, without the body
//   Cache-Control            "no-cache" (use it, but revalidate first) for the
//                            page and for a file asked for without its
//                            current ?v=<digest>; a file asked for with it —
//                            as the page links them — is "public,
//                            max-age=31536000, immutable": its URL changes
//                            when the file does
//   Content-Security-Policy  web_ui_content_security_policy
//   X-Content-Type-Options   nosniff; Referrer-Policy: no-referrer
// An unknown /ui/ path is the server's usual 404 (OpenAI's error envelope).

#include <span>
#include <string_view>

#include "izwi/server/embedded_file.hpp"
#include "izwi/server/server.hpp"

namespace izwi::server {

/// The playground's policy: its own scripts and styles only (no inline code,
/// nothing from another origin), requests to this server only, audio from
/// blob: URLs (the uploaded and recorded clips), no plugins, no framing, no
/// form posts, no <base>.
inline constexpr std::string_view web_ui_content_security_policy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "media-src 'self' blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'";

/// Adds a GET route (open) for each of `files`, which must outlive the
/// server (the generated tables are static). Call before server.start().
void serve_web_ui(Server& server, std::span<const EmbeddedFile> files);

/// The answer to a GET of `file` at `target` (path and query) whose
/// If-None-Match header is `if_none_match`: what the routes send, exposed so
/// it can be tested without a socket.
http::Response web_ui_response(const EmbeddedFile& file, std::string_view target, std::string_view if_none_match,
                               unsigned version = 11);

}  // namespace izwi::server

#include "izwi/server/impl/web_ui.hpp"
