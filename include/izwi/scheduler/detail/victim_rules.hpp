#pragma once
// Victim rules: which running request to preempt when a running request cannot
// extend its blocks (or memory pressure shrinks the batch). A rule is any type
// with
//   VictimRule{}(std::span<SequenceState* const> running) -> std::size_t
// returning an index into `running` (never empty). `running` holds every
// request that holds blocks, paused ones included, in admission order.

#include <cstddef>
#include <span>

#include "izwi/scheduler/sequence_state.hpp"

namespace izwi::detail {

/// FCFS: the most recently admitted request gives way (it has the least work
/// to lose and arrived, or resumed, last).
struct NewestAdmissionVictim {
  std::size_t operator()(std::span<SequenceState* const> running) const noexcept {
    std::size_t victim = 0;
    for (std::size_t i = 1; i < running.size(); ++i)
      if (running[i]->admission_order > running[victim]->admission_order) victim = i;
    return victim;
  }
};

/// Priority: the worst priority (largest value) gives way; among equals the
/// latest arrival, then the newest admission.
struct WorstPriorityVictim {
  std::size_t operator()(std::span<SequenceState* const> running) const noexcept {
    std::size_t victim = 0;
    for (std::size_t i = 1; i < running.size(); ++i)
      if (worse(*running[i], *running[victim])) victim = i;
    return victim;
  }
  static bool worse(const SequenceState& a, const SequenceState& b) noexcept {
    if (a.request.priority != b.request.priority) return a.request.priority > b.request.priority;
    if (a.request.arrival_time != b.request.arrival_time) return a.request.arrival_time > b.request.arrival_time;
    return a.admission_order > b.admission_order;
  }
};

}  // namespace izwi::detail
