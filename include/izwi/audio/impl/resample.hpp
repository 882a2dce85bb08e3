#pragma once
// Bodies of izwi/audio/resample.hpp.

#include <soxr.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "izwi/audio/resample.hpp"

namespace izwi::audio {
namespace detail {

inline void check_sample_rate(std::uint32_t rate) {
  if (rate == 0 || rate > max_sample_rate)
    throw izwi::invalid_argument("sample_rate", "sample rate " + std::to_string(rate) +
                                                    " Hz is outside [1, " +
                                                    std::to_string(max_sample_rate) + "]");
}

inline void check_whole_frames(std::size_t samples, std::uint32_t channels) {
  if (channels == 0 || samples % channels != 0)
    throw izwi::invalid_argument("channels", std::to_string(samples) + " samples are not whole " +
                                                 std::to_string(channels) + "-channel frames");
}

inline soxr_quality_spec_t resampler_quality() { return soxr_quality_spec(SOXR_HQ, 0); }

}  // namespace detail

inline std::size_t resampled_frames(std::size_t frames, std::uint32_t from_rate,
                                    std::uint32_t to_rate) {
  detail::check_sample_rate(from_rate);
  detail::check_sample_rate(to_rate);
  // round(frames * to / from) without overflow: split frames by from_rate.
  const std::uint64_t whole = frames / from_rate, rest = frames % from_rate;
  return static_cast<std::size_t>(whole * to_rate + (rest * to_rate + from_rate / 2) / from_rate);
}

inline std::vector<float> resample(std::span<const float> samples, std::uint32_t from_rate,
                                   std::uint32_t to_rate, std::uint32_t channels) {
  detail::check_sample_rate(from_rate);
  detail::check_sample_rate(to_rate);
  detail::check_whole_frames(samples.size(), channels);
  if (from_rate == to_rate || samples.empty()) {
    if (from_rate == to_rate) return {samples.begin(), samples.end()};
    return {};
  }
  const std::size_t in_frames = samples.size() / channels;
  const std::size_t want = resampled_frames(in_frames, from_rate, to_rate);
  std::vector<float> out((want + 1) * channels);
  const soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
  const soxr_quality_spec_t quality = detail::resampler_quality();
  std::size_t done = 0;
  soxr_error_t err = soxr_oneshot(from_rate, to_rate, channels, samples.data(), in_frames, nullptr,
                                  out.data(), want + 1, &done, &io, &quality, nullptr);
  if (err) throw AudioError(std::string("soxr could not resample: ") + err);
  out.resize(std::min(done, want) * channels);
  out.resize(want * channels, 0.0f);  // soxr rounds the same way; this only guards
  return out;
}

inline AudioBuffer resample(const AudioBuffer& audio, std::uint32_t to_rate) {
  return AudioBuffer{resample(audio.samples, audio.sample_rate, to_rate, audio.channels), to_rate,
                      audio.channels};
}

inline StreamingResampler::StreamingResampler(std::uint32_t from_rate, std::uint32_t to_rate,
                                                std::uint32_t channels)
    : from_rate_(from_rate), to_rate_(to_rate), channels_(channels) {
  detail::check_sample_rate(from_rate);
  detail::check_sample_rate(to_rate);
  if (channels == 0) throw izwi::invalid_argument("channels", "channels must be at least 1");
  if (from_rate == to_rate) return;  // pass-through: no soxr state
  const soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
  const soxr_quality_spec_t quality = detail::resampler_quality();
  soxr_error_t err = nullptr;
  soxr_ = soxr_create(from_rate, to_rate, channels, &err, &io, &quality, nullptr);
  if (err || !soxr_) {
    if (soxr_) soxr_delete(static_cast<soxr_t>(soxr_));
    soxr_ = nullptr;
    throw AudioError(std::string("soxr could not set up a resampler: ") + (err ? err : "?"));
  }
}

inline StreamingResampler::~StreamingResampler() {
  if (soxr_) soxr_delete(static_cast<soxr_t>(soxr_));
}

inline StreamingResampler::StreamingResampler(StreamingResampler&& other) noexcept
    : soxr_(std::exchange(other.soxr_, nullptr)),
      from_rate_(other.from_rate_),
      to_rate_(other.to_rate_),
      channels_(other.channels_),
      frames_in_(other.frames_in_),
      frames_out_(other.frames_out_),
      flushed_(other.flushed_) {}

inline StreamingResampler& StreamingResampler::operator=(StreamingResampler&& other) noexcept {
  if (this != &other) {
    if (soxr_) soxr_delete(static_cast<soxr_t>(soxr_));
    soxr_ = std::exchange(other.soxr_, nullptr);
    from_rate_ = other.from_rate_;
    to_rate_ = other.to_rate_;
    channels_ = other.channels_;
    frames_in_ = other.frames_in_;
    frames_out_ = other.frames_out_;
    flushed_ = other.flushed_;
  }
  return *this;
}

inline void StreamingResampler::process(const float* in, std::size_t in_frames,
                                         std::vector<float>& out) {
  auto* s = static_cast<soxr_t>(soxr_);
  const double ratio = static_cast<double>(to_rate_) / from_rate_;
  // Room for this chunk's share plus soxr's internal block, so most calls
  // finish in one round; the loop handles the rest.
  const std::size_t room = static_cast<std::size_t>(std::ceil(in_frames * ratio)) + 1024;
  const bool flushing = in == nullptr;
  for (;;) {
    const std::size_t base = out.size();
    out.resize(base + room * channels_);
    std::size_t used = 0, made = 0;
    soxr_error_t err = soxr_process(s, in, flushing ? 0 : in_frames, flushing ? nullptr : &used,
                                    out.data() + base, room, &made);
    out.resize(base + made * channels_);
    frames_out_ += made;
    if (err) throw AudioError(std::string("soxr failed while resampling: ") + err);
    if (!flushing) {
      in += used * channels_;
      in_frames -= used;
      if (in_frames == 0 && made < room) return;
    } else if (made == 0) {
      return;
    }
  }
}

inline void StreamingResampler::push(std::span<const float> samples, std::vector<float>& out) {
  detail::check_whole_frames(samples.size(), channels_);
  if (flushed_)
    throw izwi::invalid_argument("samples", "push() after flush(): call reset() to start a new stream");
  frames_in_ += samples.size() / channels_;
  if (!soxr_) {
    out.insert(out.end(), samples.begin(), samples.end());
    frames_out_ += samples.size() / channels_;
    return;
  }
  if (!samples.empty()) process(samples.data(), samples.size() / channels_, out);
}

inline std::vector<float> StreamingResampler::push(std::span<const float> samples) {
  std::vector<float> out;
  push(samples, out);
  return out;
}

inline std::vector<float> StreamingResampler::flush() {
  std::vector<float> out;
  if (flushed_ || !soxr_) {
    flushed_ = true;
    return out;
  }
  flushed_ = true;
  const std::uint64_t before = frames_out_;
  process(nullptr, 0, out);
  // soxr's tail may run a few frames past the exact length; trim so the
  // stream's total equals the one-shot length.
  const std::uint64_t want = resampled_frames(frames_in_, from_rate_, to_rate_);
  if (frames_out_ > want) {
    const std::uint64_t keep = want > before ? want - before : 0;
    out.resize(keep * channels_);
    frames_out_ = before + keep;
  }
  return out;
}

inline void StreamingResampler::reset() {
  if (soxr_) soxr_clear(static_cast<soxr_t>(soxr_));
  frames_in_ = frames_out_ = 0;
  flushed_ = false;
}

}  // namespace izwi::audio
