#pragma once
// Derives a request's PrefixCacheKeys once, when it is added.

#include <cstdint>
#include <span>

#include "izwi/core/hash.hpp"
#include "izwi/core/request.hpp"

namespace izwi::detail {

inline PrefixCacheKeys make_prefix_cache_keys(const Request& request) noexcept {
  PrefixCacheKeys keys;
  if (!request.cache_salt.empty() || !request.voice.empty()) {
    // Salt and voice hashed in sequence (the voice seeded by the salt's hash),
    // so ("ab", "") and ("a", "b") give different roots.
    constexpr std::uint64_t salt_seed = 0x697a77692d73616cULL;  // "izwi-sal"
    const std::uint64_t salt_hash = hash64(request.cache_salt, salt_seed);
    keys.root = hash64(request.voice, salt_hash);
    if (keys.root == 0) keys.root = 1;  // 0 means "no salt, no voice"
  }
  if (request.audio) {
    const AudioInput& audio = *request.audio;
    keys.audio_hash = audio.content_hash != 0 ? audio.content_hash
                                              : hash64(std::span<const float>(audio.samples));
    keys.audio_offset = audio.placeholder_offset;
    keys.audio_length = audio.placeholder_length;
  }
  return keys;
}

}  // namespace izwi::detail
