#pragma once
// StreamNotifier: how the engine tells a stream's consumer that chunks are
// ready. The fourth engine policy, chosen at compile time
// (Engine<S, K, E, Notifier>), so the step loop calls it directly.
// Documented in docs/concepts/stream_notifier.md.
//
// Valid expressions, for n a const N:
//   n.notify()     called on the stepping thread once per step in which the
//                  stream got chunks (after its blocked readers are woken),
//                  outside every engine lock; keep it short (post a wake-up
//                  to your own executor and read with try_next() there)
//   N{}            a stateless (empty) N is called without being stored: the
//                  engine calls N{}.notify() for every stream; a stateful one
//                  is set per stream by ResponseStream::on_ready(N) and moved
//                  into the stream

#include <concepts>

#include "izwi/concepts/tags.hpp"

namespace izwi {

/// Each requirement of StreamNotifier on its own, so the engine can name the
/// first one a type misses.
namespace requirements {
template <class N> concept notifier_notify = requires(const N& n) { n.notify(); };
template <class N> concept notifier_value = std::default_initializable<N> && std::move_constructible<N>;
}  // namespace requirements

template <class N>
concept StreamNotifier = opts_into<N, stream_notifier_tag> && requirements::notifier_notify<N> &&
                         requirements::notifier_value<N>;

}  // namespace izwi
