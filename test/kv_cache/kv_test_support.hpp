#pragma once
// Small helpers shared by the KV-cache tests: a sequence that owns its tokens
// and keys, and a shape small enough to reason about block by block.

#include <cstdint>
#include <numeric>
#include <vector>

#include "izwi/core/kv_cache_shape.hpp"
#include "izwi/core/request.hpp"

namespace izwi::test {

/// 2 layers, 2 KV heads, head_dim 4, f32: 32 bytes per token per layer for K, same for V.
inline constexpr KVCacheShape small_shape{2, 2, 4, DType::f32};

struct TestSequence {
  RequestId id = 0;
  std::vector<TokenId> tokens;
  PrefixCacheKeys keys;

  SequenceView view() const { return {id, tokens, &keys}; }
};

/// Tokens start, start+1, ..., start+n-1.
inline std::vector<TokenId> token_run(std::size_t n, TokenId start = 100) {
  std::vector<TokenId> t(n);
  std::iota(t.begin(), t.end(), start);
  return t;
}

inline TestSequence make_sequence(RequestId id, std::vector<TokenId> tokens, PrefixCacheKeys keys = {}) {
  return TestSequence{id, std::move(tokens), keys};
}

}  // namespace izwi::test
