#pragma once
// StepMetrics: what one engine step adds to the metrics, gathered without a
// lock while the step processes its outputs and published under the metrics
// mutex once, at the end of the step. A /metrics scrape (which takes that
// mutex to render) then never waits for detokenization, stop-string search or
// stream delivery, and the step loop never waits for a scrape but once.
//
// Its members have the names and calls of EngineMetrics' (observe(), +=), so
// the output path reads the same whichever it writes to.

#include <array>
#include <cstdint>
#include <vector>

#include "izwi/engine/metrics.hpp"

namespace izwi::detail {

/// Observations waiting for their histogram.
struct PendingHistogram {
  std::vector<double> values;
  void observe(double value) { values.push_back(value); }
  void publish_to(Histogram& histogram) {
    for (double v : values) histogram.observe(v);
    values.clear();
  }
};

struct StepMetrics {
  std::uint64_t prompt_tokens = 0;
  std::uint64_t generation_tokens = 0;
  std::array<std::uint64_t, 4> finished_requests{};
  PendingHistogram time_to_first_token;
  PendingHistogram inter_token_latency;
  PendingHistogram e2e_request_latency;
  PendingHistogram request_queue_time;
  PendingHistogram audio_real_time_factor;
  PendingHistogram time_to_first_audio;

  /// Adds everything to `m` and starts over. Caller holds m's mutex.
  void publish_to(EngineMetrics& m) {
    m.prompt_tokens += prompt_tokens;
    m.generation_tokens += generation_tokens;
    for (std::size_t i = 0; i < finished_requests.size(); ++i) m.finished_requests[i] += finished_requests[i];
    time_to_first_token.publish_to(m.time_to_first_token);
    inter_token_latency.publish_to(m.inter_token_latency);
    e2e_request_latency.publish_to(m.e2e_request_latency);
    request_queue_time.publish_to(m.request_queue_time);
    audio_real_time_factor.publish_to(m.audio_real_time_factor);
    time_to_first_audio.publish_to(m.time_to_first_audio);
    prompt_tokens = generation_tokens = 0;
    finished_requests = {};
  }
};

}  // namespace izwi::detail
