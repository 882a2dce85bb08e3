#pragma once
// Request ids: a client's X-Request-Id is honoured when it is safe to echo
// and log (printable ASCII, no blanks, at most 128 bytes); otherwise the
// server makes one. Every response carries it back in X-Request-Id, and the
// access log prints it, so a client's report can be matched to a log line.

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>

namespace izwi::server::http {

/// True when `id` may be echoed in a header and written to the log as is.
inline bool acceptable_request_id(std::string_view id) noexcept {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id)
    if (c <= ' ' || c > '~' || c == '"' || c == '\\') return false;
  return true;
}

/// A fresh id: 32 hex digits (128 bits) from a per-process random base and a
/// counter, unique within the process and unlikely to repeat across restarts.
inline std::string make_request_id() {
  static const std::uint64_t base = [] {
    std::random_device rd;
    const std::uint64_t hi = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
    return hi ^ static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  }();
  static std::atomic<std::uint64_t> counter{0};
  std::uint64_t x = counter.fetch_add(1, std::memory_order_relaxed) + 1;
  // splitmix64 scrambles the counter so ids do not look sequential.
  auto mix = [](std::uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  const std::array<std::uint64_t, 2> words{mix(base ^ x), mix(x * 0xd1342543de82ef95ULL + base)};
  static constexpr char hex[] = "0123456789abcdef";
  std::string out(32, '0');
  for (std::size_t w = 0; w < 2; ++w)
    for (std::size_t i = 0; i < 16; ++i) out[w * 16 + i] = hex[(words[w] >> (60 - 4 * i)) & 0xF];
  return out;
}

/// The client's id when acceptable, else a fresh one.
inline std::string request_id_for(std::string_view client_id) {
  return acceptable_request_id(client_id) ? std::string(client_id) : make_request_id();
}

}  // namespace izwi::server::http
