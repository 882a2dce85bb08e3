#pragma once
// Bodies of include/izwi/asr/chunking.hpp.

#include <algorithm>
#include <cmath>
#include <string>

#include "izwi/audio/vad.hpp"
#include "izwi/core/error.hpp"

namespace izwi::asr {

namespace detail {

inline constexpr std::size_t vad_window_samples = 512;  // Silero's samples per probability

/// `segment` as pieces of at most max_len, cut at its quietest points, appended
/// to `out`. With probabilities the split looks them up from a window
/// boundary at or before the segment, so window i stays window i.
inline void append_pieces(std::vector<audio::AudioChunk>& out, std::span<const float> samples,
                          std::span<const float> probabilities, audio::AudioChunk segment, std::size_t max_len,
                          const audio::SplitOptions& split) {
  if (segment.length() <= max_len) {
    out.push_back(segment);
    return;
  }
  const std::size_t from = probabilities.empty() ? segment.start
                                                 : segment.start / vad_window_samples * vad_window_samples;
  const std::span<const float> part = samples.subspan(from, segment.end - from);
  std::vector<audio::AudioChunk> chunks;
  if (probabilities.empty()) {
    chunks = audio::split_at_quiet_points(part, split);
  } else {
    const std::size_t first = std::min(from / vad_window_samples, probabilities.size());
    const std::span<const float> p = probabilities.subspan(first);
    chunks = p.empty() ? audio::split_at_quiet_points(part, split)
                       : audio::split_at_quiet_points(part, p, vad_window_samples, split);
  }
  for (const audio::AudioChunk& c : chunks) {
    const audio::AudioChunk piece{std::max(from + c.start, segment.start), from + c.end};
    if (piece.start < piece.end) out.push_back(piece);
  }
}

/// Consecutive pieces (ordered, disjoint) joined while the span from the
/// first's start to the last's end stays within max_len: the fewest regions
/// that keep the pieces whole and in order (greedy interval covering).
inline std::vector<audio::AudioChunk> join_pieces(std::span<const audio::AudioChunk> pieces, std::size_t max_len) {
  std::vector<audio::AudioChunk> regions;
  for (audio::AudioChunk p : pieces) {
    if (!regions.empty()) p.start = std::max(p.start, regions.back().end);  // padded neighbours never overlap
    if (p.start >= p.end) continue;
    if (!regions.empty() && p.end - regions.back().start <= max_len)
      regions.back().end = p.end;
    else
      regions.push_back(p);
  }
  return regions;
}

}  // namespace detail

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
  if (!(options.max_chunk_s > 0))
    throw invalid_argument("chunking_strategy.max_chunk_s", "the longest region must be positive");
  if (samples_16k.empty()) return {};

  audio::SplitOptions split;
  split.sample_rate = 16000;
  split.max_chunk_s = options.max_chunk_s;
  split.target_chunk_s = options.max_chunk_s;
  split.search_window_s = std::min(5.0, options.max_chunk_s / 2);
  const std::size_t max_len = static_cast<std::size_t>(std::llround(options.max_chunk_s * split.sample_rate));

  std::vector<audio::SpeechSegment> speech;
  if (!speech_probabilities.empty()) {
    audio::SpeechSegmentOptions so;
    so.window_samples = detail::vad_window_samples;
    so.threshold = options.threshold;
    so.min_silence_duration_ms = options.silence_duration_ms;
    so.speech_pad_ms = options.prefix_padding_ms;
    speech = audio::speech_segments(speech_probabilities, samples_16k.size(), so);
  } else {
    speech = audio::energy_vad_segments(samples_16k);
  }
  if (speech.empty()) return {};
  // One window holds it all: the whole audio, as the sequential path decodes it.
  if (samples_16k.size() <= max_len) return {{0, samples_16k.size()}};

  std::vector<audio::AudioChunk> pieces;
  for (const audio::SpeechSegment& s : speech) {
    const std::size_t end = std::min(s.end, samples_16k.size());
    if (s.start >= end) continue;
    detail::append_pieces(pieces, samples_16k, speech_probabilities, {s.start, end}, max_len, split);
  }
  return detail::join_pieces(pieces, max_len);
}

}  // namespace izwi::asr
