#pragma once
// The 7-byte ADTS header (ISO/IEC 13818-7 §6.2) that turns raw AAC frames
// into a self-delimiting stream: what "aac" means for OpenAI's
// /v1/audio/speech (Content-Type audio/aac). Each frame carries its own
// header, so any prefix of whole frames is a playable file.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace izwi::audio::detail {

/// The AAC sampling-frequency index of `rate` (0 = 96 kHz ... 12 = 7350 Hz), or -1.
inline int adts_sampling_index(std::uint32_t rate) noexcept {
  constexpr std::uint32_t rates[13] = {96000, 88200, 64000, 48000, 44100, 32000, 24000,
                                       22050, 16000, 12000, 11025, 8000,  7350};
  for (int i = 0; i < 13; ++i)
    if (rates[i] == rate) return i;
  return -1;
}

/// Largest AAC payload one ADTS frame can carry (13-bit length, header included).
inline constexpr std::size_t adts_max_payload = 8191 - 7;

/// Appends the header of one ADTS frame carrying `payload_bytes` of one raw
/// AAC-LC data block: MPEG-4 ID, no CRC, channel configuration = `channels`
/// (1 mono, 2 stereo), buffer fullness 0x7FF (variable rate).
inline void append_adts_header(std::vector<std::byte>& out, int sampling_index, unsigned channels,
                               std::size_t payload_bytes) {
  const std::size_t length = payload_bytes + 7;
  constexpr unsigned profile = 1;  // audio object type 2 (AAC LC) minus 1
  const unsigned bytes[7] = {
      0xFF,
      0xF1,  // sync (4 bits), ID 0 = MPEG-4, layer 00, protection absent
      (profile << 6) | (static_cast<unsigned>(sampling_index) << 2) | ((channels >> 2) & 1),
      ((channels & 3) << 6) | static_cast<unsigned>((length >> 11) & 3),
      static_cast<unsigned>((length >> 3) & 0xFF),
      static_cast<unsigned>(((length & 7) << 5) | 0x1F),  // + buffer fullness high bits
      0xFC,  // buffer fullness low bits, one raw data block
  };
  for (unsigned b : bytes) out.push_back(static_cast<std::byte>(b));
}

}  // namespace izwi::audio::detail
