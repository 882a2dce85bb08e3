#pragma once
// Content hashes: XXH3 (xxHash 0.8, Debian's libxxhash-dev, used header-only).
// XXH3 is fast on short inputs (a KV block is 16 token ids) and its 128-bit
// variant makes an accidental prefix-cache collision practically impossible.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL
#endif
#include <xxhash.h>

namespace izwi {

struct Hash128 {
  std::uint64_t low = 0;
  std::uint64_t high = 0;
  friend constexpr bool operator==(const Hash128&, const Hash128&) = default;
};

inline std::uint64_t hash64(const void* data, std::size_t size, std::uint64_t seed = 0) noexcept {
  return XXH3_64bits_withSeed(data, size, seed);
}
inline std::uint64_t hash64(std::string_view s, std::uint64_t seed = 0) noexcept {
  return hash64(s.data(), s.size(), seed);
}
template <class T>
std::uint64_t hash64(std::span<const T> values, std::uint64_t seed = 0) noexcept {
  return hash64(values.data(), values.size_bytes(), seed);
}

inline Hash128 hash128(const void* data, std::size_t size) noexcept {
  const XXH128_hash_t h = XXH3_128bits(data, size);
  return {h.low64, h.high64};
}

/// Hashes a Hash128 for unordered containers (its bits are already uniform).
struct Hash128Hasher {
  std::size_t operator()(const Hash128& h) const noexcept { return static_cast<std::size_t>(h.low ^ (h.high * 0x9e3779b97f4a7c15ULL)); }
};

}  // namespace izwi
