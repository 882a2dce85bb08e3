#pragma once
// Sample-rate conversion through soxr (libsoxr), one-shot and streaming.
//
// Why soxr: it is the resampler of SoX and of FFmpeg's high-quality path,
// maintained, fast (FFT-based polyphase filters with SIMD), and accurate to
// its stated precision at every ratio, including the awkward 44.1 kHz → 16 kHz
// (ratio 160/441). Debian ships it (libsoxr-dev).
//
// Quality: always SOXR_HQ (20-bit precision, 91% passband, linear phase).
// Speech models look at 0-8 kHz of a 16 kHz signal, so 20 bits (≈ 120 dB of
// stopband rejection) is already far below the s16 noise floor of real
// recordings; SOXR_VHQ (28 bits) costs about twice the time for no
// measurable change in a model's input, and SOXR_LQ/MQ let aliasing reach
// -100/-70 dB territory near the band edge. Linear phase keeps the output
// time-aligned with the input (the filter delay is compensated by soxr).
//
// Streaming: soxr keeps its own input FIFO, so the output of a
// StreamingResampler does not depend on how the input was cut into chunks:
// concatenating push() results and flush() gives the same samples as the
// one-shot resample() of the whole signal (tested).

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "izwi/audio/audio_buffer.hpp"

namespace izwi::audio {

/// Largest sample rate accepted anywhere in izwi's audio I/O (768 kHz, the
/// highest rate real converters produce). Rates outside [1, max_sample_rate]
/// throw izwi::invalid_argument("sample_rate").
inline constexpr std::uint32_t max_sample_rate = 768000;

/// Number of output frames resample() yields for `frames` input frames:
/// round(frames * to_rate / from_rate).
std::size_t resampled_frames(std::size_t frames, std::uint32_t from_rate, std::uint32_t to_rate);

/// Converts interleaved float audio of `channels` channels from `from_rate`
/// to `to_rate` Hz in one call. Returns resampled_frames() frames. Equal rates
/// copy. Throws izwi::invalid_argument for a rate outside [1, max_sample_rate]
/// or a sample count that is not whole frames, and AudioError if soxr fails.
std::vector<float> resample(std::span<const float> samples, std::uint32_t from_rate,
                            std::uint32_t to_rate, std::uint32_t channels = 1);

/// The same for a buffer; returns a buffer at `to_rate` with the same channels.
AudioBuffer resample(const AudioBuffer& audio, std::uint32_t to_rate);

/// Resamples audio that arrives in chunks (a microphone stream, TTS output).
///
///   StreamingResampler r(24000, 48000);
///   for (chunk : chunks) send(r.push(chunk));   // whatever is ready now
///   send(r.flush());                            // the filter's tail
///
/// push() returns what soxr can produce from the input so far; the rest of
/// the filter's look-ahead comes out of later pushes or flush(). After flush()
/// the total output is resampled_frames(total input) frames. Move-only; not
/// thread-safe (one stream, one owner).
class StreamingResampler {
 public:
  /// Throws izwi::invalid_argument for a rate outside [1, max_sample_rate] or
  /// channels == 0, and AudioError if soxr cannot be set up.
  StreamingResampler(std::uint32_t from_rate, std::uint32_t to_rate, std::uint32_t channels = 1);
  ~StreamingResampler();
  StreamingResampler(StreamingResampler&& other) noexcept;
  StreamingResampler& operator=(StreamingResampler&& other) noexcept;
  StreamingResampler(const StreamingResampler&) = delete;
  StreamingResampler& operator=(const StreamingResampler&) = delete;

  /// Feeds interleaved samples (whole frames) and returns the output frames
  /// ready now. Throws izwi::invalid_argument after flush() (call reset()).
  std::vector<float> push(std::span<const float> samples);
  /// The same, appending to `out` (no allocation when `out` has capacity).
  void push(std::span<const float> samples, std::vector<float>& out);
  /// Ends the input and returns the remaining output.
  std::vector<float> flush();
  /// Forgets all input: ready for an unrelated stream at the same rates.
  void reset();

  std::uint32_t from_rate() const noexcept { return from_rate_; }
  std::uint32_t to_rate() const noexcept { return to_rate_; }
  std::uint32_t channels() const noexcept { return channels_; }

 private:
  void process(const float* in, std::size_t in_frames, std::vector<float>& out);

  void* soxr_ = nullptr;  // soxr_t; an opaque pointer keeps soxr.h out of this page
  std::uint32_t from_rate_;
  std::uint32_t to_rate_;
  std::uint32_t channels_;
  std::uint64_t frames_in_ = 0;   // input frames pushed since the last reset
  std::uint64_t frames_out_ = 0;  // output frames returned since the last reset
  bool flushed_ = false;
};

}  // namespace izwi::audio

#include "izwi/audio/impl/resample.hpp"
