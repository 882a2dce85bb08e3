#pragma once
// AudioBuffer: the plain value that carries PCM audio between izwi's audio
// functions (decode → resample → features; model → encode). Samples are 32-bit
// float, nominally in [-1, 1], interleaved frame by frame when there is more
// than one channel (L R L R ...), which is the layout libsndfile and soxr use,
// so buffers pass to them without copies.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "izwi/core/error.hpp"

namespace izwi::audio {

/// Base of every exception the audio I/O functions throw.
class AudioError : public izwi::error {
 public:
  using izwi::error::error;
};

/// PCM audio: float samples, interleaved when channels > 1.
struct AudioBuffer {
  std::vector<float> samples;     ///< frames() * channels values, interleaved
  std::uint32_t sample_rate = 0;  ///< frames per second
  std::uint32_t channels = 1;     ///< 1 = mono

  /// Number of frames (one sample per channel each).
  std::size_t frames() const noexcept { return channels ? samples.size() / channels : 0; }
  /// Length in seconds; 0 when sample_rate is 0.
  double duration_seconds() const noexcept {
    return sample_rate ? static_cast<double>(frames()) / sample_rate : 0.0;
  }
  bool empty() const noexcept { return samples.empty(); }
};

/// Averages the channels of interleaved audio into one: out[i] is the mean of
/// frame i's samples (the average, not the sum, so a full-scale signal stays in
/// [-1, 1]). `channels` must be ≥ 1 and divide interleaved.size(); throws
/// izwi::invalid_argument("channels") otherwise. channels == 1 copies.
std::vector<float> mix_to_mono(std::span<const float> interleaved, std::uint32_t channels);

/// The same for a buffer: returns a mono buffer at the same sample rate.
AudioBuffer mix_to_mono(const AudioBuffer& audio);

}  // namespace izwi::audio

#include "izwi/audio/impl/audio_buffer.hpp"
