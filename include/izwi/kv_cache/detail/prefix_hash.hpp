#pragma once
// Prefix-cache block hashes. A full block's key is
//
//   H(parent block's key, the block's token ids, extra keys)
//
// chained from the first block, so a block's key stands for the whole prefix
// up to its end and equal keys mean equal K/V. The extra keys are what, besides
// the token ids, decides what the K/V hold:
//   - PrefixCacheKeys::root (cache salt + voice) in the first block; chaining
//     carries it into every later block, so two salts never share anything;
//   - (audio_hash, audio_offset, audio_length) in every block whose positions overlap the
//     audio placeholder, so the same placeholder tokens with different audio
//     never match, while blocks before the audio still do.
// A partly filled block is remembered under a tail key (tail_key): the same
// header without the tokens, which are compared one by one instead.
// XXH3-128 makes an accidental collision practically impossible (a 64-bit key
// would already be rare; 128 bits removes the question).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "izwi/core/hash.hpp"
#include "izwi/core/ids.hpp"
#include "izwi/core/request.hpp"

namespace izwi::detail {

/// Hashes blocks of one fixed size into a reusable buffer (no allocation per block).
class PrefixHasher {
 public:
  explicit PrefixHasher(std::size_t block_size)
      : block_size_(block_size), buffer_(header_bytes + block_size * sizeof(TokenId)) {}

  /// Key of block `index` of a sequence: `tokens` are that block's
  /// block_size() token ids, `parent` the key of block index-1 (ignored for block 0).
  Hash128 operator()(const Hash128& parent, std::size_t index, std::span<const TokenId> tokens,
                     const PrefixCacheKeys& keys) noexcept {
    std::uint64_t header[header_words] = {};
    fill_header(header, parent, index, keys);
    std::memcpy(buffer_.data(), header, sizeof header);
    std::memcpy(buffer_.data() + sizeof header, tokens.data(), block_size_ * sizeof(TokenId));
    return hash128(buffer_.data(), buffer_.size());
  }

  /// Key under which a partly filled block `index` is remembered: everything
  /// a full block's key holds but its tokens (a partial block's rows are
  /// matched by comparing the tokens themselves, for any number of rows).
  Hash128 tail_key(const Hash128& parent, std::size_t index, const PrefixCacheKeys& keys) const noexcept {
    std::uint64_t header[header_words] = {};
    fill_header(header, parent, index, keys);
    return hash128(header, sizeof header);
  }

 private:
  void fill_header(std::uint64_t* header, const Hash128& parent, std::size_t index,
                   const PrefixCacheKeys& keys) const noexcept {
    if (index == 0) {
      header[2] = keys.root;
    } else {
      header[0] = parent.low;
      header[1] = parent.high;
    }
    const std::size_t begin = index * block_size_;
    const std::size_t end = begin + block_size_;
    const std::size_t audio_begin = keys.audio_offset;
    const std::size_t audio_end = audio_begin + keys.audio_length;
    if (keys.audio_length != 0 && begin < audio_end && audio_begin < end) {
      // The flag word keeps "audio with hash 0 at offset 0" apart from "no audio".
      header[3] = 1;
      header[4] = keys.audio_hash;
      header[5] = std::uint64_t{keys.audio_offset} | (std::uint64_t{keys.audio_length} << 32);
    }
  }

  static constexpr std::size_t header_words = 6;
  static constexpr std::size_t header_bytes = header_words * sizeof(std::uint64_t);
  std::size_t block_size_;
  std::vector<std::byte> buffer_;
};

}  // namespace izwi::detail
