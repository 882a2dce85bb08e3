#pragma once
// Just enough of the MPEG audio frame header to find where a layer III frame
// ends: the streaming mp3 encoder uses it to leave out LAME's empty tag frame.

#include <cstddef>
#include <cstdint>
#include <span>

namespace izwi::audio::detail {

/// Length in bytes of the MPEG-1/2/2.5 layer III frame whose header starts
/// `bytes`; 0 if `bytes` does not start with a valid layer III header.
inline std::size_t mp3_frame_length(std::span<const std::byte> bytes) noexcept {
  if (bytes.size() < 4) return 0;
  const auto b1 = static_cast<unsigned>(bytes[1]);
  const auto b2 = static_cast<unsigned>(bytes[2]);
  if (static_cast<unsigned>(bytes[0]) != 0xFF || (b1 & 0xE0) != 0xE0) return 0;
  const unsigned version = (b1 >> 3) & 3;  // 3: MPEG-1, 2: MPEG-2, 0: MPEG-2.5, 1: reserved
  const unsigned layer = (b1 >> 1) & 3;    // 1: layer III
  const unsigned bitrate_index = (b2 >> 4) & 15;
  const unsigned rate_index = (b2 >> 2) & 3;
  const unsigned padding = (b2 >> 1) & 1;
  if (version == 1 || layer != 1 || bitrate_index == 0 || bitrate_index == 15 || rate_index == 3)
    return 0;
  static constexpr std::uint16_t mpeg1_kbps[15] = {0,   32,  40,  48,  56,  64,  80, 96,
                                                   112, 128, 160, 192, 224, 256, 320};
  static constexpr std::uint16_t mpeg2_kbps[15] = {0,  8,  16, 24,  32,  40,  48, 56,
                                                   64, 80, 96, 112, 128, 144, 160};
  static constexpr std::uint32_t rates[3] = {44100, 48000, 32000};
  const bool mpeg1 = version == 3;
  const std::uint32_t rate = rates[rate_index] >> (mpeg1 ? 0 : version == 2 ? 1 : 2);
  const std::uint32_t bits_per_second = (mpeg1 ? mpeg1_kbps : mpeg2_kbps)[bitrate_index] * 1000u;
  return (mpeg1 ? 144u : 72u) * bits_per_second / rate + padding;
}

}  // namespace izwi::audio::detail
