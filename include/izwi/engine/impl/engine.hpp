#pragma once

#include <algorithm>
#include <cstdio>
#include <exception>
#include <limits>
#include <string>
#include <utility>

#include "izwi/core/error.hpp"
#include "izwi/core/hash.hpp"
#include "izwi/core/prompt_checks.hpp"

namespace izwi {

template <class S, class K, class E, class N>
Engine<S, K, E, N>::Engine(S scheduler, K kv_cache, E executor, EngineConfig config)
    : scheduler_(std::move(scheduler)),
      kv_cache_(std::move(kv_cache)),
      executor_(std::move(executor)),
      config_(std::move(config)) {
  if (!(kv_cache_.shape() == executor_.kv_cache_shape()))
    throw invalid_argument("kv_cache",
                           "the KV cache's shape (layers, KV heads, head dim, dtype) differs from the executor's "
                           "kv_cache_shape(); build the cache from executor.kv_cache_shape()");
  if (config_.stream_capacity == 0)
    throw invalid_argument("stream_capacity", "stream_capacity must be >= 1, got 0");
  if (config_.max_model_len) {
    max_model_len_ = *config_.max_model_len;
  } else if constexpr (HasMaxModelLen<E>) {
    max_model_len_ = static_cast<std::size_t>(executor_.max_model_len());
  }
  if constexpr (HasEosTokens<E>) {
    const std::span<const TokenId> eos = executor_.eos_token_ids();
    eos_token_ids_.assign(eos.begin(), eos.end());
  }
  refresh_gauges();
}

template <class S, class K, class E, class N>
Engine<S, K, E, N>::~Engine() {
  stop();
  mailbox_->close();
  std::lock_guard lock(step_mutex_);
  const TimePoint now = Clock::now();
  std::vector<RequestId> unfinished;
  unfinished.reserve(records_.size());
  for (auto& [id, record] : records_) unfinished.push_back(id);
  for (RequestId id : unfinished) end_request(id, FinishReason::abort, now);
  notify_streams();  // consumers blocked in next() see their final chunk
}

// --- submission (any thread) -------------------------------------------------

template <class S, class K, class E, class N>
void Engine<S, K, E, N>::validate(Request& request) const {
  request.sampling.validate();
  // The one prompt check (core/prompt_checks.hpp), here at the API edge, so
  // no id past the embedding table reaches a forward pass.
  std::size_t vocab = 0;
  if constexpr (requires(const E& e) {
                  { e.vocab_size() } -> std::convertible_to<std::size_t>;
                })
    vocab = executor_.vocab_size();
  check_prompt_tokens(request.prompt_tokens, vocab, max_model_len_);
  for (const auto& [token, bias] : request.sampling.logit_bias)
    if (vocab != 0 && static_cast<std::size_t>(token) >= vocab)
      throw invalid_argument("logit_bias", "logit_bias names token " + std::to_string(token) +
                                               ", outside the model's vocabulary of " + std::to_string(vocab) + " ids");
  if (!request.sampling.stop.empty() && !HasDetokenizer<E>)
    throw invalid_argument("stop", "stop strings need an executor that detokenizes, and this one does not");
  if (request.audio && request.audio->placeholder_offset + std::size_t{request.audio->placeholder_length} >
                           request.prompt_tokens.size())
    throw invalid_argument("audio", "the audio placeholder range lies beyond the prompt");
}

template <class S, class K, class E, class N>
RequestId Engine<S, K, E, N>::submit(Request request, std::shared_ptr<detail::StreamChannel> stream,
                                  std::shared_ptr<detail::CompletionSlot> waiter) {
  validate(request);
  if (config_.max_waiting_requests != 0 && num_pending() >= config_.max_waiting_requests)
    throw unavailable("the engine's queue is full: " + std::to_string(num_pending()) +
                      " requests are waiting (max_waiting_requests)");
  if (request.arrival_time == TimePoint{}) request.arrival_time = Clock::now();
  if (request.audio && request.audio->content_hash == 0) {
    // Hashed once here, so the prefix cache can key blocks on the audio's content.
    auto hashed = std::make_shared<AudioInput>(*request.audio);
    hashed->content_hash = audio_content_hash(hashed->samples);
    request.audio = std::move(hashed);
  }
  {
    std::lock_guard lock(live_mutex_);
    if (request.id == 0) {
      do request.id = next_id_.fetch_add(1, std::memory_order_relaxed);
      while (live_ids_.contains(request.id));
    } else if (live_ids_.contains(request.id)) {
      throw invalid_argument("id", "request id " + std::to_string(request.id) + " is already in use");
    }
    live_ids_.insert(request.id);
  }
  const RequestId id = request.id;
  num_queued_.fetch_add(1, std::memory_order_relaxed);
  detail::EngineCommand command;
  command.kind = detail::EngineCommand::Kind::add;
  command.id = id;
  command.request = std::move(request);
  command.stream = std::move(stream);
  command.waiter = std::move(waiter);
  mailbox_->post(std::move(command));
  return id;
}

template <class S, class K, class E, class N>
RequestId Engine<S, K, E, N>::add_request(Request request) {
  return submit(std::move(request), nullptr, nullptr);
}

template <class S, class K, class E, class N>
typename Engine<S, K, E, N>::stream_type Engine<S, K, E, N>::generate_streaming(Request request) {
  // The channel needs the id before the request is queued, so assign it here.
  if (request.id == 0) request.id = next_id_.fetch_add(1, std::memory_order_relaxed);
  auto channel = std::make_shared<detail::NotifyingChannel<N>>(request.id, config_.stream_capacity, mailbox_);
  submit(std::move(request), channel, nullptr);
  return stream_type(std::move(channel));
}

template <class S, class K, class E, class N>
RequestOutput Engine<S, K, E, N>::generate(Request request) {
  auto waiter = std::make_shared<detail::CompletionSlot>();
  submit(std::move(request), nullptr, waiter);
  while (!waiter->ready()) {
    if (running()) return waiter->wait();
    step();
  }
  return waiter->wait();
}

template <class S, class K, class E, class N>
bool Engine<S, K, E, N>::abort(RequestId id) {
  {
    std::lock_guard lock(live_mutex_);
    if (!live_ids_.contains(id)) return false;
  }
  mailbox_->post({detail::EngineCommand::Kind::abort, id, {}, {}, {}});
  return true;
}

template <class S, class K, class E, class N>
std::size_t Engine<S, K, E, N>::abort_all() {
  std::vector<RequestId> ids;
  {
    std::lock_guard lock(live_mutex_);
    ids.assign(live_ids_.begin(), live_ids_.end());
  }
  for (RequestId id : ids) mailbox_->post({detail::EngineCommand::Kind::abort, id, {}, {}, {}});
  return ids.size();
}

template <class S, class K, class E, class N>
bool Engine<S, K, E, N>::has_unfinished_requests() const {
  std::lock_guard lock(live_mutex_);
  return !live_ids_.empty();
}

template <class S, class K, class E, class N>
std::size_t Engine<S, K, E, N>::num_pending() const noexcept {
  return num_queued_.load(std::memory_order_relaxed) + num_waiting_.load(std::memory_order_relaxed);
}

template <class S, class K, class E, class N>
EngineMetrics Engine<S, K, E, N>::metrics() const {
  std::lock_guard lock(metrics_mutex_);
  return metrics_;
}

// --- the background loop ---------------------------------------------------------

template <class S, class K, class E, class N>
void Engine<S, K, E, N>::run() {
  if (loop_running_.exchange(true)) return;
  stop_requested_.store(false);
  loop_thread_ = std::thread([this] {
    while (!stop_requested_.load(std::memory_order_acquire)) {
      std::size_t scheduled_tokens = 0;
      {
        std::lock_guard lock(step_mutex_);
        step_locked();
        scheduled_tokens = last_plan_tokens_;
      }
      // Nothing to compute (idle, or every running request paused by a slow
      // consumer): sleep until something is posted.
      if (scheduled_tokens == 0) mailbox_->wait_for(config_.idle_poll);
    }
  });
}

template <class S, class K, class E, class N>
void Engine<S, K, E, N>::stop() {
  if (!loop_running_.load()) return;
  stop_requested_.store(true, std::memory_order_release);
  mailbox_->notify();
  if (loop_thread_.joinable()) loop_thread_.join();
  loop_running_.store(false, std::memory_order_release);
}

// --- one step (under step_mutex_) ---------------------------------------------------

template <class S, class K, class E, class N>
std::span<const StreamChunk> Engine<S, K, E, N>::step() {
  std::lock_guard lock(step_mutex_);
  return step_locked();
}

template <class S, class K, class E, class N>
std::span<const StreamChunk> Engine<S, K, E, N>::step_locked() {
  polled_chunks_.clear();
  last_plan_tokens_ = 0;
  plan_ids_.clear();
  // The exception barrier: nothing thrown inside a step leaves it, so one
  // bad request cannot end the loop (and std::terminate every stream).
  try {
    step_body();
  } catch (const std::exception& e) {
    recover_from_fault(e.what());
  } catch (...) {
    recover_from_fault("an exception of unknown type");
  }
  refresh_gauges();
  notify_streams();
  return polled_chunks_;
}

/// Wakes the consumers of every stream that got chunks this step, once each
/// step and outside every engine lock (the server's notifier posts to an I/O
/// strand). A direct call of the Notifier policy: every channel this engine
/// made is a NotifyingChannel<N> (generate_streaming).
template <class S, class K, class E, class N>
void Engine<S, K, E, N>::notify_streams() {
  for (const auto& channel : streams_to_notify_) static_cast<detail::NotifyingChannel<N>&>(*channel).notify();
  streams_to_notify_.clear();
}

template <class S, class K, class E, class N>
void Engine<S, K, E, N>::step_body() {
  apply_commands();

  const StepPlan& plan = scheduler_.schedule(kv_cache_);
  TimePoint now = Clock::now();
  for (RequestId id : plan.failed) {
    if (auto it = records_.find(id); it != records_.end())
      it->second.error = "the request needs more KV-cache blocks than the whole cache holds";
    end_request(id, FinishReason::error, now);
  }
  for (RequestId id : plan.preempted) {
    if constexpr (HasPreemptionHook<E>) executor_.preempted(id);
    if (auto it = records_.find(id); it != records_.end()) ++it->second.num_preemptions;
  }

  if (!plan.empty()) {
    for (const ScheduledSequence& seq : plan.sequences) {
      plan_ids_.push_back(seq.id);
      Record& record = records_.at(seq.id);
      if (!record.scheduled) {
        record.scheduled = true;
        record.first_scheduled = now;
      }
    }
    execute_isolating_faults(plan);
    // Failed sequences end before update(), which then skips them.
    now = Clock::now();
    for (SequenceFailure& failure : result_.failures) fail_request(failure.id, std::move(failure.message), now);
    scheduler_.update(result_, kv_cache_);
    last_plan_tokens_ = plan.num_scheduled_tokens;
    process_outputs(plan, Clock::now());
  }
}

/// Runs the plan; if the batched forward pass throws, runs each sequence
/// alone so only the ones that throw again fail. Re-running is safe: a
/// sequence writes the same K/V to the same slots, and its generator is
/// restored to where it was before the batch.
template <class S, class K, class E, class N>
void Engine<S, K, E, N>::execute_isolating_faults(const StepPlan& plan) {
  rng_snapshot_.clear();
  for (const ScheduledSequence& seq : plan.sequences)
    if (seq.rng) rng_snapshot_.push_back(*seq.rng);
  result_.clear();
  std::string what;
  bool out_of_device_memory = false;
  try {
    executor_.execute(plan, kv_cache_, result_);
    return;
  } catch (const device_memory_exhausted& e) {
    what = e.what();
    out_of_device_memory = true;
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "an exception of unknown type";
  }
  if constexpr (requires(RequestId id) { scheduler_.preempt_scheduled(id, kv_cache_); }) {
    if (out_of_device_memory && plan.sequences.size() > 1) {
      execute_preempting_newest(plan, std::move(what));
      return;
    }
  }
  {
    std::lock_guard lock(metrics_mutex_);
    ++metrics_.num_engine_faults;
  }
  log_error("a step of " + std::to_string(plan.sequences.size()) + " sequences threw (" + what +
            "); running each sequence alone to find the faulty ones");
  result_.clear();
  restore_generators(plan);
  for (const ScheduledSequence& seq : plan.sequences) execute_alone(seq, plan);
}

template <class S, class K, class E, class N>
void Engine<S, K, E, N>::restore_generators(const StepPlan& plan) {
  std::size_t next_snapshot = 0;
  for (const ScheduledSequence& seq : plan.sequences)
    if (seq.rng) *seq.rng = rng_snapshot_[next_snapshot++];
}

/// The device ran out of memory for the whole plan: runs its first
/// sequences, one fewer each time the device still runs out, and preempts
/// the ones left out (recomputed later, as vLLM does under KV pressure).
/// The plan lists running sequences, then admissions, in admission order, so
/// the newest go first, and a sequence that hit a prefix block another one
/// registered in this plan (and writes in this pass) goes before that one.
/// The first sequence alone not fitting fails with the device's message.
template <class S, class K, class E, class N>
void Engine<S, K, E, N>::execute_preempting_newest(const StepPlan& plan, std::string what) {
  const std::size_t n = plan.sequences.size();
  std::size_t keep = n;
  bool ran = false;
  while (!ran && keep > 1) {
    --keep;
    restore_generators(plan);
    single_plan_.clear();
    for (std::size_t i = 0; i < keep; ++i) {
      ScheduledSequence seq = plan.sequences[i];
      const auto first = plan.slot_mapping.begin() + static_cast<std::ptrdiff_t>(seq.slot_offset);
      seq.slot_offset = single_plan_.slot_mapping.size();
      single_plan_.slot_mapping.insert(single_plan_.slot_mapping.end(), first,
                                       first + static_cast<std::ptrdiff_t>(seq.num_tokens));
      single_plan_.num_scheduled_tokens += seq.num_tokens;
      single_plan_.sequences.push_back(seq);
    }
    result_.clear();
    try {
      executor_.execute(single_plan_, kv_cache_, result_);
      ran = true;
    } catch (const device_memory_exhausted& e) {
      what = e.what();
    } catch (...) {
      // Another fault: the kept sequences are isolated one by one, as any fault is.
      result_.clear();
      restore_generators(plan);
      for (std::size_t i = 0; i < keep; ++i) execute_alone(plan.sequences[i], plan);
      ran = true;
    }
  }
  if (!ran) {
    result_.clear();
    result_.failures.push_back({plan.sequences.front().id, "the engine step failed: " + what});
  }
  log_error("the device ran out of memory for a step of " + std::to_string(n) + " sequences (" + what + "); ran " +
            (ran ? "the first " + std::to_string(keep) : std::string("none")) + ", preempted the last " +
            std::to_string(n - keep) + " (recomputed later)");
  for (std::size_t i = keep; i < n; ++i) {
    const RequestId id = plan.sequences[i].id;
    if (!scheduler_.preempt_scheduled(id, kv_cache_)) continue;
    if constexpr (HasPreemptionHook<E>) executor_.preempted(id);
    if (auto it = records_.find(id); it != records_.end()) ++it->second.num_preemptions;
  }
}

template <class S, class K, class E, class N>
void Engine<S, K, E, N>::execute_alone(const ScheduledSequence& seq, const StepPlan& plan) {
  single_plan_.clear();
  single_result_.clear();
  ScheduledSequence alone = seq;
  alone.slot_offset = 0;
  single_plan_.sequences.push_back(alone);
  const auto first = plan.slot_mapping.begin() + static_cast<std::ptrdiff_t>(seq.slot_offset);
  single_plan_.slot_mapping.assign(first, first + static_cast<std::ptrdiff_t>(seq.num_tokens));
  single_plan_.num_scheduled_tokens = seq.num_tokens;
  try {
    executor_.execute(single_plan_, kv_cache_, single_result_);
  } catch (const std::exception& e) {
    result_.failures.push_back({seq.id, std::string("the engine step failed: ") + e.what()});
    return;
  } catch (...) {
    result_.failures.push_back({seq.id, "the engine step failed with an exception of unknown type"});
    return;
  }
  // Append this sequence's results, rebasing ranges into the shared arrays.
  const auto top_base = static_cast<std::uint32_t>(result_.top_logprobs.size());
  const auto audio_base = static_cast<std::uint32_t>(result_.audio.size());
  for (SequenceOutput out : single_result_.outputs) {
    out.top_logprobs_begin += top_base;
    out.audio_begin += audio_base;
    result_.outputs.push_back(out);
  }
  result_.top_logprobs.insert(result_.top_logprobs.end(), single_result_.top_logprobs.begin(),
                              single_result_.top_logprobs.end());
  result_.audio.insert(result_.audio.end(), single_result_.audio.begin(), single_result_.audio.end());
  if (single_result_.audio_sample_rate) result_.audio_sample_rate = single_result_.audio_sample_rate;
  for (SequenceFailure& failure : single_result_.failures) result_.failures.push_back(std::move(failure));
}

/// An exception outside the forward pass (scheduling, output processing):
/// the requests of the step's plan fail, or every request when no plan was
/// made (the scheduler itself threw, so no request's state can be trusted).
template <class S, class K, class E, class N>
void Engine<S, K, E, N>::recover_from_fault(std::string_view what) {
  {
    std::lock_guard lock(metrics_mutex_);
    ++metrics_.num_engine_faults;
  }
  log_error("an engine step threw outside the forward pass: " + std::string(what));
  try {
    commands_.clear();
    const TimePoint now = Clock::now();
    // Records finished by process_outputs before it threw: complete their removal.
    std::vector<RequestId> ids;
    for (auto& [id, record] : records_)
      if (record.finished) ids.push_back(id);
    for (RequestId id : ids) {
      finish_in_scheduler(id, records_.at(id).finish_reason);
      records_.erase(id);
    }
    ids = plan_ids_;
    if (ids.empty())
      for (auto& [id, record] : records_) ids.push_back(id);
    for (RequestId id : ids) fail_request(id, "the engine step failed: " + std::string(what), now);
  } catch (...) {
    log_error("recovering from the fault threw as well; the requests concerned may not have ended");
  }
}

/// A request whose admission threw (an allocation failure): it ends with
/// FinishReason::error at once, so its client is answered and its id freed.
template <class S, class K, class E, class N>
void Engine<S, K, E, N>::reject_admission(detail::EngineCommand& command, std::string_view what, TimePoint now) {
  {
    std::lock_guard lock(metrics_mutex_);
    ++metrics_.num_engine_faults;
  }
  const std::string message = "the engine could not admit the request: " + std::string(what);
  finish_in_scheduler(command.id, FinishReason::error);
  if (records_.contains(command.id)) {
    fail_request(command.id, message, now);
    return;
  }
  log_error("request " + std::to_string(command.id) + " failed: " + message);
  {
    std::lock_guard lock(metrics_mutex_);
    ++metrics_.num_request_errors;
    ++metrics_.finished_requests[static_cast<std::size_t>(FinishReason::error)];
  }
  if (command.waiter) {
    RequestOutput out;
    out.id = command.id;
    out.finish_reason = FinishReason::error;
    out.error = message;
    command.waiter->fulfil(std::move(out));
  } else {
    StreamChunk chunk;
    chunk.id = command.id;
    chunk.finish_reason = FinishReason::error;
    chunk.error = message;
    if (command.stream) {
      command.stream->push_quietly(std::move(chunk));
      streams_to_notify_.push_back(command.stream);  // notified after the step, as every stream
    } else {
      polled_chunks_.push_back(std::move(chunk));
    }
  }
  std::lock_guard lock(live_mutex_);
  live_ids_.erase(command.id);
}

/// Ends a request with FinishReason::error and `message` (its last chunk
/// carries the message; the log gets it too).
template <class S, class K, class E, class N>
void Engine<S, K, E, N>::fail_request(RequestId id, std::string message, TimePoint now) {
  auto it = records_.find(id);
  if (it == records_.end() || it->second.finished) return;
  log_error("request " + std::to_string(id) + " failed: " + message);
  it->second.error = std::move(message);
  {
    std::lock_guard lock(metrics_mutex_);
    ++metrics_.num_request_errors;
  }
  end_request(id, FinishReason::error, now);
}

template <class S, class K, class E, class N>
void Engine<S, K, E, N>::log_error(std::string_view message) const {
  if (!config_.log_errors) return;
  const std::string line = "izwi engine '" + config_.model_name + "': " + std::string(message) + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

template <class S, class K, class E, class N>
void Engine<S, K, E, N>::apply_commands() {
  mailbox_->take(commands_);
  const TimePoint now = Clock::now();
  for (detail::EngineCommand& command : commands_) {
    switch (command.kind) {
      case detail::EngineCommand::Kind::add:
        num_queued_.fetch_sub(1, std::memory_order_relaxed);
        try {
          admit(command);
        } catch (const std::exception& e) {
          reject_admission(command, e.what(), now);
        } catch (...) {
          reject_admission(command, "an exception of unknown type", now);
        }
        break;
      case detail::EngineCommand::Kind::abort:
      case detail::EngineCommand::Kind::stream_closed:
        end_request(command.id, FinishReason::abort, now);
        break;
      case detail::EngineCommand::Kind::stream_drained:
        if (auto it = records_.find(command.id); it != records_.end() && it->second.paused) {
          it->second.paused = false;
          scheduler_.set_paused(command.id, false);
        }
        break;
    }
  }
  commands_.clear();
}

template <class S, class K, class E, class N>
void Engine<S, K, E, N>::admit(detail::EngineCommand& command) {
  Request& request = command.request;
  Record record;
  record.id = request.id;
  record.task = request.task;
  record.num_prompt_tokens = request.prompt_tokens.size();
  record.sampling = request.sampling;
  std::size_t limit = request.sampling.max_tokens ? *request.sampling.max_tokens : static_cast<std::size_t>(-1);
  if (max_model_len_ != 0) limit = std::min(limit, max_model_len_ - record.num_prompt_tokens);
  record.max_output_tokens = limit;
  // The scheduler and executor see the effective limit: an executor that
  // must act on a request's last token (a speech model flushing its audio)
  // knows which one it is.
  if (limit <= std::numeric_limits<std::uint32_t>::max())
    request.sampling.max_tokens = static_cast<std::uint32_t>(limit);
  for (const std::string& s : request.sampling.stop)
    record.stop_hold_back = std::max(record.stop_hold_back, s.size() - 1);
  record.stream = command.stream;  // copied: reject_admission still answers them if admission throws
  record.waiter = command.waiter;
  record.arrival = request.arrival_time;
  if constexpr (HasDetokenizer<E>) record.detokenizer = executor_.make_detokenizer();
  records_.emplace(record.id, std::move(record));
  scheduler_.add(std::move(request));
}

template <class S, class K, class E, class N>
void Engine<S, K, E, N>::process_outputs(const StepPlan& plan, TimePoint now) {
  (void)plan;
  detail::StepMetrics& m = step_metrics_;  // published with the gauges, at the end of the step
  finished_this_step_.clear();
  for (const SequenceOutput& out : result_.outputs) {
    auto it = records_.find(out.id);
    if (it == records_.end()) continue;
    Record& r = it->second;

    // Timings: time to first token, then the gap between tokens.
    if (r.output_tokens.empty()) {
      r.first_token = now;
      m.time_to_first_token.observe(seconds_between(r.arrival, now));
      m.prompt_tokens += r.num_prompt_tokens;
    } else {
      m.inter_token_latency.observe(seconds_between(r.last_token, now));
    }
    r.last_token = now;
    ++m.generation_tokens;

    r.output_tokens.push_back(out.token);
    if (r.sampling.logprobs) {
      r.logprobs.push_back(
          detail::spelled_logprobs(r.detokenizer, out.token, out.logprob, result_.top_logprobs_of(out)));
    }
    if (out.audio_count > 0) {
      if (r.audio.empty()) {
        r.first_audio = now;
        m.time_to_first_audio.observe(seconds_between(r.arrival, now));
      }
      const auto samples = result_.audio_of(out);
      r.audio.insert(r.audio.end(), samples.begin(), samples.end());
      r.audio_sample_rate = result_.audio_sample_rate;
    }

    const std::optional<FinishReason> reason = append_and_check_stop(r, out.token);

    if (reason) {
      finish_record(r, *reason, now);
      finished_this_step_.push_back(r.id);
    } else if (r.wants_chunks()) {
      deliver(r, r.take_chunk());
    }
  }
  for (RequestId id : finished_this_step_) {
    finish_in_scheduler(id, records_.at(id).finish_reason);
    records_.erase(id);
  }
}

// Stop conditions, in vLLM's order: nothing stops before min_tokens except
// the length limits; EOS and stop ids end without adding text. Otherwise the
// token's text is appended and searched for the stop strings.
template <class S, class K, class E, class N>
std::optional<FinishReason> Engine<S, K, E, N>::append_and_check_stop(Record& r, TokenId token) {
  const std::size_t n = r.output_tokens.size();
  const bool may_stop = n >= r.sampling.min_tokens;
  const bool is_eos = !r.sampling.ignore_eos &&
                      std::find(eos_token_ids_.begin(), eos_token_ids_.end(), token) != eos_token_ids_.end();
  const bool is_stop_id = std::find(r.sampling.stop_token_ids.begin(), r.sampling.stop_token_ids.end(), token) !=
                          r.sampling.stop_token_ids.end();
  if (may_stop && (is_eos || is_stop_id)) {
    if (is_stop_id) r.stop_token = token;
    return FinishReason::stop;
  }
  const std::size_t searched_from = r.text.size();
  r.text += r.detokenizer.append(token);
  if (may_stop && !r.sampling.stop.empty()) {
    // A stop string may straddle earlier text, so each search starts one
    // stop-length back; the earliest match across all stop strings wins.
    std::size_t earliest = std::string::npos;
    for (const std::string& stop : r.sampling.stop) {
      const std::size_t from = searched_from >= stop.size() ? searched_from - stop.size() + 1 : 0;
      const std::size_t at = r.text.find(stop, from);
      if (at < earliest) {
        earliest = at;
        r.stop_string = stop;
      }
    }
    if (earliest != std::string::npos) {
      r.text.resize(earliest);
      return FinishReason::stop;
    }
  }
  if (n >= r.max_output_tokens) return FinishReason::length;
  return std::nullopt;
}

template <class S, class K, class E, class N>
void Engine<S, K, E, N>::deliver(Record& r, StreamChunk&& chunk) {
  if (r.stream) {
    r.stream->push_quietly(std::move(chunk));
    if (streams_to_notify_.empty() || streams_to_notify_.back() != r.stream) streams_to_notify_.push_back(r.stream);
    // Back-pressure: a full stream pauses its request until the consumer reads.
    if (!r.finished && !r.paused && r.stream->full()) {
      r.paused = true;
      scheduler_.set_paused(r.id, true);
    }
  } else {
    polled_chunks_.push_back(std::move(chunk));
  }
}

/// Marks a record finished and delivers its final chunk or output; its
/// metrics go to this step's StepMetrics. The scheduler and the record table
/// are updated by the caller.
template <class S, class K, class E, class N>
void Engine<S, K, E, N>::finish_record(Record& r, FinishReason reason, TimePoint now) {
  // Bytes of a character the last token left unfinished come out as U+FFFD,
  // as a full decode of the same ids would; after a stop string they lie
  // beyond the cut and are dropped with the rest.
  if constexpr (requires { r.detokenizer.flush(); })
    if (!r.stop_string) r.text += r.detokenizer.flush();
  r.finished = true;
  r.finish_reason = reason;
  detail::StepMetrics& m = step_metrics_;
  ++m.finished_requests[static_cast<std::size_t>(reason)];
  m.e2e_request_latency.observe(seconds_between(r.arrival, now));
  if (r.scheduled) m.request_queue_time.observe(seconds_between(r.arrival, r.first_scheduled));
  const RequestStats stats = r.stats(now);
  if (stats.real_time_factor > 0) m.audio_real_time_factor.observe(stats.real_time_factor);
  {
    // Once per finished request (never per token): whoever sees a request's
    // final output finds its metrics already counted.
    std::lock_guard lock(metrics_mutex_);
    step_metrics_.publish_to(metrics_);
  }
  if (r.waiter) {
    r.waiter->fulfil(r.take_output(now));
  } else {
    StreamChunk chunk = r.take_chunk();
    chunk.stats = stats;
    deliver(r, std::move(chunk));
  }
  std::lock_guard lock(live_mutex_);
  live_ids_.erase(r.id);
}

/// The scheduler drops the request and frees its blocks; an executor that
/// keeps state of its own for it drops that too.
template <class S, class K, class E, class N>
void Engine<S, K, E, N>::finish_in_scheduler(RequestId id, FinishReason reason) {
  scheduler_.finish(id, reason, kv_cache_);
  if constexpr (HasRequestRelease<E>) executor_.release(id);
}

/// Ends a request from outside the output path (abort, scheduler failure).
template <class S, class K, class E, class N>
void Engine<S, K, E, N>::end_request(RequestId id, FinishReason reason, TimePoint now) {
  finish_in_scheduler(id, reason);
  auto it = records_.find(id);
  if (it == records_.end()) return;
  finish_record(it->second, reason, now);
  records_.erase(it);
}

template <class S, class K, class E, class N>
void Engine<S, K, E, N>::refresh_gauges() {
  const std::size_t waiting = scheduler_.num_waiting();
  const std::size_t running = scheduler_.num_running();
  num_waiting_.store(waiting, std::memory_order_relaxed);
  num_running_.store(running, std::memory_order_relaxed);
  const KVCacheStats kv = kv_cache_.stats();
  std::lock_guard lock(metrics_mutex_);
  step_metrics_.publish_to(metrics_);
  metrics_.num_requests_waiting = waiting + num_queued_.load(std::memory_order_relaxed);
  metrics_.num_requests_running = running;
  metrics_.kv_cache_usage = kv.usage();
  metrics_.num_kv_blocks = kv.num_blocks;
  metrics_.num_kv_blocks_used = kv.num_used_blocks;
  metrics_.prefix_cache_queries = kv.prefix_cache_queries;
  metrics_.prefix_cache_hits = kv.prefix_cache_hits;
  metrics_.num_preemptions = scheduler_.num_preemptions();
}

}  // namespace izwi
