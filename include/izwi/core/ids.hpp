#pragma once
// Identifiers and clocks shared by every part of izwi.

#include <chrono>
#include <cstdint>

namespace izwi {

/// Identifies one request for its whole life in an engine. 0 is never issued:
/// a Request with id 0 asks the engine to assign one.
using RequestId = std::uint64_t;

/// A vocabulary index. Signed, as in llama.cpp and Hugging Face, so -1 can mean "none".
using TokenId = std::int32_t;

/// Index of a KV-cache block in a block pool. Block 0 is the reserved null block.
using BlockId = std::uint32_t;
inline constexpr BlockId null_block = 0;

/// Engine time: monotonic, never wall-clock (latency metrics must not jump with NTP).
using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;

/// Seconds between two engine time points, as the metrics report them.
inline double seconds_between(TimePoint from, TimePoint to) noexcept {
  return std::chrono::duration<double>(to - from).count();
}

}  // namespace izwi
