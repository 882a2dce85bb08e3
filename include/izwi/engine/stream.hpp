#pragma once
// ResponseStream: the consumer's end of a streamed request.
//
// The stream is bounded: it holds at most `capacity` chunks. When a consumer
// falls behind and the stream fills, the engine pauses that request (it keeps
// its KV blocks but is not scheduled) instead of buffering without limit or
// stalling everyone else; when the consumer reads again, the request resumes.
// Closing or destroying the stream before its last chunk aborts the request
// and frees everything it holds: a client that hangs up costs nothing more.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include "izwi/core/ids.hpp"
#include "izwi/engine/detail/chunk_ring.hpp"
#include "izwi/engine/detail/mailbox.hpp"
#include "izwi/engine/output.hpp"

namespace izwi {

namespace detail {

/// Shared between the engine (producer) and one ResponseStream (consumer).
class StreamChannel {
 public:
  StreamChannel(RequestId id, std::size_t capacity, std::shared_ptr<EngineMailbox> mailbox)
      : id_(id), capacity_(capacity < 1 ? 1 : capacity), mailbox_(std::move(mailbox)), chunks_(capacity_ + 1) {}

  RequestId id() const noexcept { return id_; }

  // --- producer (the stepping thread) ---
  /// Always accepted; the engine keeps the queue within capacity by pausing
  /// the request, and the final chunk may take one slot beyond it.
  void push(StreamChunk chunk) {
    push_quietly(std::move(chunk));
    notify();
  }
  /// push() without waking the consumer: the engine queues every chunk of a
  /// step this way and calls notify() once per stream after the step, outside
  /// its locks.
  void push_quietly(StreamChunk&& chunk) {
    std::lock_guard lock(mutex_);
    if (chunk.finished()) producer_done_ = true;
    chunks_.push_back(std::move(chunk));
  }
  /// Wakes a blocked next() and calls the listener, if any.
  void notify() {
    std::shared_ptr<const std::function<void()>> listener;
    {
      std::lock_guard lock(mutex_);
      listener = listener_;
    }
    ready_.notify_all();
    if (listener) (*listener)();
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
  void set_listener(std::function<void()> listener) {
    auto shared = listener ? std::make_shared<const std::function<void()>>(std::move(listener)) : nullptr;
    bool call_now = false;
    {
      std::lock_guard lock(mutex_);
      if (consumer_closed_) return;
      listener_ = shared;
      call_now = shared && !chunks_.empty();
    }
    if (call_now) (*shared)();
  }
  /// Consumer hangs up: the engine aborts the request unless it already finished.
  void close() {
    bool tell_engine = false;
    {
      std::lock_guard lock(mutex_);
      if (consumer_closed_) return;
      consumer_closed_ = true;
      tell_engine = !producer_done_;
      consumer_done_ = true;
      chunks_.clear();
      listener_.reset();
    }
    ready_.notify_all();
    if (tell_engine) mailbox_->post({EngineCommand::Kind::stream_closed, id_, {}, {}, {}});
  }

 private:
  const RequestId id_;
  const std::size_t capacity_;
  std::shared_ptr<EngineMailbox> mailbox_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  ChunkRing chunks_;
  // Shared so push() can call it outside the lock while close() drops it.
  std::shared_ptr<const std::function<void()>> listener_;
  bool producer_done_ = false;   // final chunk pushed
  bool consumer_done_ = false;   // final chunk taken, or closed
  bool consumer_closed_ = false;
};

}  // namespace detail

/// Move-only handle to a streamed request. Reading is thread-safe with
/// respect to the engine; one consumer thread per stream.
class ResponseStream {
 public:
  ResponseStream() = default;
  explicit ResponseStream(std::shared_ptr<detail::StreamChannel> channel) : channel_(std::move(channel)) {}
  ResponseStream(ResponseStream&&) noexcept = default;
  ResponseStream& operator=(ResponseStream&& other) noexcept {
    if (this != &other) {
      close();
      channel_ = std::move(other.channel_);
    }
    return *this;
  }
  ResponseStream(const ResponseStream&) = delete;
  ResponseStream& operator=(const ResponseStream&) = delete;
  ~ResponseStream() { close(); }

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
  /// Calls `listener` each time a chunk arrives, on the thread that produced
  /// it (the engine's stepping thread), outside every lock; at once if chunks
  /// are already waiting. For asynchronous consumers (a server on an event
  /// loop): keep it short — post a wake-up to your own executor and read with
  /// try_next() there. It may run once more after close() returns, so it must
  /// not own the consumer (capture a weak_ptr). Replaces any earlier listener.
  void on_ready(std::function<void()> listener) {
    if (channel_) channel_->set_listener(std::move(listener));
  }
  /// The final chunk has been read (or the stream closed).
  bool done() const { return !channel_ || channel_->done(); }
  /// Stops reading; aborts the request if it has not finished.
  void close() {
    if (channel_) channel_->close();
  }

 private:
  std::shared_ptr<detail::StreamChannel> channel_;
};

}  // namespace izwi
