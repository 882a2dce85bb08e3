#pragma once
// ResponseStream: the consumer's end of a streamed request.
//
// The stream is bounded: it holds at most `capacity` chunks. When a consumer
// falls behind and the stream fills, the engine pauses that request (it keeps
// its KV blocks but is not scheduled) instead of buffering without limit or
// stalling everyone else; when the consumer reads again, the request resumes.
// Closing or destroying the stream before its last chunk aborts the request
// and frees everything it holds: a client that hangs up costs nothing more.
//
// How a consumer learns that chunks arrived is the engine's StreamNotifier
// policy (concepts/stream_notifier.hpp): BasicResponseStream<N> is the stream
// of an Engine<S, K, E, N>; ResponseStream is the default engine's
// (CallbackNotifier: on_ready takes any callable).

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <type_traits>
#include <memory>
#include <mutex>
#include <optional>

#include "izwi/core/ids.hpp"
#include "izwi/engine/detail/chunk_ring.hpp"
#include "izwi/engine/detail/mailbox.hpp"
#include "izwi/engine/output.hpp"
#include "izwi/engine/stream_notifiers.hpp"

namespace izwi {

namespace detail {

/// Shared between the engine (producer) and one ResponseStream (consumer):
/// the chunks and their locking; the notifier is NotifyingChannel's. The
/// engine's commands and records hold this part, so they do not depend on
/// the notifier type.
class StreamChannel {
 public:
  StreamChannel(RequestId id, std::size_t capacity, std::shared_ptr<EngineMailbox> mailbox)
      : id_(id), capacity_(capacity < 1 ? 1 : capacity), mailbox_(std::move(mailbox)), chunks_(capacity_ + 1) {}

  RequestId id() const noexcept { return id_; }

  // --- producer (the stepping thread) ---
  /// Always accepted, without waking the consumer: the engine keeps the queue
  /// within capacity by pausing the request (the final chunk may take one
  /// slot beyond it), queues every chunk of a step this way and notifies each
  /// stream once after the step, outside its locks (NotifyingChannel::notify).
  void push_quietly(StreamChunk&& chunk) {
    std::lock_guard lock(mutex_);
    if (chunk.finished()) producer_done_ = true;
    chunks_.push_back(std::move(chunk));
  }

  bool full() const {
    std::lock_guard lock(mutex_);
    return chunks_.size() >= capacity_;
  }
  bool closed_by_consumer() const {
    std::lock_guard lock(mutex_);
    return consumer_closed_;
  }

  // --- consumer ---
  std::optional<StreamChunk> pop(std::unique_lock<std::mutex>& lock) {
    if (chunks_.empty()) return std::nullopt;
    const bool was_full = chunks_.size() >= capacity_;
    StreamChunk chunk = std::move(chunks_.front());
    chunks_.pop_front();
    if (chunk.finished()) consumer_done_ = true;
    const bool tell_engine = was_full && !producer_done_;
    lock.unlock();
    // Only the full -> not-full edge matters: that is when a paused request can resume.
    if (tell_engine) mailbox_->post({EngineCommand::Kind::stream_drained, id_, {}, {}, {}});
    return chunk;
  }

  std::optional<StreamChunk> next() {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [&] { return !chunks_.empty() || consumer_done_; });
    return pop(lock);
  }
  std::optional<StreamChunk> try_next() {
    std::unique_lock lock(mutex_);
    return pop(lock);
  }
  template <class Rep, class Period>
  bool wait_for(std::chrono::duration<Rep, Period> timeout) {
    std::unique_lock lock(mutex_);
    return ready_.wait_for(lock, timeout, [&] { return !chunks_.empty() || consumer_done_; });
  }
  bool done() const {
    std::lock_guard lock(mutex_);
    return consumer_done_;
  }
  /// Consumer hangs up: the engine aborts the request unless it already
  /// finished. `under_lock` runs with the channel locked, once (the notifier
  /// drops its consumer there).
  template <class F>
  void close(F&& under_lock) {
    bool tell_engine = false;
    {
      std::lock_guard lock(mutex_);
      if (consumer_closed_) return;
      consumer_closed_ = true;
      tell_engine = !producer_done_;
      consumer_done_ = true;
      chunks_.clear();
      under_lock();
    }
    ready_.notify_all();
    if (tell_engine) mailbox_->post({EngineCommand::Kind::stream_closed, id_, {}, {}, {}});
  }

