#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>

namespace izwi {

inline Histogram::Histogram(std::span<const double> upper_bounds)
    : upper_bounds_(upper_bounds.begin(), upper_bounds.end()), counts_(upper_bounds.size() + 1, 0) {}

inline void Histogram::observe(double value) noexcept {
  // Prometheus buckets are "less than or equal": the first bound >= value.
  const auto it = std::lower_bound(upper_bounds_.begin(), upper_bounds_.end(), value);
  ++counts_[static_cast<std::size_t>(it - upper_bounds_.begin())];
  ++count_;
  sum_ += value;
}

inline double Histogram::quantile(double q) const noexcept {
  if (count_ == 0 || upper_bounds_.empty()) return 0.0;
  q = std::clamp(q, 0.0, 1.0);
  const double rank = q * static_cast<double>(count_);
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    const std::uint64_t previous = cumulative;
    cumulative += counts_[i];
    if (static_cast<double>(cumulative) >= rank && counts_[i] > 0) {
      if (i == upper_bounds_.size()) return upper_bounds_.back();  // +Inf bucket
      const double lower = i == 0 ? 0.0 : upper_bounds_[i - 1];
      const double upper = upper_bounds_[i];
      const double within = (rank - static_cast<double>(previous)) / static_cast<double>(counts_[i]);
      return lower + (upper - lower) * within;
    }
  }
  return upper_bounds_.back();
}

namespace detail {

/// Shortest round-trip decimal, as Prometheus clients print floats.
inline void append_number(std::string& out, double value) {
  if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
    return;
  }
  if (std::isnan(value)) {
    out += "NaN";
    return;
  }
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, result.ptr);
}

inline void append_number(std::string& out, std::uint64_t value) {
  char buffer[24];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, result.ptr);
}

/// Label values escape backslash, double quote and newline (exposition format).
inline std::string escape_label_value(std::string_view value) {
  std::string escaped;
  escaped.reserve(value.size());
  for (char c : value) {
    if (c == '\\') escaped += "\\\\";
    else if (c == '"') escaped += "\\\"";
    else if (c == '\n') escaped += "\\n";
    else escaped += c;
  }
  return escaped;
}

class PrometheusWriter {
 public:
  explicit PrometheusWriter(std::string_view model_name)
      : model_label_("model_name=\"" + escape_label_value(model_name) + "\"") {}

  void header(std::string_view name, std::string_view type, std::string_view help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }

  template <class Number>
  void sample(std::string_view name, Number value, std::string_view extra_labels = {}) {
    out_ += name;
    out_ += '{';
    out_ += model_label_;
    if (!extra_labels.empty()) {
      out_ += ',';
      out_ += extra_labels;
    }
    out_ += "} ";
    append_number(out_, value);
    out_ += '\n';
  }

  template <class Number>
  void single(std::string_view name, std::string_view type, std::string_view help, Number value) {
    header(name, type, help);
    sample(name, value);
  }

  void histogram(std::string_view name, std::string_view help, const Histogram& h) {
    header(name, "histogram", help);
    const std::string bucket = std::string(name) + "_bucket";
    std::uint64_t cumulative = 0;
    const auto bounds = h.upper_bounds();
    const auto counts = h.bucket_counts();
    for (std::size_t i = 0; i < bounds.size(); ++i) {
      cumulative += counts[i];
      std::string le = "le=\"";
      append_number(le, bounds[i]);
      le += '"';
      sample(bucket, cumulative, le);
    }
    sample(bucket, h.count(), "le=\"+Inf\"");
    sample(std::string(name) + "_sum", h.sum());
    sample(std::string(name) + "_count", h.count());
  }

  std::string take() { return std::move(out_); }

 private:
  std::string model_label_;
  std::string out_;
};

}  // namespace detail

inline std::string to_prometheus_text(const EngineMetrics& m, std::string_view model_name) {
  detail::PrometheusWriter w(model_name);
  w.single("izwi:num_requests_running", "gauge", "Number of requests in model execution batches.",
           static_cast<std::uint64_t>(m.num_requests_running));
  w.single("izwi:num_requests_waiting", "gauge", "Number of requests waiting to be processed.",
           static_cast<std::uint64_t>(m.num_requests_waiting));
  w.single("izwi:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", m.kv_cache_usage);
  w.single("izwi:kv_cache_blocks", "gauge", "Usable KV-cache blocks.", static_cast<std::uint64_t>(m.num_kv_blocks));
  w.single("izwi:kv_cache_blocks_used", "gauge", "KV-cache blocks referenced by a request.",
           static_cast<std::uint64_t>(m.num_kv_blocks_used));
  w.single("izwi:prompt_tokens_total", "counter", "Number of prefill tokens processed.", m.prompt_tokens);
  w.single("izwi:generation_tokens_total", "counter", "Number of generation tokens processed.", m.generation_tokens);
  w.single("izwi:num_preemptions_total", "counter", "Cumulative number of preemptions from the engine.",
           m.num_preemptions);
  w.single("izwi:prefix_cache_queries_total", "counter",
           "Prefix cache queries, in terms of number of queried tokens.", m.prefix_cache_queries);
  w.single("izwi:prefix_cache_hits_total", "counter", "Prefix cache hits, in terms of number of cached tokens.",
           m.prefix_cache_hits);
  w.single("izwi:engine_faults_total", "counter",
           "Exceptions thrown inside an engine step and caught by the step loop.", m.num_engine_faults);
  w.single("izwi:request_errors_total", "counter",
           "Requests ended with finish_reason error by an engine fault or non-finite logits.", m.num_request_errors);
  w.header("izwi:request_success_total", "counter", "Count of finished requests by finish reason.");
  for (FinishReason reason : {FinishReason::stop, FinishReason::length, FinishReason::abort, FinishReason::error}) {
    const std::string label = "finished_reason=\"" + std::string(to_string(reason)) + "\"";
    w.sample("izwi:request_success_total", m.finished(reason), label);
  }
  w.histogram("izwi:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
              m.time_to_first_token);
  w.histogram("izwi:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
              m.inter_token_latency);
  w.histogram("izwi:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
              m.e2e_request_latency);
  w.histogram("izwi:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.",
              m.request_queue_time);
  w.histogram("izwi:audio_real_time_factor", "Histogram of processing time over generated audio duration.",
              m.audio_real_time_factor);
  w.histogram("izwi:time_to_first_audio_seconds",
              "Histogram of time from arrival to the first audio samples in seconds.", m.time_to_first_audio);
  return w.take();
}

}  // namespace izwi
