#pragma once
// TokenBudgetScheduler: the one scheduling loop behind FcfsScheduler,
// PriorityScheduler and PlaybackDeadlineScheduler (DESIGN §3, after vLLM v1).
// They differ only in the order of the waiting queue, in the victim rule and
// in the step order (which running requests get the budget, in what order);
// all three are template parameters (see waiting_queues.hpp, victim_rules.hpp
// and step_orders.hpp for what they need).
//
// Each step has one token budget (max_num_batched_tokens) and no separate
// prefill and decode phases. schedule(kv):
//  1. Reads the cache's AdmissionAdvice when the cache is pressure-aware, and
//     preempts victims until the running set fits the advised cap.
//  2. Running requests, in the StepOrder's order (admission order for FCFS
//     and priority): each gets the tokens it lacks
//     (tokens.size() - num_computed_tokens), capped by the remaining budget and
//     long_prefill_token_threshold. Paused requests and requests with nothing
//     to compute are skipped. If the cache cannot extend a request's blocks, a
//     victim (VictimRule) is preempted — its blocks freed, its computed tokens
//     forgotten, itself put back in the waiting queue under its original key —
//     and the allocation retried; if the victim is the request itself, no
//     further running request is scheduled this step. Requests the step
//     order lets sit out are served only if steps 2 and 3 schedule nothing.
//  3. Only if nothing was preempted this step and the advice admits new
//     requests: waiting requests in queue order, while the running set is below
//     min(max_num_seqs, advice.max_num_seqs) and budget remains. A prefix-cache
//     hit counts as computed. The first request that does not fit stops
//     admission (no skipping ahead: the head cannot starve).
//  A request that can never fit — more blocks than the cache has, or (without
//  chunked prefill) more tokens than the budget — is ended with
//  FinishReason::error and listed in StepPlan::failed instead of blocking.
//
// The plan's spans point into this scheduler's storage; SequenceStates live in
// their own heap nodes, so pointers in a plan stay valid while the request
// lives. The loop does not throw; add() and the constructor throw
// izwi::invalid_argument on bad input.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "izwi/concepts/kv_cache.hpp"
#include "izwi/concepts/tags.hpp"
#include "izwi/core/ids.hpp"
#include "izwi/core/random.hpp"
#include "izwi/core/request.hpp"
#include "izwi/core/step.hpp"
#include "izwi/scheduler/detail/step_orders.hpp"
#include "izwi/scheduler/scheduler_config.hpp"
#include "izwi/scheduler/sequence_state.hpp"

namespace izwi::detail {

template <class WaitingQueue, class VictimRule, class StepOrder = AdmissionStepOrder>
class TokenBudgetScheduler {
 public:
  using policy_category = scheduler_tag;
  using waiting_queue_type = WaitingQueue;
  using victim_rule_type = VictimRule;
  using step_order_type = StepOrder;

  /// Throws izwi::invalid_argument if the configuration is out of range.
  explicit TokenBudgetScheduler(SchedulerConfig config = {});

  TokenBudgetScheduler(const TokenBudgetScheduler&) = delete;
  TokenBudgetScheduler& operator=(const TokenBudgetScheduler&) = delete;
  TokenBudgetScheduler(TokenBudgetScheduler&&) = default;
  TokenBudgetScheduler& operator=(TokenBudgetScheduler&&) = default;

  /// Enqueues a request. Its prompt tokens move into the scheduler; prefix-cache
  /// keys and the generator are set up here. Throws izwi::invalid_argument for
  /// id 0 ("id"), an id already known ("id") or an empty prompt ("prompt_tokens").
  void add(Request&& request);

  /// Plans one step against `kv` (see the header comment). The returned plan is
  /// reused: it is valid until the next schedule() or update().
  template <class KV>
    requires KVCachePolicy<KV>
  const StepPlan& schedule(KV& kv);

  /// Applies the executor's result for the last plan: every scheduled sequence
  /// advances num_computed_tokens by its num_tokens, and each output's token is
  /// appended to its request. Requests finished since schedule() are skipped.
  /// Stop conditions are the engine's: it calls finish().
  template <class KV>
    requires KVCachePolicy<KV>
  void update(const StepResult& result, KV& kv);

  /// Ends a request in any state (waiting, preempted, running, paused), frees
  /// its blocks and forgets it. False if `id` is unknown. With
  /// FinishReason::error the blocks past its computed tokens also lose their
  /// prefix-cache keys (its last step may not have written them).
  template <class KV>
    requires KVCachePolicy<KV>
  bool finish(RequestId id, FinishReason reason, KV& kv);