 protected:
  const RequestId id_;
  const std::size_t capacity_;
  std::shared_ptr<EngineMailbox> mailbox_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  ChunkRing chunks_;
  bool producer_done_ = false;   // final chunk pushed
  bool consumer_done_ = false;   // final chunk taken, or closed
  bool consumer_closed_ = false;
};

/// A StreamChannel with the engine's notifier. A stateless notifier is not
/// stored: notify() wakes the readers and calls N{} without taking the lock.
template <StreamNotifier N>
class NotifyingChannel final : public StreamChannel {
 public:
  using StreamChannel::StreamChannel;

  /// Wakes a blocked next() and calls the consumer's notifier, outside the lock.
  void notify() {
    if constexpr (std::is_empty_v<N>) {
      ready_.notify_all();
      N{}.notify();
    } else {
      std::shared_ptr<const N> notifier;
      {
        std::lock_guard lock(mutex_);
        notifier = notifier_;
      }
      ready_.notify_all();
      if (notifier) notifier->notify();
    }
  }

  /// Sets the consumer's notifier (calls it at once if chunks are waiting).
  void set_notifier(N notifier) {
    if constexpr (std::is_empty_v<N>) {
      (void)notifier;
    } else {
      auto shared = std::make_shared<const N>(std::move(notifier));
      bool call_now = false;
      {
        std::lock_guard lock(mutex_);
        if (consumer_closed_) return;
        notifier_ = shared;
        call_now = !chunks_.empty();
      }
      if (call_now) shared->notify();
    }
  }

  void close() {
    // [&], not [this]: with an empty notifier the body names no member, and
    // Clang warns about an unused explicit capture.
    StreamChannel::close([&] {
      if constexpr (!std::is_empty_v<N>) notifier_.reset();
    });
  }

 private:
  struct Nothing {};
  // Shared so notify() can call it outside the lock while close() drops it.
  [[no_unique_address]] std::conditional_t<std::is_empty_v<N>, Nothing, std::shared_ptr<const N>> notifier_;
};

}  // namespace detail

/// Move-only handle to a streamed request. Reading is thread-safe with
/// respect to the engine; one consumer thread per stream.
template <StreamNotifier Notifier>
class BasicResponseStream {
 public:
  using notifier_type = Notifier;
  using channel_type = detail::NotifyingChannel<Notifier>;

  BasicResponseStream() = default;
  explicit BasicResponseStream(std::shared_ptr<channel_type> channel) : channel_(std::move(channel)) {}
  BasicResponseStream(BasicResponseStream&&) noexcept = default;
  BasicResponseStream& operator=(BasicResponseStream&& other) noexcept {
    if (this != &other) {
      close();
      channel_ = std::move(other.channel_);
    }
    return *this;
  }
  BasicResponseStream(const BasicResponseStream&) = delete;
  BasicResponseStream& operator=(const BasicResponseStream&) = delete;
  ~BasicResponseStream() { close(); }

  RequestId id() const noexcept { return channel_ ? channel_->id() : 0; }

  /// Blocks for the next chunk; std::nullopt once the final chunk was returned
  /// (or the stream was closed). Needs the engine to be stepping (run(), or
  /// another thread calling step()).
  std::optional<StreamChunk> next() { return channel_ ? channel_->next() : std::nullopt; }
  /// The next chunk if one is ready, without blocking.
  std::optional<StreamChunk> try_next() { return channel_ ? channel_->try_next() : std::nullopt; }
  /// True when a chunk is ready or the stream has ended, within the timeout.
  template <class Rep, class Period>
  bool wait_for(std::chrono::duration<Rep, Period> timeout) {
    return !channel_ || channel_->wait_for(timeout);
  }
  /// Sets the notifier the engine calls once per step in which this stream
  /// got chunks, on the stepping thread, outside every lock; at once if
  /// chunks are already waiting. With the default CallbackNotifier it is any
  /// callable. For asynchronous consumers (a server on an event loop): keep
  /// it short — post a wake-up to your own executor and read with try_next()
  /// there. It may run once more after close() returns, so it must not own
  /// the consumer (capture a weak_ptr). Replaces any earlier notifier; a
  /// stateless notifier type needs none (the engine calls it for every stream).
  void on_ready(Notifier notifier) {
    if (channel_) channel_->set_notifier(std::move(notifier));
  }
  /// The final chunk has been read (or the stream closed).
  bool done() const { return !channel_ || channel_->done(); }
  /// Stops reading; aborts the request if it has not finished.
  void close() {
    if (channel_) channel_->close();
  }

 private:
  std::shared_ptr<channel_type> channel_;
};

/// The stream of the default engine (CallbackNotifier).
using ResponseStream = BasicResponseStream<CallbackNotifier>;

}  // namespace izwi
