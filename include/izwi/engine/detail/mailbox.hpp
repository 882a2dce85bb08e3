#pragma once
// The engine's inbox: the one place other threads talk to the step loop.
// add_request, abort and stream events (a consumer drained or closed its
// stream) are posted here and applied at the start of the next step, so the
// scheduler and the KV cache are only ever touched by the stepping thread.

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "izwi/core/ids.hpp"
#include "izwi/core/request.hpp"

namespace izwi::detail {

class StreamChannel;
class CompletionSlot;

struct EngineCommand {
  enum class Kind : unsigned char { add, abort, stream_drained, stream_closed };
  Kind kind = Kind::add;
  RequestId id = 0;
  Request request;                          // add
  std::shared_ptr<StreamChannel> stream;    // add (streaming)
  std::shared_ptr<CompletionSlot> waiter;   // add (blocking generate)
};

class EngineMailbox {
 public:
  void post(EngineCommand command) {
    {
      std::lock_guard lock(mutex_);
      if (closed_) return;  // the engine is gone; nothing will read it
      commands_.push_back(std::move(command));
    }
    wakeup_.notify_one();
  }

  /// Moves every pending command into `out` (cleared first).
  void take(std::vector<EngineCommand>& out) {
    out.clear();
    std::lock_guard lock(mutex_);
    out.swap(commands_);
  }

  /// Blocks until a command arrives, notify() is called, or the timeout passes.
  template <class Rep, class Period>
  void wait_for(std::chrono::duration<Rep, Period> timeout) {
    std::unique_lock lock(mutex_);
    wakeup_.wait_for(lock, timeout, [&] { return !commands_.empty() || notified_; });
    notified_ = false;
  }

  void notify() {
    {
      std::lock_guard lock(mutex_);
      notified_ = true;
    }
    wakeup_.notify_one();
  }

  /// After close(), posts are dropped (streams outliving their engine).
  void close() {
    std::lock_guard lock(mutex_);
    closed_ = true;
    commands_.clear();
  }

  std::size_t size() const {
    std::lock_guard lock(mutex_);
    return commands_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable wakeup_;
  std::vector<EngineCommand> commands_;
  bool notified_ = false;
  bool closed_ = false;
};

}  // namespace izwi::detail
