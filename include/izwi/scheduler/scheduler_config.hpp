#pragma once
// SchedulerConfig: the knobs of the token-budget loop shared by FcfsScheduler
// and PriorityScheduler (DESIGN §3). Defaults are vLLM's CPU-serving ones.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "izwi/core/error.hpp"

namespace izwi {

struct SchedulerConfig {
  /// Tokens computed per step, prefill chunks and decode tokens together. Range >= 1.
  std::size_t max_num_batched_tokens = 2048;
  /// Sequences per step (and requests holding KV blocks). Range >= 1.
  std::size_t max_num_seqs = 128;
  /// Split a prompt that does not fit the step's remaining budget across steps.
  /// Off: a prompt is admitted only whole, and a prompt longer than
  /// max_num_batched_tokens is ended with FinishReason::error.
  bool enable_chunked_prefill = true;
  /// 0: off. Otherwise the most tokens one prefill chunk may take in a step, so
  /// that one long prompt cannot take the whole budget from the others
  /// (vLLM's long_prefill_token_threshold). Applies only with chunked prefill.
  std::size_t long_prefill_token_threshold = 0;
  /// PriorityScheduler only: priority levels a waiting request gains per second
  /// it has waited (lower value is served sooner, so waiting lowers it). With
  /// 0.1, a request at priority 10 overtakes fresh priority-0 arrivals after
  /// 100 s: high priorities matter, yet nothing waits forever. 0 turns aging
  /// off (strict priority, then arrival). Range [0, inf), finite.
  double priority_aging_per_second = 0.1;
  /// Seeds the generator that draws a seed for each request whose
  /// SamplingParams::seed is unset. Unset: std::random_device.
  std::optional<std::uint64_t> seed;

  /// Throws izwi::invalid_argument naming the first field out of range.
  void validate() const {
    if (max_num_batched_tokens < 1)
      throw invalid_argument("max_num_batched_tokens", "max_num_batched_tokens must be >= 1, got 0");
    if (max_num_seqs < 1) throw invalid_argument("max_num_seqs", "max_num_seqs must be >= 1, got 0");
    if (!std::isfinite(priority_aging_per_second) || priority_aging_per_second < 0.0)
      throw invalid_argument("priority_aging_per_second",
                             "priority_aging_per_second must be finite and in [0, inf), got " +
                                 std::to_string(priority_aging_per_second));
  }
};

}  // namespace izwi
