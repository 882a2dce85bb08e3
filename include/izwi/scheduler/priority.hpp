#pragma once
// PriorityScheduler: Request::priority first (lower value is served sooner,
// vLLM's convention), with aging so that nothing starves.
//
// A waiting request's effective priority falls by
// SchedulerConfig::priority_aging_per_second for every second it has waited
// (default 0.1: ten levels in 100 s), so a low-priority request eventually
// overtakes any stream of later high-priority arrivals. Because every waiting
// request ages at the same rate, the queue order never changes while requests
// wait; the queue is an ordered container keyed on priority + rate * arrival
// and costs O(log n) per insert, O(1) to read its head.
//
// When a running request cannot extend its blocks, the running request with
// the worst priority is preempted (ties: the latest arrival, then the newest
// admission). It returns to the queue under its original key, ahead of
// anything that arrived later with the same priority.
//
// The rest of the loop is shared with FcfsScheduler (detail::TokenBudgetScheduler,
// docs/concepts/scheduler.md). Satisfies SchedulerFor<PriorityScheduler, K>
// for every KVCachePolicy K.

#include "izwi/concepts/tags.hpp"
#include "izwi/scheduler/detail/token_budget_scheduler.hpp"
#include "izwi/scheduler/detail/victim_rules.hpp"
#include "izwi/scheduler/detail/waiting_queues.hpp"
#include "izwi/scheduler/scheduler_config.hpp"

namespace izwi {

class PriorityScheduler
    : public detail::TokenBudgetScheduler<detail::PriorityWaitingQueue, detail::WorstPriorityVictim> {
 public:
  using policy_category = scheduler_tag;
  using TokenBudgetScheduler::TokenBudgetScheduler;
};

}  // namespace izwi
