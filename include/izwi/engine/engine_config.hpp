#pragma once
// EngineConfig: what an engine needs beyond its three policies.

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

namespace izwi {

struct EngineConfig {
  /// Label of every metric sample (model_name="..."), as vLLM labels them.
  std::string model_name = "izwi";
  /// Chunks a response stream holds before its request is paused (back-pressure).
  std::size_t stream_capacity = 64;
  /// Context limit: prompt plus output tokens. Unset: the executor's
  /// max_model_len() if it has one, else unlimited (the KV cache still bounds it).
  std::optional<std::size_t> max_model_len;
  /// add_request refuses (izwi::unavailable) when this many requests are
  /// already waiting; 0 means no limit. The server answers 429 from it.
  std::size_t max_waiting_requests = 0;
  /// How long the run() loop sleeps when idle before looking again; any new
  /// request, abort or drained stream wakes it at once.
  std::chrono::milliseconds idle_poll{100};
  /// Writes one line to stderr for each request that ends with an error
  /// (an exception in a step, non-finite logits): the operator's record of why.
  bool log_errors = true;
};

}  // namespace izwi
