#pragma once
// An AVIOContext that reads a byte span, so libavformat demuxes a request body
// where it lies: no temporary file, no copy. Seekable (MP4 readers jump to the
// 'moov' index), and it answers AVSEEK_SIZE, which lets FFmpeg clamp a
// packet size a crafted header declares to the bytes that really exist.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <span>

#include "izwi/audio/detail/av_handles.hpp"

namespace izwi::audio::detail {

class av_memory_reader {
 public:
  /// Throws std::bad_alloc when FFmpeg cannot allocate the context.
  explicit av_memory_reader(std::span<const std::byte> bytes) : bytes_(bytes) {
    // 32 KiB: FFmpeg's own default; the buffer is a window, not a copy of the body.
    constexpr int buffer_size = 32 * 1024;
    auto* buffer = static_cast<unsigned char*>(av_malloc(buffer_size));
    if (!buffer) throw std::bad_alloc();
    io_ = avio_alloc_context(buffer, buffer_size, 0, this, &read, nullptr, &seek);
    if (!io_) {
      av_free(buffer);
      throw std::bad_alloc();
    }
  }
  ~av_memory_reader() {
    // FFmpeg may have replaced the buffer it was given; free the one it holds now.
    av_freep(&io_->buffer);
    avio_context_free(&io_);
  }
  av_memory_reader(const av_memory_reader&) = delete;
  av_memory_reader& operator=(const av_memory_reader&) = delete;

  AVIOContext* context() noexcept { return io_; }

  /// Whether the demuxer has tried to read past the last byte: a packet it
  /// flags as short then was cut by the end of the body.
  bool reached_end() const noexcept { return avio_feof(io_) != 0; }

 private:
  static int read(void* opaque, std::uint8_t* out, int size) {
    auto& self = *static_cast<av_memory_reader*>(opaque);
    if (self.position_ >= self.bytes_.size()) return AVERROR_EOF;
    const std::size_t at = static_cast<std::size_t>(self.position_);
    const std::size_t n =
        std::min<std::size_t>(static_cast<std::size_t>(std::max(size, 0)), self.bytes_.size() - at);
    std::memcpy(out, self.bytes_.data() + at, n);
    self.position_ += n;
    return static_cast<int>(n);
  }
  static std::int64_t seek(void* opaque, std::int64_t offset, int whence) {
    auto& self = *static_cast<av_memory_reader*>(opaque);
    const auto size = static_cast<std::int64_t>(self.bytes_.size());
    whence &= ~AVSEEK_FORCE;
    if (whence == AVSEEK_SIZE) return size;
    const std::int64_t base = whence == SEEK_SET   ? 0
                              : whence == SEEK_CUR ? static_cast<std::int64_t>(self.position_)
                              : whence == SEEK_END ? size
                                                   : -1;
    if (base < 0 || (offset > 0 && base > INT64_MAX - offset) || base + offset < 0) return -1;
    // Past the end is allowed (reads there return EOF), as with a real file.
    self.position_ = static_cast<std::uint64_t>(base + offset);
    return base + offset;
  }

  std::span<const std::byte> bytes_;
  std::uint64_t position_ = 0;
  AVIOContext* io_ = nullptr;
};

}  // namespace izwi::audio::detail
