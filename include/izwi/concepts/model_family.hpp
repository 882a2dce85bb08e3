#pragma once
// ModelFamily: one model architecture (Qwen3, Whisper, ...) written once
// against a backend's ops, so CPU and GPU executors share the model code.
// Documented in docs/concepts/model_family.md. The CPU-executor issue fills in
// the forward-pass requirements; this is the part the engine relies on today.
//
// Valid expressions, for cm a const M:
//   typename M::config_type              the parsed config.json
//   cm.config()       -> const config_type&
//   cm.kv_cache_shape() -> KVCacheShape  layers, KV heads, head dim, dtype of the cache
//   cm.vocab_size()   -> size_t

#include <concepts>
#include <cstddef>

#include "izwi/concepts/tags.hpp"
#include "izwi/core/kv_cache_shape.hpp"

namespace izwi {

template <class M>
concept ModelFamily = opts_into<M, model_family_tag> && requires { typename M::config_type; } &&
                      requires(const M& cm) {
                        { cm.config() } -> std::same_as<const typename M::config_type&>;
                        { cm.kv_cache_shape() } -> std::same_as<KVCacheShape>;
                        { cm.vocab_size() } -> std::convertible_to<std::size_t>;
                      };

}  // namespace izwi
