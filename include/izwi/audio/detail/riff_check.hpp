#pragma once
// A check libsndfile does not make: a RIFF/WAVE file whose data chunk
// declares more bytes than the body holds. libsndfile quietly decodes what is
// there; for an upload that almost always means the client sent a cut-off
// file, which should be reported rather than transcribed in part.
//
// Streaming writers (izwi's own streaming WAV, OpenAI's, ffmpeg to a pipe) do
// not know the length up front and put 0xFFFFFFFF (or 0, or 0x7FFFFFFF) in the
// size fields; those mean "until the end of the file" and pass.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace izwi::audio::detail {

inline std::uint32_t read_le32(const std::byte* p) noexcept {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}

inline bool has_tag(std::span<const std::byte> bytes, std::size_t at, const char (&tag)[5]) noexcept {
  if (bytes.size() < at + 4) return false;
  for (int i = 0; i < 4; ++i)
    if (bytes[at + i] != static_cast<std::byte>(tag[i])) return false;
  return true;
}

/// For a RIFF/WAVE file whose data chunk declares a definite size larger than
/// what follows it, returns {declared, present} byte counts; otherwise nullopt
/// (not RIFF/WAVE, an "unknown length" marker, or a consistent size).
struct riff_data_shortfall {
  std::uint64_t declared;
  std::uint64_t present;
};

inline std::optional<riff_data_shortfall> find_riff_data_shortfall(
    std::span<const std::byte> bytes) noexcept {
  if (!has_tag(bytes, 0, "RIFF") || !has_tag(bytes, 8, "WAVE")) return std::nullopt;
  std::size_t at = 12;
  // Walk the chunk list; at most a few thousand chunks, each step advances.
  for (int guard = 0; guard < 4096 && at + 8 <= bytes.size(); ++guard) {
    const std::uint32_t size = read_le32(bytes.data() + at + 4);
    if (has_tag(bytes, at, "data")) {
      if (size == 0 || size >= 0x7FFFFFFFu) return std::nullopt;  // unknown length
      const std::uint64_t present = bytes.size() - (at + 8);
      if (size > present) return riff_data_shortfall{size, present};
      return std::nullopt;
    }
    const std::uint64_t next = static_cast<std::uint64_t>(at) + 8 + size + (size & 1u);
    if (next > bytes.size()) return std::nullopt;  // a bad chunk: leave it to libsndfile
    at = static_cast<std::size_t>(next);
  }
  return std::nullopt;
}

/// The format tag of a RIFF/WAVE file's fmt chunk, or nullopt if there is
/// none to be found. libsndfile answers an unknown tag with "Malformed 'fmt '
/// chunk", which hides the real problem (a codec it lacks) from the user.
inline std::optional<std::uint16_t> find_riff_format_tag(std::span<const std::byte> bytes) noexcept {
  if (!has_tag(bytes, 0, "RIFF") || !has_tag(bytes, 8, "WAVE")) return std::nullopt;
  std::size_t at = 12;
  for (int guard = 0; guard < 4096 && at + 10 <= bytes.size(); ++guard) {
    const std::uint32_t size = read_le32(bytes.data() + at + 4);
    if (has_tag(bytes, at, "fmt "))
      return static_cast<std::uint16_t>(static_cast<unsigned>(bytes[at + 8]) |
                                        (static_cast<unsigned>(bytes[at + 9]) << 8));
    const std::uint64_t next = static_cast<std::uint64_t>(at) + 8 + size + (size & 1u);
    if (next > bytes.size()) return std::nullopt;
    at = static_cast<std::size_t>(next);
  }
  return std::nullopt;
}

/// WAV format tags libsndfile decodes: PCM, MS ADPCM, IEEE float, A-law,
/// µ-law, IMA ADPCM, GSM 6.10, G.721, MPEG, MPEG layer III, EXTENSIBLE.
inline bool is_decodable_wav_format_tag(std::uint16_t tag) noexcept {
  switch (tag) {
    case 0x0001: case 0x0002: case 0x0003: case 0x0006: case 0x0007: case 0x0011:
    case 0x0031: case 0x0040: case 0x0050: case 0x0055: case 0xFFFE:
      return true;
    default:
      return false;
  }
}

}  // namespace izwi::audio::detail
