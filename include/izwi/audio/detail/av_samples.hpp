#pragma once
// A decoded FFmpeg frame (any sample format, planar or interleaved) as
// interleaved float, scaled as libsndfile scales: integers divided by
// 2^(bits-1) (8-bit is unsigned, offset 128), floats unchanged. No resampling
// or rematrixing happens here (izwi resamples with soxr, mixes itself), so
// libswresample is not needed.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "izwi/audio/detail/av_handles.hpp"

extern "C" {
#include <libavutil/samplefmt.h>
}

namespace izwi::audio::detail {

template <class Sample>
inline float av_sample_to_float(Sample s) noexcept {
  if constexpr (std::is_same_v<Sample, std::uint8_t>) return (static_cast<float>(s) - 128.0f) / 128.0f;
  else if constexpr (std::is_same_v<Sample, std::int16_t>) return static_cast<float>(s) / 32768.0f;
  else if constexpr (std::is_same_v<Sample, std::int32_t>) return static_cast<float>(static_cast<double>(s) / 2147483648.0);
  else if constexpr (std::is_same_v<Sample, std::int64_t>) return static_cast<float>(static_cast<double>(s) / 9223372036854775808.0);
  else return static_cast<float>(s);
}

template <class Sample>
inline void av_interleave(const AVFrame& frame, bool planar, std::size_t channels, float* out) {
  const auto frames = static_cast<std::size_t>(frame.nb_samples);
  Sample s;
  if (planar) {
    for (std::size_t c = 0; c < channels; ++c) {
      const std::uint8_t* plane = frame.extended_data[c];
      for (std::size_t i = 0; i < frames; ++i) {
        std::memcpy(&s, plane + i * sizeof(Sample), sizeof(Sample));
        out[i * channels + c] = av_sample_to_float(s);
      }
    }
  } else {
    const std::uint8_t* data = frame.extended_data[0];
    for (std::size_t i = 0; i < frames * channels; ++i) {
      std::memcpy(&s, data + i * sizeof(Sample), sizeof(Sample));
      out[i] = av_sample_to_float(s);
    }
  }
}

/// Writes `frame`'s samples into `out` (resized to nb_samples × channels).
/// Returns false for a sample format izwi does not know (none exists in
/// FFmpeg 5/6/7 beyond the twelve handled here).
inline bool av_frame_to_interleaved_float(const AVFrame& frame, std::size_t channels, std::vector<float>& out) {
  const auto format = static_cast<AVSampleFormat>(frame.format);
  const bool planar = av_sample_fmt_is_planar(format) != 0;
  out.resize(static_cast<std::size_t>(frame.nb_samples) * channels);
  switch (av_get_packed_sample_fmt(format)) {
    case AV_SAMPLE_FMT_U8: av_interleave<std::uint8_t>(frame, planar, channels, out.data()); return true;
    case AV_SAMPLE_FMT_S16: av_interleave<std::int16_t>(frame, planar, channels, out.data()); return true;
    case AV_SAMPLE_FMT_S32: av_interleave<std::int32_t>(frame, planar, channels, out.data()); return true;
    case AV_SAMPLE_FMT_S64: av_interleave<std::int64_t>(frame, planar, channels, out.data()); return true;
    case AV_SAMPLE_FMT_FLT: av_interleave<float>(frame, planar, channels, out.data()); return true;
    case AV_SAMPLE_FMT_DBL: av_interleave<double>(frame, planar, channels, out.data()); return true;
    default: return false;
  }
}

}  // namespace izwi::audio::detail
