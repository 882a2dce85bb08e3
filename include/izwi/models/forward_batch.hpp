#pragma once
// ForwardBatch: one engine step flattened for a model's forward pass.

#include <cstdint>
#include <span>

#include "izwi/core/ids.hpp"

namespace izwi {

/// Every scheduled token of a step, in plan order, one row each.
struct ForwardBatch {
  std::span<const TokenId> tokens;
  /// Position of each token in its own sequence.
  std::span<const std::int64_t> positions;
  /// KV-cache slot of each token (StepPlan::slot_mapping).
  std::span<const std::int64_t> slots;
  /// Token rows whose hidden state becomes logits (one per sampling sequence).
  std::span<const std::uint32_t> logit_rows;
};

}  // namespace izwi
