#pragma once
// Bodies of detail::TokenBudgetScheduler (declared in
// izwi/scheduler/detail/token_budget_scheduler.hpp).

#include <algorithm>
#include <random>
#include <string>
#include <utility>

#include "izwi/core/error.hpp"
#include "izwi/scheduler/detail/prefix_keys.hpp"

namespace izwi::detail {

inline std::uint64_t random_device_seed() {
  std::random_device device;
  return (static_cast<std::uint64_t>(device()) << 32) ^ device();
}

template <class Q, class V, class O>
TokenBudgetScheduler<Q, V, O>::TokenBudgetScheduler(SchedulerConfig config)
    : config_((config.validate(), std::move(config))),
      seed_source_(config_.seed ? *config_.seed : random_device_seed()),
      waiting_(config_),
      step_order_(config_) {}

template <class Q, class V, class O>
void TokenBudgetScheduler<Q, V, O>::add(Request&& request) {
  if (request.id == 0) throw invalid_argument("id", "request id must be non-zero (0 asks the engine to assign one)");
  if (states_.contains(request.id))
    throw invalid_argument("id", "request id " + std::to_string(request.id) + " is already in use");
  if (request.prompt_tokens.empty()) throw invalid_argument("prompt_tokens", "prompt_tokens must not be empty");

  auto state = std::make_unique<SequenceState>();
  SequenceState& s = *state;
  s.tokens = std::move(request.prompt_tokens);
  request.prompt_tokens.clear();
  s.num_prompt_tokens = s.tokens.size();
  // Room for the output up front, so update() does not reallocate while decoding.
  constexpr std::size_t reserve_cap = 4096;
  s.tokens.reserve(s.tokens.size() + std::min<std::size_t>(request.sampling.max_tokens.value_or(0), reserve_cap));
  s.prefix_keys = make_prefix_cache_keys(request);
  s.rng.reseed(request.sampling.seed ? *request.sampling.seed : seed_source_());
  s.status = RequestStatus::waiting;
  s.request = std::move(request);

  const RequestId id = s.request.id;
  states_.emplace(id, std::move(state));
  try {
    waiting_.push(s);
  } catch (...) {
    states_.erase(id);
    throw;
  }
  ++num_waiting_;
}

template <class Q, class V, class O>
template <class KV>
AdmissionAdvice TokenBudgetScheduler<Q, V, O>::advice_of(KV& kv) {
  if constexpr (PressureAwareKVCache<KV>) {
    return kv.admission_advice();
  } else {
    (void)kv;
    return AdmissionAdvice{};
  }
}

template <class Q, class V, class O>
template <class KV>
  requires KVCachePolicy<KV>
const StepPlan& TokenBudgetScheduler<Q, V, O>::schedule(KV& kv) {
  plan_.clear();
  decisions_.clear();
  planned_states_.clear();
  preempted_this_step_ = false;
  budget_ = config_.max_num_batched_tokens;
  block_size_ = std::max<std::size_t>(kv.block_size(), 1);
  total_blocks_ = kv.stats().num_blocks;

  const AdmissionAdvice advice = advice_of(kv);
  const std::size_t max_running = std::min(config_.max_num_seqs, advice.max_num_seqs);
  while (running_.size() > max_running) preempt(victim_rule_(running_), kv);

  const std::size_t chunk_cap = config_.enable_chunked_prefill && config_.long_prefill_token_threshold > 0
                                    ? config_.long_prefill_token_threshold
                                    : static_cast<std::size_t>(-1);
  const std::size_t num_first = step_order_.arrange(running_, serve_);
  schedule_running(kv, chunk_cap, 0, num_first);
  // Then waiting requests, unless this step preempted or the cache says no.
  if (!preempted_this_step_ && advice.admit_new_requests) admit_waiting(kv, max_running, chunk_cap);
  // Requests the step order let sit out, only if the step would otherwise be empty.
  if (decisions_.empty() && !preempted_this_step_) schedule_running(kv, chunk_cap, num_first, serve_.size());
  serve_.clear();
  build_plan(kv);
  return plan_;
}

/// Running requests first, serve_[begin, end) in the step order's order: each
/// gets the tokens it lacks, within the budget and the long-prefill cap,
/// preempting victims for blocks.
template <class Q, class V, class O>
template <class KV>
void TokenBudgetScheduler<Q, V, O>::schedule_running(KV& kv, std::size_t chunk_cap, std::size_t begin,
                                                     std::size_t end) {
  for (std::size_t k = begin; k < end && budget_ > 0; ++k) {
    SequenceState& s = *serve_[k];
    if (s.status != RequestStatus::running) continue;  // preempted earlier in this step
    const std::size_t lacking = s.tokens.size() - s.num_computed_tokens;
    if (s.paused || lacking == 0) continue;
    const std::size_t num_new = std::min({lacking, budget_, chunk_cap});
    bool stop_running = false;
    if (!allocate_or_preempt(s, num_new, kv, stop_running)) {
      if (stop_running) break;
      continue;
    }
    decisions_.push_back({&s, num_new});
    budget_ -= num_new;
  }
}

/// Blocks for s's next num_new tokens, preempting victims until they fit.
/// False when s did not get them: it could never fit (failed: s is gone), or
/// it was the victim itself (preempted; stop_running is set, since every
/// request served after it ranks below it still).
template <class Q, class V, class O>
template <class KV>
bool TokenBudgetScheduler<Q, V, O>::allocate_or_preempt(SequenceState& s, std::size_t num_new, KV& kv,
                                                        bool& stop_running) {
  while (!kv.allocate_slots(s.view(), s.num_computed_tokens, num_new, PrefixHit{})) {
    if (can_never_fit(s)) {
      fail(static_cast<std::size_t>(std::find(running_.begin(), running_.end(), &s) - running_.begin()), kv);
      return false;
    }
    const std::size_t victim = victim_rule_(running_);
    const bool victim_is_self = running_[victim] == &s;
    preempt(victim, kv);  // gives back the victim's tokens if it was scheduled
    if (victim_is_self) {
      stop_running = true;
      return false;
    }
  }
  return true;
}

/// Waiting requests in queue order while budget and seats last; a prefix-cache
/// hit counts as computed. Head-of-line: a head that does not fit stops
/// admission. With every seat taken, the step order may name a running
/// request to give its seat to the head (preempted like any victim).
template <class Q, class V, class O>
template <class KV>
void TokenBudgetScheduler<Q, V, O>::admit_waiting(KV& kv, std::size_t max_running, std::size_t chunk_cap) {
  const bool chunked = config_.enable_chunked_prefill;
  while (budget_ > 0) {
    SequenceState* head = waiting_.front();
    if (head == nullptr) break;
    SequenceState& s = *head;
    // Every seat taken: stop, unless the step order gives the head a seat.
    const bool full = running_.size() >= max_running;
    const std::size_t seat = full ? step_order_.seat_for(running_, s) : running_.size();
    if (full && seat >= running_.size()) break;
    if (can_never_fit(s)) {
      fail_waiting_head(s);
      continue;
    }
    if (full) {
      preempt(seat, kv);
      if (waiting_.front() != &s) break;  // the step order's victim must rank after the head
    }
    const PrefixHit hit = s.num_computed_tokens == 0 ? kv.find_cached_prefix(s.view()) : PrefixHit{};
    const std::size_t computed = std::max(hit.num_tokens, s.num_computed_tokens);
    std::size_t num_new = s.tokens.size() - computed;
    if (chunked) {
      num_new = std::min({num_new, budget_, chunk_cap});
    } else if (num_new > config_.max_num_batched_tokens) {
      fail_waiting_head(s);  // would never fit one step's budget
      continue;
    } else if (num_new > budget_) {
      break;
    }
    if (!kv.allocate_slots(s.view(), computed, num_new, hit)) break;  // head-of-line: no skipping
    waiting_.pop_front();
    --num_waiting_;
    s.num_computed_tokens = computed;
    s.status = RequestStatus::running;
    s.admission_order = ++next_admission_;
    running_.push_back(&s);
    decisions_.push_back({&s, num_new});
    budget_ -= num_new;
  }
}

template <class Q, class V, class O>
template <class KV>
void TokenBudgetScheduler<Q, V, O>::build_plan(KV& kv) {
  const std::size_t block_size = block_size_;
  for (const Decision& d : decisions_) {
    SequenceState& s = *d.state;
    const std::span<const BlockId> table = kv.block_table(s.id());
    ScheduledSequence& seq = plan_.sequences.emplace_back();
    seq.id = s.id();
    seq.num_computed_tokens = s.num_computed_tokens;
    seq.num_tokens = d.num_tokens;
    seq.num_prompt_tokens = s.num_prompt_tokens;
    seq.tokens = s.tokens;
    seq.block_table = table;
    seq.slot_offset = plan_.slot_mapping.size();
    seq.samples = s.num_computed_tokens + d.num_tokens == s.tokens.size();
    seq.sampling = &s.request.sampling;
    seq.rng = &s.rng;
    seq.task = s.request.task;
    seq.audio = s.request.audio.get();
    seq.speech = s.request.speech.get();

    // One slot per token, a block's run at a time: block * B + offset.
    std::size_t position = s.num_computed_tokens;
    const std::size_t end = position + d.num_tokens;
    while (position < end) {
      const std::size_t offset = position % block_size;
      const std::size_t run = std::min(block_size - offset, end - position);
      const std::int64_t first = static_cast<std::int64_t>(table[position / block_size]) *
                                     static_cast<std::int64_t>(block_size) +
                                 static_cast<std::int64_t>(offset);
      for (std::size_t k = 0; k < run; ++k) plan_.slot_mapping.push_back(first + static_cast<std::int64_t>(k));
      position += run;
    }
    plan_.num_scheduled_tokens += d.num_tokens;
    planned_states_.push_back(&s);
  }
}

template <class Q, class V, class O>
template <class KV>
  requires KVCachePolicy<KV>
void TokenBudgetScheduler<Q, V, O>::update(const StepResult& result, [[maybe_unused]] KV& kv) {
  const std::size_t n = planned_states_.size();
  for (std::size_t i = 0; i < n; ++i)
    if (SequenceState* s = planned_states_[i]) s->num_computed_tokens += plan_.sequences[i].num_tokens;

  // Outputs come in plan order, so one forward walk pairs them with sequences.
  std::size_t cursor = 0;
  for (const SequenceOutput& out : result.outputs) {
    std::size_t at = cursor;
    while (at < n && plan_.sequences[at].id != out.id) ++at;
    if (at == n) continue;  // not in the last plan: ignore
    cursor = at + 1;
    if (SequenceState* s = planned_states_[at]; s != nullptr && plan_.sequences[at].samples) {
      s->tokens.push_back(out.token);
      step_order_.observe(*s, out, result);
    }
  }
  planned_states_.clear();  // a second update() for the same plan changes nothing
}

template <class Q, class V, class O>
template <class KV>
  requires KVCachePolicy<KV>
bool TokenBudgetScheduler<Q, V, O>::finish(RequestId id, FinishReason reason, KV& kv) {
  const auto it = states_.find(id);
  if (it == states_.end()) return false;
  SequenceState& s = *it->second;
  if (s.status == RequestStatus::running) {
    // A request failed by its step (a fault, a device out of memory) may not
    // have written the blocks planned for it: they must not stay hittable.
    free_blocks(kv, id, s.num_computed_tokens, reason != FinishReason::error);
    running_.erase(std::find(running_.begin(), running_.end(), &s));
  } else {
    if (!s.paused) waiting_.erase(s);
    --num_waiting_;
  }
  std::replace(planned_states_.begin(), planned_states_.end(), &s, static_cast<SequenceState*>(nullptr));
  s.status = RequestStatus::finished;
  states_.erase(it);
  return true;
}

template <class Q, class V, class O>
template <class KV>
  requires KVCachePolicy<KV>
bool TokenBudgetScheduler<Q, V, O>::preempt_scheduled(RequestId id, KV& kv) {
  const auto it = states_.find(id);
  if (it == states_.end() || it->second->status != RequestStatus::running) return false;
  SequenceState& s = *it->second;
  std::replace(planned_states_.begin(), planned_states_.end(), &s, static_cast<SequenceState*>(nullptr));
  // num_computed_tokens is still the step's start: what the cache holds.
  free_blocks(kv, id, s.num_computed_tokens, false);
  running_.erase(std::find(running_.begin(), running_.end(), &s));
  requeue_preempted(s);
  return true;
}

template <class Q, class V, class O>
template <class KV>
void TokenBudgetScheduler<Q, V, O>::free_blocks(KV& kv, RequestId id, std::size_t written, bool all_written) {
  if constexpr (requires { kv.free_unwritten(id, written); }) {
    if (!all_written) {
      kv.free_unwritten(id, written);
      return;
    }
  }
  kv.free(id);
}

template <class Q, class V, class O>
void TokenBudgetScheduler<Q, V, O>::requeue_preempted(SequenceState& s) {
  s.num_computed_tokens = 0;
  s.status = RequestStatus::preempted;
  ++s.num_preemptions;
  ++num_preemptions_;
  if (!s.paused) waiting_.push(s);  // original key: resumes ahead of later arrivals
  ++num_waiting_;
}

template <class Q, class V, class O>
void TokenBudgetScheduler<Q, V, O>::set_paused(RequestId id, bool paused) {
  const auto it = states_.find(id);
  if (it == states_.end()) return;
  SequenceState& s = *it->second;
  if (s.paused == paused) return;
  if (s.status == RequestStatus::waiting || s.status == RequestStatus::preempted) {
    // Out of the queue while paused, so the head is always admissible;
    // back under the same key when resumed, so the place is kept.
    if (paused)
      waiting_.erase(s);
    else
      waiting_.push(s);
  }
  s.paused = paused;
}

template <class Q, class V, class O>
const SequenceState* TokenBudgetScheduler<Q, V, O>::find(RequestId id) const noexcept {
  const auto it = states_.find(id);
  return it == states_.end() ? nullptr : it->second.get();
}

template <class Q, class V, class O>
template <class KV>
void TokenBudgetScheduler<Q, V, O>::preempt(std::size_t running_index, KV& kv) {
  SequenceState& s = *running_[running_index];
  // A victim already scheduled this step has blocks (and prefix-cache keys)
  // for tokens its step will now never write: free only what it holds.
  free_blocks(kv, s.id(), s.num_computed_tokens, false);
  drop_decision(s);
  running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(running_index));
  requeue_preempted(s);
  plan_.preempted.push_back(s.id());
  preempted_this_step_ = true;
}

