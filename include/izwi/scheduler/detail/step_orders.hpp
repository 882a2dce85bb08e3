#pragma once
// Step orders for the token-budget loop: which running requests get the
// step's budget, and in what order. A step order is any type with
// (running a std::span<SequenceState* const>, serve a std::vector<SequenceState*>&,
//  s a SequenceState&, out a const SequenceOutput&, result a const StepResult&):
//   Order(const SchedulerConfig&)
//   o.arrange(running, serve) -> std::size_t
//       fills `serve` with running requests (a reordering of `running`, or
//       fewer), in the order they get the budget, and returns n: the first n
//       are served before admission; the rest only when the step would
//       otherwise schedule nothing (they sit out steps that have other work).
//   o.observe(s, out, result)
//       called by update() for each output of the last plan, after its token
//       was appended; where an order learns what a step delivered.

#include <cstddef>
#include <span>
#include <vector>

#include "izwi/core/step.hpp"
#include "izwi/scheduler/scheduler_config.hpp"
#include "izwi/scheduler/sequence_state.hpp"

namespace izwi::detail {

/// FcfsScheduler and PriorityScheduler: every running request, in admission
/// order; nothing sits out and nothing is learned from results.
struct AdmissionStepOrder {
  explicit AdmissionStepOrder(const SchedulerConfig&) noexcept {}
  std::size_t arrange(std::span<SequenceState* const> running, std::vector<SequenceState*>& serve) const {
    serve.assign(running.begin(), running.end());  // capacity kept: no allocation in steady state
    return serve.size();
  }
  void observe(SequenceState&, const SequenceOutput&, const StepResult&) const noexcept {}
};

}  // namespace izwi::detail
