#pragma once
// The stock stream notifiers (the StreamNotifier policy,
// docs/concepts/stream_notifier.md):
//
//   CallbackNotifier  the default: any callable set with on_ready(), stored in
//                     a std::function. Blocking readers that never set one pay
//                     a null check per step; an asynchronous consumer (the
//                     server) pays one indirect call per stream per step.
//   BlockingNotifier  stateless, does nothing: for programs that only read
//                     with next() / wait_for(). The engine wakes the stream's
//                     condition variable and nothing else (no lock taken,
//                     nothing stored per stream).

#include <concepts>
#include <functional>
#include <type_traits>
#include <utility>

#include "izwi/concepts/stream_notifier.hpp"
#include "izwi/concepts/tags.hpp"

namespace izwi {

struct CallbackNotifier {
  using policy_category = stream_notifier_tag;

  CallbackNotifier() = default;
  /// Any callable, so `stream.on_ready([...] { ... })` reads as before.
  template <class F>
    requires(!std::same_as<std::remove_cvref_t<F>, CallbackNotifier> && std::invocable<F&>)
  CallbackNotifier(F&& callback) : callback_(std::forward<F>(callback)) {}  // NOLINT: implicit on purpose

  void notify() const {
    if (callback_) callback_();
  }

 private:
  std::function<void()> callback_;
};

struct BlockingNotifier {
  using policy_category = stream_notifier_tag;
  void notify() const noexcept {}
};

static_assert(StreamNotifier<CallbackNotifier>);
static_assert(StreamNotifier<BlockingNotifier>);

}  // namespace izwi
