#pragma once
// Router: maps (method, path) to a handler. Patterns are literal segments
// and `{name}` placeholders that match one non-empty segment:
//
//   router.add("GET",  "/v1/models/{id}", handler);
//   router.add("POST", "/v1/admin/models/{id}/load", handler);
//
// A path that matches some pattern under another method is a 405 (with the
// methods that would do, for the Allow header), one that matches nothing a
// 404. Placeholders are percent-decoded; the query string is ignored. No
// Beast here: methods are the strings of the request line.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace izwi::server::http {

/// Percent-decodes `in`; nullopt for a malformed escape or a decoded NUL.
inline std::optional<std::string> percent_decode(std::string_view in) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out += in[i];
      continue;
    }
    if (i + 2 >= in.size()) return std::nullopt;
    const int hi = hex(in[i + 1]), lo = hex(in[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    const char c = static_cast<char>(hi * 16 + lo);
    if (c == '\0') return std::nullopt;
    out += c;
    i += 2;
  }
  return out;
}

/// The path of a request target: everything before '?' or '#'.
inline std::string_view target_path(std::string_view target) noexcept {
  const auto end = target.find_first_of("?#");
  return end == std::string_view::npos ? target : target.substr(0, end);
}

template <class Handler>
class Router {
 public:
  struct Match {
    const Handler* handler = nullptr;
    /// The pattern that matched ("/v1/models/{id}"): the metrics' route label.
    std::string_view pattern;
    /// Placeholder values in pattern order, percent-decoded.
    std::vector<std::pair<std::string_view, std::string>> params;

    /// The value of placeholder `name` (empty when there is none).
    const std::string& param(std::string_view name) const {
      static const std::string none;
      for (const auto& [key, value] : params)
        if (key == name) return value;
      return none;
    }
  };
  struct Result {
    enum class Kind { found, method_not_allowed, not_found } kind = Kind::not_found;
    Match match;
    /// For method_not_allowed: the methods the path accepts ("GET, POST").
    std::string allow;
  };

  /// Adds a route; a second add of the same method and pattern replaces the
  /// handler. Patterns and handlers are referenced by route(): add every
  /// route before routing.
  void add(std::string method, std::string pattern, Handler handler) {
    for (Route& r : routes_)
      if (r.method == method && r.pattern == pattern) {
        r.handler = std::move(handler);
        return;
      }
    Route r{std::move(method), std::move(pattern), {}, std::move(handler)};
    for (std::string_view s : split(r.pattern)) r.segments.emplace_back(s);
    routes_.push_back(std::move(r));
  }

  Result route(std::string_view method, std::string_view target) const {
    Result result;
    const std::vector<std::string_view> parts = split(target_path(target));
    for (const Route& r : routes_) {
      std::vector<std::pair<std::string_view, std::string>> params;
      if (!matches(r, parts, params)) continue;
      if (r.method == method) {
        result.kind = Result::Kind::found;
        result.match = Match{&r.handler, r.pattern, std::move(params)};
        result.allow.clear();
        return result;
      }
      result.kind = Result::Kind::method_not_allowed;
      if (result.allow.find(r.method) == std::string::npos) {
        if (!result.allow.empty()) result.allow += ", ";
        result.allow += r.method;
      }
    }
    return result;
  }

 private:
  struct Route {
    std::string method;
    std::string pattern;
    std::vector<std::string> segments;
    Handler handler;
  };

  static std::vector<std::string_view> split(std::string_view path) {
    std::vector<std::string_view> out;
    std::size_t i = 0;
    while (i < path.size()) {
      if (path[i] == '/') {
        ++i;
        continue;
      }
      const std::size_t end = path.find('/', i);
      const std::size_t stop = end == std::string_view::npos ? path.size() : end;
      out.push_back(path.substr(i, stop - i));
      i = stop;
    }
    return out;
  }

  static bool matches(const Route& r, const std::vector<std::string_view>& parts,
                      std::vector<std::pair<std::string_view, std::string>>& params) {
    if (r.segments.size() != parts.size()) return false;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const std::string_view seg = r.segments[i];
      // The name is a view into the route's pattern, which lives as long as the router.
      if (seg.size() >= 2 && seg.front() == '{' && seg.back() == '}') {
        std::optional<std::string> value = percent_decode(parts[i]);
        if (!value || value->empty()) return false;
        params.emplace_back(std::string_view(r.pattern).substr(r.pattern.find(seg) + 1, seg.size() - 2),
                            std::move(*value));
      } else if (seg != parts[i]) {
        return false;
      }
    }
    return true;
  }

  std::vector<Route> routes_;
};

}  // namespace izwi::server::http
