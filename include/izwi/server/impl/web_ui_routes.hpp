#pragma once
// The web playground's routes (Server::serve_web_ui): bodies. Part of the
// Server bodies; included by impl/server.hpp.

#include "izwi/server/impl/server_common.hpp"

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/status.hpp>

namespace izwi::server {

namespace detail {

/// The playground's policy: its own scripts and styles only (no inline code,
/// nothing from another origin), requests to this server only, audio from
/// blob: URLs (the uploaded and recorded clips), no plugins, no framing, no
/// form posts, no <base>.
inline constexpr std::string_view web_ui_content_security_policy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "media-src 'self' blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'";

/// True when an If-None-Match value ("a", W/"a", a list of them, or *) names `etag`.
inline bool if_none_match_names(std::string_view header, std::string_view etag) noexcept {
  while (!header.empty()) {
    const std::size_t comma = header.find(',');
    std::string_view tag = header.substr(0, comma);
    header = comma == std::string_view::npos ? std::string_view{} : header.substr(comma + 1);
    while (!tag.empty() && (tag.front() == ' ' || tag.front() == '\t')) tag.remove_prefix(1);
    while (!tag.empty() && (tag.back() == ' ' || tag.back() == '\t')) tag.remove_suffix(1);
    if (tag == "*") return true;
    // Weak comparison (RFC 9110 §13.1.2): W/ does not matter here.
    if (tag.substr(0, 2) == "W/") tag.remove_prefix(2);
    if (tag == etag) return true;
  }
  return false;
}

/// The value of `name` in the query of `target`, or empty.
inline std::string_view query_value(std::string_view target, std::string_view name) noexcept {
  const std::size_t q = target.find('?');
  if (q == std::string_view::npos) return {};
  std::string_view query = target.substr(q + 1);
  query = query.substr(0, query.find('#'));
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (pair.size() > name.size() && pair.substr(0, name.size()) == name && pair[name.size()] == '=')
      return pair.substr(name.size() + 1);
  }
  return {};
}

/// The answer to a GET of `file` at `target` (path and query) whose
/// If-None-Match header is `if_none_match` (the headers: Server::serve_web_ui).
inline http::Response web_ui_response(const EmbeddedFile& file, std::string_view target,
                                      std::string_view if_none_match, unsigned version) {
  namespace bhttp = boost::beast::http;
  const std::string etag = "\"" + std::string(file.digest) + "\"";
  const bool not_modified = detail::if_none_match_names(if_none_match, etag);
  http::Response res{not_modified ? bhttp::status::not_modified : bhttp::status::ok, version};
  // The page is never cached blindly (a new build must show at once); a
  // file named by its digest can be, for good.
  const bool versioned = file.path != "/" && !file.digest.empty() && detail::query_value(target, "v") == file.digest;
  res.set(bhttp::field::cache_control, versioned ? "public, max-age=31536000, immutable" : "no-cache");
  res.set(bhttp::field::etag, etag);
  res.set(bhttp::field::content_type, file.content_type);
  res.set("Content-Security-Policy", web_ui_content_security_policy);
  res.set("X-Content-Type-Options", "nosniff");
  res.set("Referrer-Policy", "no-referrer");
  if (!not_modified) res.body().assign(file.body.data(), file.body.size());
  return res;
}

}  // namespace detail

IZWI_DECL void Server::serve_web_ui(std::span<const EmbeddedFile> files) {
  for (const EmbeddedFile& file : files) {
    add_route(
        "GET", std::string(file.path),
        [&file](HandlerContext& ctx) {
          ctx.session->respond(detail::web_ui_response(file, ctx.request.target(),
                                               ctx.request[boost::beast::http::field::if_none_match],
                                               ctx.request.version()));
        },
        RouteAccess::open);
  }
}

}  // namespace izwi::server
