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
//   o.seat_for(running, head) -> std::size_t
//       with every seat taken (max_num_seqs or the cache's advice), the index
//       of a running request to preempt so that the waiting queue's head gets
//       its seat, or running.size() for none. The victim must rank after the
//       head in the waiting order once preempted.

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
  /// Never: a running request keeps its seat until it finishes or the cache needs its blocks.
  std::size_t seat_for(std::span<SequenceState* const> running, const SequenceState&) const noexcept {
    return running.size();
  }
};

}  // namespace izwi::detail
