#pragma once
// Waiting queues for the token-budget loop: ordered containers keyed on a value
// that never changes while a request waits, so the head is found in O(1) and
// an insert or erase costs O(log n) — nothing is re-sorted as time passes.
//
// A queue is any type with (s a SequenceState&):
//   Queue(const SchedulerConfig&)
//   q.push(s)           insert (s's key is computed from s; it must be unique)
//   q.erase(s) -> bool  remove s if present
//   q.front() -> SequenceState*   the next request to admit, nullptr when empty
//   q.pop_front()
//   q.size(), q.empty()

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <tuple>

#include "izwi/core/ids.hpp"
#include "izwi/scheduler/scheduler_config.hpp"
#include "izwi/scheduler/sequence_state.hpp"

namespace izwi::detail {

/// Requests ordered by an `Order`'s key (smallest first).
template <class Order>
class OrderedWaitingQueue {
 public:
  explicit OrderedWaitingQueue(const SchedulerConfig& config) : order_(config) {}

  void push(SequenceState& s) { entries_.emplace(order_.key(s), &s); }
  bool erase(const SequenceState& s) { return entries_.erase(order_.key(s)) > 0; }
  SequenceState* front() const noexcept { return entries_.empty() ? nullptr : entries_.begin()->second; }
  void pop_front() { entries_.erase(entries_.begin()); }
  std::size_t size() const noexcept { return entries_.size(); }
  bool empty() const noexcept { return entries_.empty(); }

 private:
  [[no_unique_address]] Order order_;
  std::map<typename Order::key_type, SequenceState*> entries_;
};

/// First come, first served: by arrival time, then id. A preempted request
/// keeps its arrival time, so it goes back ahead of every later arrival.
struct ArrivalOrder {
  using key_type = std::tuple<std::int64_t, RequestId>;
  explicit ArrivalOrder(const SchedulerConfig&) noexcept {}
  static key_type key(const SequenceState& s) noexcept {
    return {s.request.arrival_time.time_since_epoch().count(), s.request.id};
  }
};

/// Priority with aging. At time t a request's effective priority is
/// `priority - rate * (t - arrival)` (lower is served sooner). For two waiting
/// requests compared at the same t the `- rate * t` term cancels, leaving
/// `priority + rate * arrival`, which does not depend on t: the order of an
/// ordered container stays right forever without re-sorting, and a request
/// that waits long enough overtakes any stream of later, higher-priority
/// arrivals. Ties: earlier arrival, then smaller id.
struct AgedPriorityOrder {
  using key_type = std::tuple<double, std::int64_t, RequestId>;
  explicit AgedPriorityOrder(const SchedulerConfig& config) noexcept : rate(config.priority_aging_per_second) {}
  key_type key(const SequenceState& s) const noexcept {
    const auto since_epoch = s.request.arrival_time.time_since_epoch();
    const double arrival_seconds = std::chrono::duration<double>(since_epoch).count();
    return {static_cast<double>(s.request.priority) + rate * arrival_seconds, since_epoch.count(), s.request.id};
  }
  double rate = 0.0;
};

using FcfsWaitingQueue = OrderedWaitingQueue<ArrivalOrder>;
using PriorityWaitingQueue = OrderedWaitingQueue<AgedPriorityOrder>;

}  // namespace izwi::detail
