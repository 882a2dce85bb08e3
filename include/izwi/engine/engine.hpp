#pragma once
// izwi::Engine<Scheduler, KVCache, Executor, Notifier>: the step loop.
//
// Each step: apply what other threads posted (new requests, aborts, stream
// events) → the scheduler plans one token budget → the executor runs the
// whole batch in one forward pass and samples → the scheduler advances → the
// engine processes outputs (stop conditions, detokenization, streaming,
// statistics, metrics) and ends finished requests. See docs/architecture.md.
//
// The policies are chosen at compile time; the step loop makes no virtual
// call and uses no std::function (the default Notifier, CallbackNotifier,
// holds the consumer's callable in one: see docs/concepts/stream_notifier.md). An engine given a policy that does not fit
// fails to compile with one message naming the missing requirement.
//
// Three ways to get results:
//   generate(request)            blocks, returns the complete RequestOutput
//   generate_streaming(request)  returns a ResponseStream of chunks
//   add_request(request) + step() the caller drives; step() returns the chunks
//                                produced by such requests in that step
// run() steps on a background thread until stop(); add_request, abort,
// generate and generate_streaming are safe from any thread meanwhile.

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "izwi/concepts/executor.hpp"
#include "izwi/concepts/kv_cache.hpp"
#include "izwi/concepts/scheduler.hpp"
#include "izwi/concepts/stream_notifier.hpp"
#include "izwi/core/request.hpp"
#include "izwi/core/step.hpp"
#include "izwi/engine/detail/mailbox.hpp"
#include "izwi/engine/detail/step_metrics.hpp"
#include "izwi/engine/detail/policy_checks.hpp"
#include "izwi/engine/detail/request_record.hpp"
#include "izwi/engine/engine_config.hpp"
#include "izwi/engine/metrics.hpp"
#include "izwi/engine/output.hpp"
#include "izwi/engine/stream.hpp"
#include "izwi/engine/stream_notifiers.hpp"

namespace izwi {

/// Notifier: how a stream's consumer learns that chunks arrived (the
/// StreamNotifier policy); the default takes any callable through on_ready().
template <class Scheduler, class KVCache, class Executor, class Notifier = CallbackNotifier>
class Engine {
  // Instantiating the check runs its ladder: a misfit stops at one
  // static_assert there, naming the first missing requirement ("|| true"
  // keeps this line from adding a second, wordless failure).
  static_assert(detail::check_engine_policies<Scheduler, KVCache, Executor, Notifier>() || true);

 public:
  using scheduler_type = Scheduler;
  using kv_cache_type = KVCache;
  using executor_type = Executor;
  using notifier_type = Notifier;
  using stream_type = BasicResponseStream<Notifier>;

  /// Takes the three policies by value. The cache must be shaped for the
  /// executor's model: kv_cache.shape() == executor.kv_cache_shape(), else
  /// izwi::invalid_argument("kv_cache", ...).
  Engine(Scheduler scheduler, KVCache kv_cache, Executor executor, EngineConfig config = {});
  /// Stops the loop and aborts every unfinished request, so no waiter hangs.
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Queues a request whose chunks step() returns. Validates it first:
  /// throws izwi::invalid_argument naming the field (sampling ranges, empty
  /// prompt, prompt beyond max_model_len, stop strings without a detokenizer,
  /// duplicate id) or izwi::unavailable (waiting queue full). Returns its id.
  RequestId add_request(Request request);
  /// Runs the request to completion and returns its output. Steps the engine
  /// itself when run() is not looping.
  RequestOutput generate(Request request);
  /// Queues the request and returns the stream of its chunks. Needs run() or
  /// another thread calling step().
  stream_type generate_streaming(Request request);
  /// Aborts a request in any state (queued, waiting, running, paused); its
  /// blocks return to the pool at the next step. False if the id is unknown
  /// or already finished.
  bool abort(RequestId id);
  /// Aborts every unfinished request (a server's shutdown deadline). Returns
  /// how many were asked to stop; their streams end with FinishReason::abort.
  std::size_t abort_all();

  /// One engine step. Returns the chunks of requests queued with
  /// add_request (valid until the next step). Thread-safe, but steps run one
  /// at a time. Never throws: an exception inside the step (allocation
  /// failure, a model bug) ends only the requests it concerns, with
  /// FinishReason::error and the exception's message (StreamChunk::error),
  /// frees their KV blocks and is counted in metrics(). When a batched forward
  /// pass throws, each sequence is retried alone, so the others continue
  /// exactly as if the faulty request had not been there. When it throws
  /// izwi::device_memory_exhausted (a GPU out of memory), the step's last
  /// sequences are preempted instead, as many as it takes, and recomputed
  /// later; only a sequence that does not fit even alone fails.
  std::span<const StreamChunk> step();
  /// True while some request is unfinished (queued, waiting or running).
  bool has_unfinished_requests() const;