  /// Preempts a running request of the last plan after schedule(), because
  /// the executor could not run it this step (a device out of memory): its
  /// blocks are freed (those planned for this step lose their prefix-cache
  /// keys: nothing was written), it waits to be recomputed from its original
  /// place in the queue, and update() skips it. False if it is not running.
  template <class KV>
    requires KVCachePolicy<KV>
  bool preempt_scheduled(RequestId id, KV& kv);

  /// A paused request keeps its blocks and its queue position but is not
  /// scheduled or admitted until resumed. Unknown ids are ignored.
  void set_paused(RequestId id, bool paused);

  /// Requests waiting for admission, preempted ones (and paused ones) included.
  std::size_t num_waiting() const noexcept { return num_waiting_; }
  /// Requests holding KV blocks, paused ones included.
  std::size_t num_running() const noexcept { return running_.size(); }
  /// Preemptions since construction.
  std::uint64_t num_preemptions() const noexcept { return num_preemptions_; }

  /// The state of a live request, or nullptr. Valid until that request is
  /// finished or failed.
  const SequenceState* find(RequestId id) const noexcept;
  /// Live requests (waiting + running).
  std::size_t num_requests() const noexcept { return states_.size(); }
  /// Running requests in admission order.
  std::span<SequenceState* const> running() const noexcept { return running_; }
  const StepPlan& last_plan() const noexcept { return plan_; }
  const SchedulerConfig& config() const noexcept { return config_; }
  /// The step order (for policies whose order holds state, e.g. a clock).
  StepOrder& step_order() noexcept { return step_order_; }
  const StepOrder& step_order() const noexcept { return step_order_; }

 private:
  struct Decision {
    SequenceState* state;
    std::size_t num_tokens;
  };

  template <class KV>
  AdmissionAdvice advice_of(KV& kv);
  template <class KV>
  void preempt(std::size_t running_index, KV& kv);
  /// Back to the queue under its original key, nothing computed: the state
  /// change of a preemption, once its blocks are freed and it left running_.
  void requeue_preempted(SequenceState& s);
  /// Frees a running sequence's blocks; where the cache can, also forgets the
  /// prefix keys of blocks past `written` tokens (planned, never computed).
  template <class KV>
  static void free_blocks(KV& kv, RequestId id, std::size_t written, bool all_written);
  template <class KV>
  void fail(std::size_t running_index, KV& kv);
  bool can_never_fit(const SequenceState& s) const noexcept;
  void fail_waiting_head(SequenceState& s);
  template <class KV>
  void schedule_running(KV& kv, std::size_t chunk_cap, std::size_t begin, std::size_t end);
  template <class KV>
  void admit_waiting(KV& kv, std::size_t max_running, std::size_t chunk_cap);
  template <class KV>
  bool allocate_or_preempt(SequenceState& s, std::size_t num_new, KV& kv, bool& stop_running);
  template <class KV>
  void build_plan(KV& kv);
  void drop_decision(const SequenceState& s) noexcept;

  SchedulerConfig config_;
  SequenceRng seed_source_;
  std::unordered_map<RequestId, std::unique_ptr<SequenceState>> states_;
  WaitingQueue waiting_;
  std::vector<SequenceState*> running_;
  std::size_t num_waiting_ = 0;
  std::uint64_t num_preemptions_ = 0;
  std::uint64_t next_admission_ = 0;
  bool preempted_this_step_ = false;
  // Per step: remaining token budget, and the cache's block size and block count.
  std::size_t budget_ = 0;
  std::size_t block_size_ = 1;
  std::size_t total_blocks_ = 0;
  /// This step's choices, turned into plan_ once every allocation is done
  /// (a later allocation may move a block table; a preemption may drop a choice).
  std::vector<Decision> decisions_;
  StepPlan plan_;
  /// plan_.sequences' states, nulled when a request finishes before update().
  std::vector<SequenceState*> planned_states_;
  [[no_unique_address]] VictimRule victim_rule_;
  [[no_unique_address]] StepOrder step_order_;
  /// This step's running requests in the step order's order (see step_orders.hpp).
  std::vector<SequenceState*> serve_;
};

}  // namespace izwi::detail

#include "izwi/scheduler/impl/token_budget_scheduler.hpp"
