#pragma once
// Engine metrics with vLLM's names and buckets (prefix `izwi:` instead of
// `vllm:`), so dashboards and alerts written for vLLM read izwi unchanged, and
// the Prometheus text exposition format (version 0.0.4) for /metrics.
//
//   izwi:num_requests_running / _waiting      gauge
//   izwi:kv_cache_usage_perc                  gauge, fraction of blocks in use (0..1, as vLLM)
//   izwi:kv_cache_blocks / _blocks_used       gauges, usable blocks and blocks in use
//   izwi:prompt_tokens_total                  counter
//   izwi:generation_tokens_total              counter
//   izwi:num_preemptions_total                counter
//   izwi:prefix_cache_queries_total / _hits_total   counters, in tokens
//   izwi:request_success_total{finished_reason}     counter (stop, length, abort, error)
//   izwi:engine_faults_total                  counter, exceptions the step loop caught (izwi's own)
//   izwi:request_errors_total                 counter, requests a fault ended with "error" (izwi's own)
//   izwi:time_to_first_token_seconds          histogram
//   izwi:inter_token_latency_seconds          histogram
//   izwi:e2e_request_latency_seconds          histogram
//   izwi:request_queue_time_seconds           histogram
//   izwi:audio_real_time_factor               histogram (audio-output requests)
//   izwi:time_to_first_audio_seconds          histogram (audio-output requests; izwi's own)

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "izwi/core/request.hpp"

namespace izwi {

/// Bucket upper bounds, as vLLM's v1 metrics define them.
namespace metric_buckets {
inline constexpr std::array<double, 22> time_to_first_token{
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
    1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
inline constexpr std::array<double, 19> inter_token_latency{
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0};
inline constexpr std::array<double, 21> request_latency{
    0.3,  0.5,  0.8,  1.0,  1.5,  2.0,   2.5,   5.0,   10.0,  15.0,   20.0,
    30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
/// izwi's own: real-time factor of audio generation (below 1 is faster than real time).
inline constexpr std::array<double, 12> real_time_factor{0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 5.0};
}  // namespace metric_buckets

/// A Prometheus histogram with fixed bucket upper bounds. Not synchronised:
/// the engine updates its own copy under its metrics lock.
class Histogram {
 public:
  Histogram() = default;
  explicit Histogram(std::span<const double> upper_bounds);

  void observe(double value) noexcept;

  std::span<const double> upper_bounds() const noexcept { return upper_bounds_; }
  /// Per-bucket (not cumulative) counts; one more than upper_bounds(): the last is +Inf.
  std::span<const std::uint64_t> bucket_counts() const noexcept { return counts_; }
  std::uint64_t count() const noexcept { return count_; }
  double sum() const noexcept { return sum_; }

  /// Estimated q-quantile (0 <= q <= 1) by linear interpolation inside the
  /// bucket holding it, as Prometheus's histogram_quantile() computes it.
  /// 0 when empty; the largest finite bound when it falls in the +Inf bucket.
  double quantile(double q) const noexcept;

 private:
  std::vector<double> upper_bounds_;
  std::vector<std::uint64_t> counts_;
  std::uint64_t count_ = 0;
  double sum_ = 0.0;
};

/// A snapshot of an engine's metrics; copyable, safe to read on any thread.
struct EngineMetrics {
  std::size_t num_requests_running = 0;
  std::size_t num_requests_waiting = 0;
  double kv_cache_usage = 0.0;
  /// Usable KV blocks, and those referenced by some request (cached free
  /// blocks are not in use). A server's health view checks num_kv_blocks_used
  /// returns to 0 when nothing runs: no request leaked a block.
  std::size_t num_kv_blocks = 0;
  std::size_t num_kv_blocks_used = 0;

  std::uint64_t prompt_tokens = 0;
  std::uint64_t generation_tokens = 0;
  std::uint64_t num_preemptions = 0;
  std::uint64_t prefix_cache_queries = 0;
  std::uint64_t prefix_cache_hits = 0;
  /// Exceptions thrown inside an engine step and caught by its barrier, and
  /// the requests those faults (or non-finite logits) ended with an error.
  std::uint64_t num_engine_faults = 0;
  std::uint64_t num_request_errors = 0;
  /// Finished requests, indexed by FinishReason.
  std::array<std::uint64_t, 4> finished_requests{};

  Histogram time_to_first_token{metric_buckets::time_to_first_token};
  Histogram inter_token_latency{metric_buckets::inter_token_latency};
  Histogram e2e_request_latency{metric_buckets::request_latency};
  Histogram request_queue_time{metric_buckets::request_latency};
  Histogram audio_real_time_factor{metric_buckets::real_time_factor};
  Histogram time_to_first_audio{metric_buckets::time_to_first_token};

  std::uint64_t finished(FinishReason reason) const noexcept {
    return finished_requests[static_cast<std::size_t>(reason)];
  }
};

/// Renders metrics in the Prometheus text exposition format, each sample
/// labelled model_name="<model_name>" (as vLLM labels them).
std::string to_prometheus_text(const EngineMetrics& metrics, std::string_view model_name);

}  // namespace izwi

#include "izwi/engine/impl/metrics.hpp"
