#pragma once
// Just enough of the Ogg page header to count complete pages: the streaming
// Opus encoder holds its header pages back until an audio page follows.

#include <cstddef>
#include <span>

namespace izwi::audio::detail {

/// Length of the complete Ogg page that starts `bytes`; 0 if `bytes` does not
/// start with a page header or the page is not complete yet.
inline std::size_t ogg_page_length(std::span<const std::byte> bytes) noexcept {
  constexpr std::size_t header = 27;  // "OggS", version, flags, granule, serial, sequence, CRC, count
  if (bytes.size() < header || bytes[0] != std::byte{'O'} || bytes[1] != std::byte{'g'} ||
      bytes[2] != std::byte{'g'} || bytes[3] != std::byte{'S'})
    return 0;
  const std::size_t segments = static_cast<std::size_t>(bytes[26]);
  if (bytes.size() < header + segments) return 0;
  std::size_t length = header + segments;
  for (std::size_t i = 0; i < segments; ++i) length += static_cast<std::size_t>(bytes[header + i]);
  return bytes.size() >= length ? length : 0;
}

/// Number of complete Ogg pages at the start of `bytes`.
inline std::size_t count_ogg_pages(std::span<const std::byte> bytes) noexcept {
  std::size_t pages = 0;
  while (std::size_t length = ogg_page_length(bytes)) {
    bytes = bytes.subspan(length);
    ++pages;
  }
  return pages;
}

}  // namespace izwi::audio::detail
