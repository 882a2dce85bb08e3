#pragma once
// Recognising, from their first bytes, the containers that izwi decodes
// through FFmpeg rather than libsndfile (which has no MP4, Matroska/WebM,
// AAC or MPEG system streams), and the structural checks that tell a cut-off
// upload from a corrupt one before any decoding: a box, segment or frame
// that declares more bytes than the body holds.
//
// Facts used: ISO/IEC 14496-12 boxes (32-bit big-endian size, 4-character
// type; size 1 = a 64-bit size follows, 0 = to the end of the file), EBML
// (RFC 8794: variable-length IDs and sizes, all-ones size = unknown), ADTS
// (ISO/IEC 13818-7: 0xFFF sync, layer 00, 13-bit frame length including the
// header), ID3v2 (10-byte header, syncsafe size) and MPEG system stream start
// codes (program stream pack 00 00 01 BA, transport packets of 188 bytes
// starting 0x47).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>

namespace izwi::audio::detail {

enum class av_container_kind : std::uint8_t { mp4, matroska, adts, mpeg_ps, mpeg_ts };

struct av_container {
  av_container_kind kind;
  std::string name;          ///< DecodeInfo::format: "mp4", "m4a", "mov", "webm", "matroska", "aac", "mpeg", "mpegts"
  const char* demuxer;       ///< FFmpeg's demuxer for it
};

inline std::uint64_t read_be(std::span<const std::byte> b, std::size_t at, int n) noexcept {
  std::uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | static_cast<std::uint64_t>(b[at + static_cast<std::size_t>(i)]);
  return v;
}

inline bool bytes_equal(std::span<const std::byte> b, std::size_t at, const char* text, std::size_t n) noexcept {
  if (b.size() < at + n) return false;
  for (std::size_t i = 0; i < n; ++i)
    if (b[at + i] != static_cast<std::byte>(text[i])) return false;
  return true;
}

/// Length of an ID3v2 tag at the start of `b` (0 when there is none).
inline std::size_t id3v2_length(std::span<const std::byte> b) noexcept {
  if (b.size() < 10 || !bytes_equal(b, 0, "ID3", 3)) return 0;
  std::size_t size = 0;
  for (std::size_t i = 6; i < 10; ++i) {
    const auto v = static_cast<std::size_t>(b[i]);
    if (v & 0x80) return 0;  // not syncsafe: not a tag
    size = (size << 7) | v;
  }
  const bool footer = (static_cast<unsigned>(b[5]) & 0x10) != 0;
  return 10 + size + (footer ? 10 : 0);
}

/// Length of the ADTS frame whose header starts at `at` (0 if none does).
inline std::size_t adts_frame_length(std::span<const std::byte> b, std::size_t at) noexcept {
  if (b.size() < at + 7) return 0;
  const auto h1 = static_cast<unsigned>(b[at + 1]);
  if (static_cast<unsigned>(b[at]) != 0xFF || (h1 & 0xF6) != 0xF0) return 0;  // sync, layer 00
  if (((static_cast<unsigned>(b[at + 2]) >> 2) & 0xF) > 12) return 0;        // sampling index
  const std::size_t length = ((static_cast<std::size_t>(b[at + 3]) & 3) << 11) |
                             (static_cast<std::size_t>(b[at + 4]) << 3) |
                             (static_cast<std::size_t>(b[at + 5]) >> 5);
  return length >= 7 ? length : 0;
}

/// Whether `b` starts (after an optional ID3v2 tag) with an ADTS frame that
/// is followed by another frame header, the end of the body, or a header cut
/// by the end: two checks on 12 sync bits and a length, so random bytes that
/// happen to start 0xFFF are rarely taken for AAC.
inline bool adts_stream_start(std::span<const std::byte> b) noexcept {
  const std::size_t at = id3v2_length(b);
  const std::size_t length = adts_frame_length(b, at);
  if (length == 0) return false;
  const std::size_t next = at + length;
  if (next >= b.size()) return true;
  if (b.size() - next < 7) return static_cast<unsigned>(b[next]) == 0xFF;
  return adts_frame_length(b, next) != 0;
}

/// An EBML variable-length integer at `at`: its length in bytes and value
/// (marker bit removed unless `keep_marker`, as IDs are written); nullopt if malformed.
struct ebml_vint {
  std::size_t length;
  std::uint64_t value;
  bool all_ones;  ///< a size with every value bit set: "unknown"
};
inline std::optional<ebml_vint> read_ebml_vint(std::span<const std::byte> b, std::size_t at,
                                               bool keep_marker) noexcept {
  if (at >= b.size()) return std::nullopt;
  const auto first = static_cast<unsigned>(b[at]);
  std::size_t length = 1;
  while (length <= 8 && !(first & (0x80u >> (length - 1)))) ++length;
  if (length > 8 || b.size() < at + length) return std::nullopt;
  std::uint64_t value = keep_marker ? first : first & ((0x80u >> (length - 1)) - 1);
  for (std::size_t i = 1; i < length; ++i) value = (value << 8) | static_cast<std::uint64_t>(b[at + i]);
  const std::uint64_t ones = (std::uint64_t{1} << (7 * length)) - 1;
  return ebml_vint{length, value, !keep_marker && value == ones};
}

/// The EBML header's DocType ("webm", "matroska"), or "" when absent.
inline std::string ebml_doc_type(std::span<const std::byte> b) {
  const auto id = read_ebml_vint(b, 0, true);
  if (!id) return "";
  const auto size = read_ebml_vint(b, id->length, false);
  if (!size || size->all_ones) return "";
  const std::size_t start = id->length + size->length;
  const std::size_t end = std::min<std::size_t>(b.size(), start + size->value);
  for (std::size_t at = start; at < end;) {
    const auto child = read_ebml_vint(b, at, true);
    if (!child) break;
    const auto child_size = read_ebml_vint(b, at + child->length, false);
    if (!child_size) break;
    const std::size_t data = at + child->length + child_size->length;
    if (child->value == 0x4282 && data + child_size->value <= end && child_size->value <= 32) {
      std::string type;
      for (std::size_t i = 0; i < child_size->value; ++i)
        if (const char c = static_cast<char>(b[data + i]); c != '\0') type += c;
      return type;
    }
    if (child_size->value > end - data) break;
    at = data + static_cast<std::size_t>(child_size->value);
  }
  return "";
}

/// The FFmpeg container that `bytes` start with, or nullopt (then libsndfile's formats apply).
inline std::optional<av_container> sniff_av_container(std::span<const std::byte> b) {
  // ISO base media: a 'ftyp' box first (or, in old QuickTime files, 'moov'/'mdat'/'wide'/'free').
  if (bytes_equal(b, 4, "ftyp", 4)) {
    if (bytes_equal(b, 8, "M4A ", 4) || bytes_equal(b, 8, "M4B ", 4)) return av_container{av_container_kind::mp4, "m4a", "mov"};
    if (bytes_equal(b, 8, "qt  ", 4)) return av_container{av_container_kind::mp4, "mov", "mov"};
    return av_container{av_container_kind::mp4, "mp4", "mov"};
  }
  for (const char* type : {"moov", "mdat", "wide", "free"})
    if (bytes_equal(b, 4, type, 4) && read_be(b, 0, 4) >= 8) return av_container{av_container_kind::mp4, "mov", "mov"};
  if (b.size() >= 4 && read_be(b, 0, 4) == 0x1A45DFA3) {
    const std::string type = ebml_doc_type(b);
    return av_container{av_container_kind::matroska, type == "webm" ? "webm" : "matroska", "matroska"};
  }
  if (adts_stream_start(b)) return av_container{av_container_kind::adts, "aac", "aac"};
  if (b.size() >= 4 && read_be(b, 0, 4) == 0x000001BA) return av_container{av_container_kind::mpeg_ps, "mpeg", "mpeg"};
  if (b.size() > 2 * 188 && static_cast<unsigned>(b[0]) == 0x47 && static_cast<unsigned>(b[188]) == 0x47 &&
      static_cast<unsigned>(b[376]) == 0x47)
    return av_container{av_container_kind::mpeg_ts, "mpegts", "mpegts"};
  return std::nullopt;
}

/// A structure that declares more bytes than the body holds.
struct container_shortfall {
  std::string what;        ///< "the 'mdat' box", "the Segment", "an ADTS frame"
  std::uint64_t declared;  ///< bytes it declares (from its start)
  std::uint64_t present;   ///< bytes present from its start
  bool absent = false;     ///< a required part is missing altogether (declared/present unused)
};

/// Top-level ISO boxes: the first one cut short; or, when all are whole but
/// none is 'moov' (the index, written last by most muxers), a shortfall of
/// the missing index. nullopt when the layout is whole (or too malformed to
/// judge; the demuxer then reports it).
inline std::optional<container_shortfall> find_iso_box_shortfall(std::span<const std::byte> b) {
  std::size_t at = 0;
  bool has_moov = false;
  while (at + 8 <= b.size()) {
    std::uint64_t size = read_be(b, at, 4);
    const std::string type(reinterpret_cast<const char*>(b.data() + at + 4), 4);
    if (size == 1) {
      if (at + 16 > b.size()) return container_shortfall{"the '" + type + "' box header", 16, b.size() - at};
      size = read_be(b, at + 8, 8);
      if (size < 16) return std::nullopt;
    } else if (size == 0) {
      size = b.size() - at;  // to the end of the file
    } else if (size < 8) {
      return std::nullopt;
    }
    if (type == "moov") has_moov = true;
    if (size > b.size() - at) return container_shortfall{"the '" + type + "' box", size, b.size() - at};
    at += static_cast<std::size_t>(size);
  }
  if (at < b.size()) return container_shortfall{"a box header", 8, b.size() - at};
  if (!has_moov) return container_shortfall{"the 'moov' box (the index)", 0, 0, true};
  return std::nullopt;
}

inline std::string ebml_element_name(std::uint64_t id) {
  switch (id) {
    case 0x1F43B675: return "a Cluster";
    case 0xA3: return "a SimpleBlock";
    case 0xA0: return "a BlockGroup";
    case 0x1C53BB6B: return "the Cues";
    default: return "an element";
  }
}

/// The elements of a Segment of unknown size, in order: live-recorded WebM
/// (browsers' MediaRecorder) gives the Segment and each Cluster an unknown
/// size, but every block inside a known one, so a cut shows as the last
/// element running past the end. Elements of unknown size are stepped into
/// (their children follow them directly).
inline std::optional<container_shortfall> find_ebml_element_shortfall(std::span<const std::byte> b,
                                                                      std::size_t at) {
  while (at < b.size()) {
    const auto id = read_ebml_vint(b, at, true);
    const auto size = id ? read_ebml_vint(b, at + id->length, false) : std::nullopt;
    if (!id || !size) {
      // A header cut by the end of the body (a zero byte would be malformed: leave it to the demuxer).
      if (static_cast<unsigned>(b[at]) == 0) return std::nullopt;
      return container_shortfall{"an element header", 2, b.size() - at};
    }
    const std::size_t data = at + id->length + size->length;
    if (size->all_ones) {
      if (id->value != 0x18538067 && id->value != 0x1F43B675) return std::nullopt;
      at = data;
      continue;
    }
    if (size->value > b.size() - data)
      return container_shortfall{ebml_element_name(id->value), id->length + size->length + size->value,
                                 b.size() - at};
    at = data + static_cast<std::size_t>(size->value);
  }
  return std::nullopt;
}

/// The EBML header and the Segment: cut short when the Segment's size (or,
/// for a Segment of unknown size, the last element's) runs past the end.
inline std::optional<container_shortfall> find_ebml_segment_shortfall(std::span<const std::byte> b) {
  const auto id = read_ebml_vint(b, 0, true);
  if (!id) return std::nullopt;
  const auto size = read_ebml_vint(b, id->length, false);
  if (!size || size->all_ones) return std::nullopt;
  const std::uint64_t header_end = id->length + size->length + size->value;
  if (header_end > b.size()) return container_shortfall{"the EBML header", header_end, b.size()};
  const auto segment = read_ebml_vint(b, static_cast<std::size_t>(header_end), true);
  if (!segment || segment->value != 0x18538067) return std::nullopt;
  const auto segment_size = read_ebml_vint(b, static_cast<std::size_t>(header_end) + segment->length, false);
  if (!segment_size) return std::nullopt;
  const std::uint64_t start = header_end;
  if (segment_size->all_ones)
    return find_ebml_element_shortfall(b, static_cast<std::size_t>(start) + segment->length + segment_size->length);
  const std::uint64_t declared = segment->length + segment_size->length + segment_size->value;
  if (declared > b.size() - start) return container_shortfall{"the Segment", declared, b.size() - start};
  return std::nullopt;
}

/// MPEG program stream packs and packets one after another (pack headers of
/// MPEG-1 and MPEG-2, then packets whose 16-bit length follows their start
/// code): the first that runs past the end. Stops quietly at anything else.
inline std::optional<container_shortfall> find_mpeg_ps_shortfall(std::span<const std::byte> b) {
  std::size_t at = 0;
  while (at < b.size()) {
    if (b.size() - at < 4) return container_shortfall{"a packet header", 4, b.size() - at};
    if (read_be(b, at, 3) != 1) return std::nullopt;
    const auto code = static_cast<unsigned>(b[at + 3]);
    if (code == 0xB9) return std::nullopt;  // program end
    std::size_t length = 0;
    if (code == 0xBA) {
      if (b.size() - at < 14) return container_shortfall{"a pack header", 14, b.size() - at};
      const bool mpeg2 = (static_cast<unsigned>(b[at + 4]) & 0xC0) == 0x40;
      length = mpeg2 ? 14 + (static_cast<std::size_t>(b[at + 13]) & 7) : 12;
    } else {
      if (code < 0xBB) return std::nullopt;
      if (b.size() - at < 6) return container_shortfall{"a packet header", 6, b.size() - at};
      length = 6 + static_cast<std::size_t>(read_be(b, at + 4, 2));
    }
    if (length > b.size() - at) return container_shortfall{code == 0xBA ? "a pack header" : "a packet", length, b.size() - at};
    at += length;
  }
  return std::nullopt;
}

/// MPEG transport streams are 188-byte packets: a partial last one was cut.
inline std::optional<container_shortfall> find_mpeg_ts_shortfall(std::span<const std::byte> b) {
  const std::size_t tail = b.size() % 188;
  if (tail != 0 && static_cast<unsigned>(b[b.size() - tail]) == 0x47)
    return container_shortfall{"a transport packet", 188, tail};
  return std::nullopt;
}

/// ADTS frames one after another: the first that runs past the end. Stops
/// quietly at anything that is not a frame header (a trailing tag, garbage).
inline std::optional<container_shortfall> find_adts_shortfall(std::span<const std::byte> b) {
  std::size_t at = id3v2_length(b);
  while (at < b.size()) {
    if (b.size() - at < 7) {
      // A cut header still shows its sync bits; anything else is a trailing tag.
      const bool sync = static_cast<unsigned>(b[at]) == 0xFF &&
                        (b.size() - at < 2 || (static_cast<unsigned>(b[at + 1]) & 0xF6) == 0xF0);
      if (!sync) return std::nullopt;
      return container_shortfall{"an ADTS frame header", 7, b.size() - at};
    }
    const std::size_t length = adts_frame_length(b, at);
    if (length == 0) return std::nullopt;
    if (length > b.size() - at) return container_shortfall{"an ADTS frame", length, b.size() - at};
    at += length;
  }
  return std::nullopt;
}

}  // namespace izwi::audio::detail
