#pragma once
// FcfsScheduler: first come, first served, within one token budget per step.
//
//   izwi::FcfsScheduler scheduler({.max_num_batched_tokens = 2048, .max_num_seqs = 128});
//   scheduler.add(std::move(request));
//   const izwi::StepPlan& plan = scheduler.schedule(kv);   // kv: any KVCachePolicy
//   ... executor runs the plan into `result` ...
//   scheduler.update(result, kv);
//   scheduler.finish(id, izwi::FinishReason::stop, kv);    // when the engine sees a stop
//
// Waiting requests are admitted in arrival order (ties: smaller id). When a
// running request cannot extend its blocks, the most recently admitted running
// request is preempted (its blocks freed, recomputed later); it goes back into
// the queue under its arrival time, so it resumes ahead of requests that
// arrived after it. The loop itself — budget, chunked prefill, no admission in
// a step that preempted, memory-pressure advice, requests that can never fit —
// is detail::TokenBudgetScheduler, documented there and in
// docs/concepts/scheduler.md. Satisfies SchedulerFor<FcfsScheduler, K> for
// every KVCachePolicy K.

#include "izwi/concepts/tags.hpp"
#include "izwi/scheduler/detail/token_budget_scheduler.hpp"
#include "izwi/scheduler/detail/victim_rules.hpp"
#include "izwi/scheduler/detail/waiting_queues.hpp"
#include "izwi/scheduler/scheduler_config.hpp"

namespace izwi {

class FcfsScheduler : public detail::TokenBudgetScheduler<detail::FcfsWaitingQueue, detail::NewestAdmissionVictim> {
 public:
  using policy_category = scheduler_tag;
  using TokenBudgetScheduler::TokenBudgetScheduler;
};

}  // namespace izwi