  /// Steps on a background thread until stop(). No-op if already running.
  void run();
  /// Stops the background loop (unfinished requests stay; step() or run() resumes them).
  void stop();
  bool running() const noexcept { return loop_running_.load(std::memory_order_acquire); }

  /// Requests not yet running: queued plus waiting (preempted included).
  std::size_t num_pending() const noexcept;
  std::size_t num_running() const noexcept { return num_running_.load(std::memory_order_relaxed); }
  /// A consistent copy of the metrics; safe from any thread.
  EngineMetrics metrics() const;
  /// metrics() in the Prometheus text format.
  std::string metrics_text() const { return to_prometheus_text(metrics(), config_.model_name); }
  const EngineConfig& config() const noexcept { return config_; }
  /// The context limit requests are checked against (prompt plus output); 0: unlimited.
  std::size_t max_model_len() const noexcept { return max_model_len_; }

  /// The policies, for inspection when nothing is stepping (tests, tools).
  const Scheduler& scheduler() const noexcept { return scheduler_; }
  const KVCache& kv_cache() const noexcept { return kv_cache_; }
  const Executor& executor() const noexcept { return executor_; }

 private:
  using Detokenizer = detail::detokenizer_of<Executor>;
  using Record = detail::RequestRecord<Detokenizer>;

  RequestId submit(Request request, std::shared_ptr<detail::StreamChannel> stream,
                   std::shared_ptr<detail::CompletionSlot> waiter);
  void validate(Request& request) const;
  std::span<const StreamChunk> step_locked();
  void step_body();
  void execute_isolating_faults(const StepPlan& plan);
  void execute_alone(const ScheduledSequence& seq, const StepPlan& plan);
  void execute_preempting_newest(const StepPlan& plan, std::string what);
  void restore_generators(const StepPlan& plan);
  void recover_from_fault(std::string_view what);
  void reject_admission(detail::EngineCommand& command, std::string_view what, TimePoint now);
  void fail_request(RequestId id, std::string message, TimePoint now);
  void log_error(std::string_view message) const;
  void apply_commands();
  void admit(detail::EngineCommand& command);
  void process_outputs(const StepPlan& plan, TimePoint now);
  std::optional<FinishReason> append_and_check_stop(Record& record, TokenId token);
  void finish_record(Record& record, FinishReason reason, TimePoint now);
  void deliver(Record& record, StreamChunk&& chunk);
  void end_request(RequestId id, FinishReason reason, TimePoint now);
  void finish_in_scheduler(RequestId id, FinishReason reason);
  void refresh_gauges();
  void notify_streams();

  [[no_unique_address]] Scheduler scheduler_;
  [[no_unique_address]] KVCache kv_cache_;
  [[no_unique_address]] Executor executor_;
  EngineConfig config_;
  std::size_t max_model_len_ = 0;  // 0: unlimited
  std::vector<TokenId> eos_token_ids_;

  // Owned by the stepping thread (under step_mutex_).
  std::mutex step_mutex_;
  std::unordered_map<RequestId, Record> records_;
  std::vector<detail::EngineCommand> commands_;
  StepResult result_;
  std::vector<StreamChunk> polled_chunks_;
  std::vector<RequestId> finished_this_step_;
  // What this step adds to the metrics (published once, in refresh_gauges)
  // and the streams it gave chunks to (notified once, after the step).
  detail::StepMetrics step_metrics_;
  std::vector<std::shared_ptr<detail::StreamChannel>> streams_to_notify_;
  std::size_t last_plan_tokens_ = 0;
  // The fault path (exception barrier): the current plan's ids, the
  // generators as they were before execute, and a one-sequence plan for retries.
  std::vector<RequestId> plan_ids_;
  std::vector<SequenceRng> rng_snapshot_;
  StepPlan single_plan_;
  StepResult single_result_;

  // Shared with other threads.
  std::shared_ptr<detail::EngineMailbox> mailbox_ = std::make_shared<detail::EngineMailbox>();
  mutable std::mutex live_mutex_;
  std::unordered_set<RequestId> live_ids_;
  std::atomic<RequestId> next_id_{1};
  std::atomic<std::size_t> num_queued_{0};
  std::atomic<std::size_t> num_waiting_{0};
  std::atomic<std::size_t> num_running_{0};
  mutable std::mutex metrics_mutex_;
  EngineMetrics metrics_;

  std::thread loop_thread_;
  std::atomic<bool> loop_running_{false};
  std::atomic<bool> stop_requested_{false};
};

}  // namespace izwi

#include "izwi/engine/impl/engine.hpp"
