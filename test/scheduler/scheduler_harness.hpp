#pragma once
// Test driver for schedulers: a tiny deterministic executor and an engine-like
// loop (schedule → execute → update → stop checks → finish).
//
// The fake executor's next token is a hash of every previous token mixed with
// one draw from the request's own SequenceRng. So a request's output depends
// on exactly its tokens and its generator's state — the two things that must
// survive preemption — and on nothing else in the batch.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "izwi/core/hash.hpp"
#include "izwi/core/request.hpp"
#include "izwi/core/step.hpp"
#include "izwi/scheduler/scheduler_config.hpp"

namespace izwi::test {

inline TimePoint at_seconds(double seconds) {
  return TimePoint{} + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds + 1000.0));
}

/// A scheduler configuration small enough that tests reach its limits.
inline SchedulerConfig small_config(std::size_t budget = 64, std::size_t max_seqs = 8) {
  SchedulerConfig c;
  c.max_num_batched_tokens = budget;
  c.max_num_seqs = max_seqs;
  c.seed = 1;
  return c;
}

inline Request make_request(RequestId id, std::size_t prompt_length, std::uint32_t max_tokens, double arrival_seconds,
                            std::int32_t priority = 0) {
  Request r;
  r.id = id;
  for (std::size_t i = 0; i < prompt_length; ++i) r.prompt_tokens.push_back(static_cast<TokenId>((id * 31 + i) % 97));
  r.sampling.max_tokens = max_tokens;
  r.sampling.seed = id * 7919;
  r.priority = priority;
  r.arrival_time = at_seconds(arrival_seconds);
  return r;
}

/// Checks what every plan must satisfy; returns an empty string when it does.
inline std::string check_plan(const StepPlan& plan, std::size_t block_size, std::size_t max_tokens,
                              std::size_t max_seqs) {
  std::ostringstream problem;
  if (plan.num_scheduled_tokens > max_tokens) problem << "budget exceeded: " << plan.num_scheduled_tokens << "; ";
  if (plan.sequences.size() > max_seqs) problem << "max_num_seqs exceeded: " << plan.sequences.size() << "; ";
  if (plan.slot_mapping.size() != plan.num_scheduled_tokens) problem << "slot_mapping size mismatch; ";
  std::size_t sum = 0;
  std::map<std::int64_t, RequestId> slot_owner;
  std::map<RequestId, int> seen;
  for (const ScheduledSequence& s : plan.sequences) {
    if (++seen[s.id] > 1) problem << "sequence " << s.id << " twice; ";
    if (s.num_tokens == 0) problem << "empty sequence " << s.id << "; ";
    if (s.slot_offset != sum) problem << "slot_offset of " << s.id << "; ";
    if (s.num_computed_tokens + s.num_tokens > s.tokens.size()) problem << "past known tokens " << s.id << "; ";
    if (s.samples != (s.num_computed_tokens + s.num_tokens == s.tokens.size())) problem << "samples flag " << s.id << "; ";
    if (s.sampling == nullptr || s.rng == nullptr) problem << "null sampling/rng " << s.id << "; ";
    for (std::size_t k = 0; k < s.num_tokens && s.slot_offset + k < plan.slot_mapping.size(); ++k) {
      const std::size_t p = s.num_computed_tokens + k;
      if (p / block_size >= s.block_table.size()) {
        problem << "position " << p << " of " << s.id << " has no block; ";
        break;
      }
      const std::int64_t expect = static_cast<std::int64_t>(s.block_table[p / block_size] * block_size + p % block_size);
      const std::int64_t slot = plan.slot_mapping[s.slot_offset + k];
      if (slot != expect) problem << "slot of " << s.id << " at " << p << "; ";
      if (slot < static_cast<std::int64_t>(block_size)) problem << "slot in the null block; ";
      if (auto [it, fresh] = slot_owner.emplace(slot, s.id); !fresh) problem << "slot " << slot << " written twice; ";
    }
    sum += s.num_tokens;
  }
  if (sum != plan.num_scheduled_tokens) problem << "num_scheduled_tokens != sum; ";
  return problem.str();
}

/// The deterministic fake executor.
inline void fake_execute(const StepPlan& plan, StepResult& result) {
  result.clear();
  for (const ScheduledSequence& s : plan.sequences) {
    if (!s.samples) continue;
    const std::span<const TokenId> context = s.tokens.first(s.num_computed_tokens + s.num_tokens);
    const std::uint64_t h = hash64(context) ^ (*s.rng)();
    result.outputs.push_back(SequenceOutput{.id = s.id, .token = static_cast<TokenId>(h % 50000)});
  }
}

/// An engine-like loop around a scheduler S and cache K.
template <class S, class K>
struct Driver {
  Driver(S& s, K& k) : scheduler(s), kv(k) {}
  S& scheduler;
  K& kv;
  StepResult result;
  /// Outputs of requests that finished by length, by id.
  std::map<RequestId, std::vector<TokenId>> finished;
  std::vector<RequestId> failed;
  std::vector<RequestId> preempted;
  /// Ids in the order they were first scheduled.
  std::vector<RequestId> first_scheduled;
  std::map<RequestId, bool> started;
  std::string problem;
  std::size_t steps = 0;

  /// One engine step. Returns the plan it executed.
  const StepPlan& step() {
    const StepPlan& plan = scheduler.schedule(kv);
    ++steps;
    const std::string p =
        check_plan(plan, kv.block_size(), scheduler.config().max_num_batched_tokens, scheduler.config().max_num_seqs);
    if (problem.empty() && !p.empty()) problem = "step " + std::to_string(steps) + ": " + p;
    for (RequestId id : plan.failed) failed.push_back(id);
    for (RequestId id : plan.preempted) preempted.push_back(id);
    for (const ScheduledSequence& s : plan.sequences)
      if (!started[s.id]) {
        started[s.id] = true;
        first_scheduled.push_back(s.id);
      }
    fake_execute(plan, result);
    scheduler.update(result, kv);
    for (const SequenceOutput& out : result.outputs) {
      const SequenceState* state = scheduler.find(out.id);
      if (state && state->num_output_tokens() >= state->request.sampling.max_tokens.value_or(~0u)) {
        finished[out.id].assign(state->output_tokens().begin(), state->output_tokens().end());
        scheduler.finish(out.id, FinishReason::length, kv);
      }
    }
    return plan;
  }

  /// Steps until nothing is left (or max_steps).
  void run(std::size_t max_steps = 100000) {
    while ((scheduler.num_waiting() + scheduler.num_running()) > 0 && max_steps-- > 0) step();
  }
};

}  // namespace izwi::test
