#pragma once
// Bodies of include/izwi/asr/chunking.hpp.

#include <algorithm>
#include <cmath>
#include <string>

#include "izwi/audio/vad.hpp"
#include "izwi/core/error.hpp"

namespace izwi::asr {

inline std::vector<audio::AudioChunk> plan_vad_regions(std::span<const float> samples_16k,
                                                       std::span<const float> speech_probabilities,
                                                       const VadChunkingOptions& options) {
  if (!(options.threshold >= 0.0f && options.threshold <= 1.0f))
    throw invalid_argument("chunking_strategy.threshold",
                           "threshold must be in [0, 1], got " + std::to_string(options.threshold));
  if (!(options.prefix_padding_ms >= 0))
    throw invalid_argument("chunking_strategy.prefix_padding_ms", "prefix_padding_ms must not be negative");
  if (!(options.silence_duration_ms >= 0))
    throw invalid_argument("chunking_strategy.silence_duration_ms", "silence_duration_ms must not be negative");
  if (samples_16k.empty()) return {};

  audio::SplitOptions split;
  split.sample_rate = 16000;
  split.max_chunk_s = options.max_chunk_s;
  split.target_chunk_s = options.max_chunk_s;
  split.search_window_s = std::min(5.0, options.max_chunk_s / 2);
  constexpr std::size_t window = 512;  // Silero's samples per probability
  const bool silero = !speech_probabilities.empty();
  const std::vector<audio::AudioChunk> chunks =
      silero ? audio::split_at_quiet_points(samples_16k, speech_probabilities, window, split)
             : audio::split_at_quiet_points(samples_16k, split);

  std::vector<audio::SpeechSegment> speech;
  if (silero) {
    audio::SpeechSegmentOptions so;
    so.threshold = options.threshold;
    so.min_silence_duration_ms = options.silence_duration_ms;
    so.speech_pad_ms = options.prefix_padding_ms;
    speech = audio::speech_segments(speech_probabilities, samples_16k.size(), so);
  } else {
    speech = audio::energy_vad_segments(samples_16k);
  }
  // A chunk is kept when some speech overlaps it.
  std::vector<audio::AudioChunk> out;
  for (const audio::AudioChunk& c : chunks) {
    const bool has_speech = std::any_of(speech.begin(), speech.end(), [&](const audio::SpeechSegment& s) {
      return s.start < c.end && s.end > c.start;
    });
    if (has_speech) out.push_back(c);
  }
  return out;
}

}  // namespace izwi::asr
