#pragma once
// libsndfile virtual I/O (sf_open_virtual) over memory: a read-only source for
// decoding request bodies, and a growable sink for encoding, which can also
// hand out its bytes as they are written (streaming) while libsndfile still
// believes it writes one seekable file.

#include <sndfile.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace izwi::audio::detail {

/// Read-only view of a byte span as a file.
struct memory_source {
  std::span<const std::byte> bytes;
  sf_count_t position = 0;

  static SF_VIRTUAL_IO* io() noexcept {
    static SF_VIRTUAL_IO table{&length, &seek, &read, &write, &tell};
    return &table;
  }

 private:
  static memory_source& self(void* p) { return *static_cast<memory_source*>(p); }
  static sf_count_t length(void* p) { return static_cast<sf_count_t>(self(p).bytes.size()); }
  static sf_count_t seek(sf_count_t offset, int whence, void* p) {
    memory_source& s = self(p);
    const sf_count_t size = static_cast<sf_count_t>(s.bytes.size());
    sf_count_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? s.position : size;
    // Reject positions that overflow or go before the start; positions past
    // the end are allowed (reads there return 0 bytes), as with a real file.
    if ((offset > 0 && base > INT64_MAX - offset) || base + offset < 0) return -1;
    s.position = base + offset;
    return s.position;
  }
  static sf_count_t read(void* out, sf_count_t count, void* p) {
    memory_source& s = self(p);
    const sf_count_t size = static_cast<sf_count_t>(s.bytes.size());
    if (count <= 0 || s.position >= size) return 0;
    const sf_count_t n = std::min(count, size - s.position);
    std::memcpy(out, s.bytes.data() + s.position, static_cast<std::size_t>(n));
    s.position += n;
    return n;
  }
  static sf_count_t write(const void*, sf_count_t, void*) { return 0; }
  static sf_count_t tell(void* p) { return self(p).position; }
};

/// A file that grows in memory. Bytes before `released_` have been handed to
/// the caller (take()) and are gone: a later write that lands there (an
/// encoder going back to patch a header at close) is dropped, which is why
/// each streaming format must leave a valid stream without those patches
/// (see encode.hpp). Without take(), it is an ordinary seekable memory file.
class memory_sink {
 public:
  static SF_VIRTUAL_IO* io() noexcept {
    static SF_VIRTUAL_IO table{&length, &seek, &read, &write, &tell};
    return &table;
  }

  /// Moves out the bytes written since the last take(), and freezes them.
  std::vector<std::byte> take() {
    std::vector<std::byte> out;
    out.swap(pending_);
    released_ += static_cast<sf_count_t>(out.size());
    return out;
  }
  /// Bytes written since the last take() (all of them if take() was never called).
  std::vector<std::byte>& pending() noexcept { return pending_; }

 private:
  static memory_sink& self(void* p) { return *static_cast<memory_sink*>(p); }
  sf_count_t end() const noexcept { return released_ + static_cast<sf_count_t>(pending_.size()); }

  static sf_count_t length(void* p) { return self(p).end(); }
  static sf_count_t seek(sf_count_t offset, int whence, void* p) {
    memory_sink& s = self(p);
    sf_count_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? s.position_ : s.end();
    if ((offset > 0 && base > INT64_MAX - offset) || base + offset < 0) return -1;
    s.position_ = base + offset;
    return s.position_;
  }
  static sf_count_t read(void* out, sf_count_t count, void* p) {
    memory_sink& s = self(p);
    if (count <= 0 || s.position_ < s.released_ || s.position_ >= s.end()) return 0;
    const sf_count_t n = std::min(count, s.end() - s.position_);
    std::memcpy(out, s.pending_.data() + (s.position_ - s.released_), static_cast<std::size_t>(n));
    s.position_ += n;
    return n;
  }
  static sf_count_t write(const void* in, sf_count_t count, void* p) {
    memory_sink& s = self(p);
    if (count <= 0) return 0;
    const auto* src = static_cast<const std::byte*>(in);
    sf_count_t skip = 0;  // the part that falls on already released bytes
    if (s.position_ < s.released_) skip = std::min(count, s.released_ - s.position_);
    const sf_count_t from = s.position_ + skip - s.released_;
    const sf_count_t to = s.position_ + count - s.released_;
    if (to > static_cast<sf_count_t>(s.pending_.size())) s.pending_.resize(static_cast<std::size_t>(to));
    if (count > skip)
      std::memcpy(s.pending_.data() + from, src + skip, static_cast<std::size_t>(count - skip));
    s.position_ += count;  // report full success: libsndfile treats short writes as errors
    return count;
  }
  static sf_count_t tell(void* p) { return self(p).position_; }

  std::vector<std::byte> pending_;
  sf_count_t released_ = 0;
  sf_count_t position_ = 0;
};

}  // namespace izwi::audio::detail
