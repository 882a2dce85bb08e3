#pragma once
// ExecutorPolicy: runs the model for one StepPlan, reading and writing K/V in
// the cache's blocks, and samples the next token of every sequence that asks.
// Documented in docs/concepts/executor.md.
//
// Valid expressions, for e an E, ce a const E, kv a K:
//   typename E::execution_space               where it runs (see memory_space.hpp)
//   ce.kv_cache_shape()  -> KVCacheShape      what the cache must hold for this model
//   e.execute(plan, kv, result)               compute plan, write one SequenceOutput per
//                                             sequence with samples == true; `result`
//                                             arrives cleared. Within a layer, K/V of all
//                                             scheduled tokens are written before any
//                                             attention reads, since a sequence may hit
//                                             prefix blocks another computes this step.
// ExecutorFor<E, K> also requires accessible_from<E::execution_space, K::memory_space>.
//
// Optional abilities, probed with `requires`:
//   ce.eos_token_ids()   -> span<const TokenId>   ends generation (unless ignore_eos)
//   ce.make_detokenizer() -> D, with d.append(TokenId) -> std::string_view giving
//                            the text that token completes (stop strings, streaming text);
//                            optionally d.token_bytes(TokenId) -> convertible to
//                            std::string_view: that token's own bytes, which the engine
//                            puts in TokenLogprobs::bytes when logprobs are asked for
//   ce.max_model_len()   -> size_t                 context limit
//   e.release(id)                                  the request ended: drop what the
//                                                  executor keeps for it beyond the KV
//                                                  cache (an encoder output, codec state)
//   e.preempted(id)                                its KV blocks were freed and it will be
//                                                  recomputed from its tokens: drop what
//                                                  that recomputation rebuilds (an encoder
//                                                  output), keep what it cannot (the codes
//                                                  of a speech frame beyond its token)

#include <concepts>
#include <cstddef>
#include <span>
#include <string_view>

#include "izwi/concepts/archetypes.hpp"
#include "izwi/concepts/kv_cache.hpp"
#include "izwi/concepts/memory_space.hpp"
#include "izwi/concepts/tags.hpp"
#include "izwi/core/kv_cache_shape.hpp"
#include "izwi/core/step.hpp"

namespace izwi {

/// Each requirement on its own, so the engine can name the first one a type misses.
namespace requirements {
template <class E> concept executor_execution_space = requires { typename E::execution_space; };
template <class E> concept executor_kv_cache_shape = requires(const E& ce) {
  { ce.kv_cache_shape() } -> std::same_as<KVCacheShape>;
};
template <class E, class K> concept executor_execute = requires(E& e, const StepPlan& plan, K& kv, StepResult& result) {
  e.execute(plan, kv, result);
};
}  // namespace requirements

template <class E>
concept ExecutorPolicy = opts_into<E, executor_tag> && requirements::executor_execution_space<E> &&
                         requirements::executor_kv_cache_shape<E>;

/// E can run against the blocks of a K.
template <class E, class K>
concept ExecutorFor = ExecutorPolicy<E> && KVCachePolicy<K> &&
                      accessible_from<typename E::execution_space, typename K::memory_space> &&
                      requirements::executor_execute<E, K>;

/// Optional: the executor knows its model's end-of-sequence tokens.
template <class E>
concept HasEosTokens = requires(const E& e) {
  { e.eos_token_ids() } -> std::convertible_to<std::span<const TokenId>>;
};

/// Optional: the executor turns tokens into text incrementally.
template <class E>
concept HasDetokenizer = requires(const E& e) {
  e.make_detokenizer();
  { e.make_detokenizer().append(TokenId{}) } -> std::convertible_to<std::string_view>;
};

/// Optional: the model's context limit.
template <class E>
concept HasMaxModelLen = requires(const E& e) {
  { e.max_model_len() } -> std::convertible_to<std::size_t>;
};

/// Optional: the executor keeps per-request state beyond the KV cache.
template <class E>
concept HasRequestRelease = requires(E& e, RequestId id) { e.release(id); };

/// Optional: the executor wants to know when a request is preempted.
template <class E>
concept HasPreemptionHook = requires(E& e, RequestId id) { e.preempted(id); };

}  // namespace izwi
