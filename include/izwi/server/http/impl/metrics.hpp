#pragma once
// HttpMetrics bodies. Included by izwi/server/http/metrics.hpp.

#include <cstdio>

namespace izwi::server::http {

namespace detail {

/// A label value escaped as the text format wants (\\, \", \n).
inline void append_label_value(std::string& out, std::string_view value) {
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
}

inline void append_number(std::string& out, double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", value);
  out += buf;
}

}  // namespace detail

inline std::string_view HttpMetrics::method_label(std::string_view method) noexcept {
  static constexpr std::string_view known[] = {"GET",     "HEAD",    "POST",  "PUT", "DELETE",
                                               "CONNECT", "OPTIONS", "TRACE", "PATCH", "-"};
  for (std::string_view m : known)
    if (m == method) return m;
  return "OTHER";
}

inline void HttpMetrics::observe(std::string_view raw_method, std::string_view route, unsigned status,
                                 double seconds) {
  const std::string_view method = method_label(raw_method);
  std::lock_guard lock(mutex_);
  auto key = std::make_tuple(std::string(method), std::string(route), status);
  ++requests_[std::move(key)];
  Latency& l = latency_[{std::string(method), std::string(route)}];
  std::size_t i = 0;
  while (i < latency_buckets.size() && seconds > latency_buckets[i]) ++i;
  ++l.buckets[i];
  ++l.count;
  l.sum += seconds;
}

inline std::uint64_t HttpMetrics::count(std::string_view route, unsigned status) const {
  std::lock_guard lock(mutex_);
  std::uint64_t n = 0;
  for (const auto& [key, value] : requests_)
    if (std::get<1>(key) == route && std::get<2>(key) == status) n += value;
  return n;
}

inline void HttpMetrics::observe_time_to_first_audio(double seconds) {
  std::lock_guard lock(mutex_);
  std::size_t bucket = 0;
  while (bucket < latency_buckets.size() && seconds > latency_buckets[bucket]) ++bucket;
  ++first_audio_.buckets[bucket];
  ++first_audio_.count;
  first_audio_.sum += seconds;
}

inline std::string HttpMetrics::prometheus_text() const {
  std::string out;
  out.reserve(4096);
  std::lock_guard lock(mutex_);
  out += "# HELP izwi_http_requests_total HTTP requests answered, by method, route and status.\n";
  out += "# TYPE izwi_http_requests_total counter\n";
  for (const auto& [key, value] : requests_) {
    out += "izwi_http_requests_total{method=\"";
    detail::append_label_value(out, std::get<0>(key));
    out += "\",route=\"";
    detail::append_label_value(out, std::get<1>(key));
    out += "\",status=\"" + std::to_string(std::get<2>(key)) + "\"} " + std::to_string(value) + "\n";
  }
  out += "# HELP izwi_http_request_duration_seconds Time from a request's header to its last response byte.\n";
  out += "# TYPE izwi_http_request_duration_seconds histogram\n";
  for (const auto& [key, l] : latency_) {
    std::string labels = "method=\"";
    detail::append_label_value(labels, key.first);
    labels += "\",route=\"";
    detail::append_label_value(labels, key.second);
    labels += "\"";
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i <= latency_buckets.size(); ++i) {
      cumulative += l.buckets[i];
      out += "izwi_http_request_duration_seconds_bucket{" + labels + ",le=\"";
      if (i < latency_buckets.size()) detail::append_number(out, latency_buckets[i]);
      else out += "+Inf";
      out += "\"} " + std::to_string(cumulative) + "\n";
    }
    out += "izwi_http_request_duration_seconds_sum{" + labels + "} ";
    detail::append_number(out, l.sum);
    out += "\nizwi_http_request_duration_seconds_count{" + labels + "} " + std::to_string(l.count) + "\n";
  }
  out += "# HELP izwi_http_speech_time_to_first_audio_seconds Time from a streamed speech request's header to its "
         "first audio.\n";
  out += "# TYPE izwi_http_speech_time_to_first_audio_seconds histogram\n";
  {
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i <= latency_buckets.size(); ++i) {
      cumulative += first_audio_.buckets[i];
      out += "izwi_http_speech_time_to_first_audio_seconds_bucket{le=\"";
      if (i < latency_buckets.size()) detail::append_number(out, latency_buckets[i]);
      else out += "+Inf";
      out += "\"} " + std::to_string(cumulative) + "\n";
    }
    out += "izwi_http_speech_time_to_first_audio_seconds_sum ";
    detail::append_number(out, first_audio_.sum);
    out += "\nizwi_http_speech_time_to_first_audio_seconds_count " + std::to_string(first_audio_.count) + "\n";
  }
  out += "# HELP izwi_http_requests_in_progress HTTP requests being answered now.\n";
  out += "# TYPE izwi_http_requests_in_progress gauge\n";
  out += "izwi_http_requests_in_progress " + std::to_string(in_progress_.load(std::memory_order_relaxed)) + "\n";
  out += "# HELP izwi_http_connections_open Client connections open now.\n";
  out += "# TYPE izwi_http_connections_open gauge\n";
  out += "izwi_http_connections_open " + std::to_string(connections_.load(std::memory_order_relaxed)) + "\n";
  out += "# HELP izwi_http_connections_rejected_total Connections refused because the connection limit was reached.\n";
  out += "# TYPE izwi_http_connections_rejected_total counter\n";
  out += "izwi_http_connections_rejected_total " + std::to_string(rejected_.load(std::memory_order_relaxed)) + "\n";
  out += "# HELP izwi_http_handler_exceptions_total Exceptions caught on I/O threads (each closed its connection).\n";
  out += "# TYPE izwi_http_handler_exceptions_total counter\n";
  out += "izwi_http_handler_exceptions_total " + std::to_string(exceptions_.load(std::memory_order_relaxed)) + "\n";
  return out;
}

}  // namespace izwi::server::http
