#pragma once
// HTTP metrics of izwi-server, in the Prometheus text format beside the
// engines' own (/metrics):
//
//   izwi_http_requests_total{method, route, status}        counter
//   izwi_http_request_duration_seconds{method, route}     histogram
//   izwi_http_requests_in_progress                         gauge
//   izwi_http_connections_open                             gauge
//   izwi_http_connections_rejected_total                   counter (over --max-connections)
//   izwi_http_handler_exceptions_total                     counter (caught on I/O threads)
//   izwi_http_speech_time_to_first_audio_seconds           histogram (streamed /v1/audio/speech:
//                                                          request header to first audio byte queued)
//
// "route" is the route's pattern ("/v1/models/{id}"), never the raw path, and
// "method" one of the methods of RFC 9110 (others count as "OTHER"), so a
// scanner probing random URLs or inventing methods cannot grow the label set:
// every path that matches no route counts as route="unmatched".
//
// The names use '_' (not vLLM's "prefix:" style) because promtool's linter
// refuses ':' in names that are not recording rules.

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

namespace izwi::server::http {

class HttpMetrics {
 public:
  /// Latency bucket bounds in seconds (prometheus-fastapi-instrumentator's,
  /// which vLLM's server exposes, extended for long generations).
  static constexpr std::array<double, 14> latency_buckets{0.005, 0.01, 0.025, 0.05, 0.1,  0.25,  0.5,
                                                          1.0,   2.5,  5.0,   10.0, 30.0, 60.0, 300.0};

  /// One finished request (response written, or the client went away).
  /// A method outside RFC 9110's is recorded as "OTHER".
  void observe(std::string_view method, std::string_view route, unsigned status, double seconds);
  /// The method's label: itself when RFC 9110 defines it, else "OTHER" ("-"
  /// stays: a connection refused before any request).
  static std::string_view method_label(std::string_view method) noexcept;

  void request_started() noexcept { in_progress_.fetch_add(1, std::memory_order_relaxed); }
  void request_finished() noexcept { in_progress_.fetch_sub(1, std::memory_order_relaxed); }
  void connection_opened() noexcept { connections_.fetch_add(1, std::memory_order_relaxed); }
  void connection_closed() noexcept { connections_.fetch_sub(1, std::memory_order_relaxed); }
  void connection_rejected() noexcept { rejected_.fetch_add(1, std::memory_order_relaxed); }
  void handler_exception() noexcept { exceptions_.fetch_add(1, std::memory_order_relaxed); }
  /// A streamed speech answer's first audio went out `seconds` after its request arrived.
  void observe_time_to_first_audio(double seconds);
  std::uint64_t handler_exceptions() const noexcept { return exceptions_.load(std::memory_order_relaxed); }

  std::int64_t requests_in_progress() const noexcept { return in_progress_.load(std::memory_order_relaxed); }
  std::int64_t connections_open() const noexcept { return connections_.load(std::memory_order_relaxed); }
  /// Requests counted so far with this route and status (tests).
  std::uint64_t count(std::string_view route, unsigned status) const;

  /// The metrics in Prometheus text format (version 0.0.4).
  std::string prometheus_text() const;

 private:
  struct Latency {
    std::array<std::uint64_t, latency_buckets.size() + 1> buckets{};
    std::uint64_t count = 0;
    double sum = 0.0;
  };
  mutable std::mutex mutex_;
  std::map<std::tuple<std::string, std::string, unsigned>, std::uint64_t, std::less<>> requests_;
  std::map<std::pair<std::string, std::string>, Latency, std::less<>> latency_;
  Latency first_audio_;
  std::atomic<std::int64_t> in_progress_{0};
  std::atomic<std::int64_t> connections_{0};
  std::atomic<std::uint64_t> rejected_{0};
  std::atomic<std::uint64_t> exceptions_{0};
};

}  // namespace izwi::server::http

#include "izwi/server/http/impl/metrics.hpp"
