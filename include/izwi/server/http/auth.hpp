#pragma once
// API-key checks for izwi-server: `Authorization: Bearer KEY`, compared in
// constant time so a client cannot learn a key byte by byte from response
// timings. No Beast here: the session hands the header value in.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace izwi::server::http {

/// True when `a` and `b` are equal. The time taken depends on the lengths
/// only, never on where the first difference is.
inline bool constant_time_equal(std::string_view a, std::string_view b) noexcept {
  // Walk the longer length so a short guess does not finish early; the
  // length difference is folded into the result.
  const std::size_t n = a.size() > b.size() ? a.size() : b.size();
  unsigned char diff = static_cast<unsigned char>(a.size() != b.size());
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  // A volatile read keeps the compiler from turning the loop into an early exit.
  volatile unsigned char result = diff;
  return result == 0;
}

/// The token of an `Authorization: Bearer <token>` header value (scheme
/// case-insensitive, surrounding blanks ignored); empty when it is not one.
inline std::string_view bearer_token(std::string_view header) noexcept {
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
  };
  header = trim(header);
  constexpr std::string_view scheme = "bearer";
  if (header.size() <= scheme.size()) return {};
  for (std::size_t i = 0; i < scheme.size(); ++i) {
    char c = header[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != scheme[i]) return {};
  }
  if (header[scheme.size()] != ' ' && header[scheme.size()] != '\t') return {};
  return trim(header.substr(scheme.size()));
}

/// The keys a server accepts. Empty: every request is allowed.
class ApiKeys {
 public:
  ApiKeys() = default;
  explicit ApiKeys(std::vector<std::string> keys) : keys_(std::move(keys)) {
    std::erase_if(keys_, [](const std::string& k) { return k.empty(); });
  }

  bool enabled() const noexcept { return !keys_.empty(); }

  /// Checks an Authorization header value. Every key is compared (no early
  /// exit on a match), so timing does not tell which key matched either.
  bool allows(std::string_view authorization_header) const noexcept {
    if (keys_.empty()) return true;
    const std::string_view token = bearer_token(authorization_header);
    bool ok = false;
    for (const std::string& key : keys_) ok |= constant_time_equal(token, key) && !token.empty();
    return ok;
  }

 private:
  std::vector<std::string> keys_;
};

}  // namespace izwi::server::http
