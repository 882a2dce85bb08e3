#pragma once
// Splitting long audio into chunks for chunked transcription (Whisper takes
// 30 s at a time): each cut goes to the quietest point near the target length
// instead of the middle of a word, and no chunk exceeds the maximum.
//
// From the start of a chunk, candidate cuts lie every hop_ms within
// [target - search_window, target + search_window], never beyond max_chunk_s.
// Quietness is the mean square over energy_window_ms centred on the
// candidate; with speech probabilities (Silero: one per 512 samples) the
// candidate whose window is least likely speech wins, energy breaking
// near-ties. Equal candidates go to the one nearest the target. The last
// chunk is what remains once it fits in max_chunk_s.
//
//   for (auto c : izwi::audio::split_at_quiet_points(samples)) transcribe(samples.subspan(c.start, c.length()));

#include <cstddef>
#include <span>
#include <vector>

namespace izwi::audio {

struct SplitOptions {
  int sample_rate = 16000;
  double target_chunk_s = 30;       ///< preferred chunk length
  double max_chunk_s = 30;          ///< no chunk is longer
  double search_window_s = 5;       ///< how far from the target a cut may move
  double energy_window_ms = 100;    ///< span over which quietness is measured
  double hop_ms = 10;               ///< spacing of candidate cuts
  double probability_tie = 0.01;    ///< probabilities this close count as equal
};

/// Samples [start, end) of one chunk.
struct AudioChunk {
  std::size_t start = 0;
  std::size_t end = 0;
  std::size_t length() const noexcept { return end - start; }
  bool operator==(const AudioChunk&) const = default;
};

/// Chunks covering `samples` end to end, cut at the lowest energy. Throws
/// izwi::invalid_argument for non-positive lengths or a target above the
/// maximum.
std::vector<AudioChunk> split_at_quiet_points(std::span<const float> samples, const SplitOptions& options = {});

/// As above, but cut where speech is least likely: `speech_probabilities[i]`
/// covers samples [i * window_samples, (i + 1) * window_samples).
std::vector<AudioChunk> split_at_quiet_points(std::span<const float> samples, std::span<const float> speech_probabilities,
                                              std::size_t window_samples, const SplitOptions& options = {});

}  // namespace izwi::audio

#include <izwi/audio/impl/splitter.hpp>