template <class Q, class V, class O>
template <class KV>
void TokenBudgetScheduler<Q, V, O>::fail(std::size_t running_index, KV& kv) {
  SequenceState& s = *running_[running_index];
  const RequestId id = s.id();
  free_blocks(kv, id, s.num_computed_tokens, false);
  drop_decision(s);
  running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(running_index));
  plan_.failed.push_back(id);
  states_.erase(id);
}

template <class Q, class V, class O>
void TokenBudgetScheduler<Q, V, O>::fail_waiting_head(SequenceState& s) {
  const RequestId id = s.id();
  waiting_.pop_front();
  --num_waiting_;
  plan_.failed.push_back(id);
  states_.erase(id);
}

template <class Q, class V, class O>
bool TokenBudgetScheduler<Q, V, O>::can_never_fit(const SequenceState& s) const noexcept {
  const std::size_t blocks_needed = (s.tokens.size() + block_size_ - 1) / block_size_;
  return blocks_needed > total_blocks_;
}

template <class Q, class V, class O>
void TokenBudgetScheduler<Q, V, O>::drop_decision(const SequenceState& s) noexcept {
  for (auto it = decisions_.begin(); it != decisions_.end(); ++it) {
    if (it->state == &s) {
      budget_ += it->num_tokens;
      decisions_.erase(it);
      return;
    }
  }
}

}  // namespace izwi::detail
