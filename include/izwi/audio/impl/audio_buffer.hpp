#pragma once
// Bodies of izwi/audio/audio_buffer.hpp.

#include <string>

#include "izwi/audio/audio_buffer.hpp"

namespace izwi::audio {

inline std::vector<float> mix_to_mono(std::span<const float> interleaved, std::uint32_t channels) {
  if (channels == 0 || interleaved.size() % channels != 0)
    throw izwi::invalid_argument(
        "channels", "cannot mix " + std::to_string(interleaved.size()) + " samples of " +
                        std::to_string(channels) + "-channel audio to mono: not whole frames");
  if (channels == 1) return {interleaved.begin(), interleaved.end()};
  const std::size_t frames = interleaved.size() / channels;
  std::vector<float> mono(frames);
  const float scale = 1.0f / static_cast<float>(channels);
  const float* in = interleaved.data();
  for (std::size_t i = 0; i < frames; ++i, in += channels) {
    float sum = 0.0f;
    for (std::uint32_t c = 0; c < channels; ++c) sum += in[c];
    mono[i] = sum * scale;
  }
  return mono;
}

inline AudioBuffer mix_to_mono(const AudioBuffer& audio) {
  return AudioBuffer{mix_to_mono(audio.samples, audio.channels), audio.sample_rate, 1};
}

}  // namespace izwi::audio
