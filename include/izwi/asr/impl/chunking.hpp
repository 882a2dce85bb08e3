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

/// Where a region starting at `start` is cut when speech runs past
/// start + max_len. With probabilities: the middle of the latest pause in
/// the splitter's range (windows below `pause`, silero-vad's
/// neg_threshold: not speech by its own rule), so the window fills up —
/// every region costs a whole 30-s encoder pass — and the cut still falls
/// where no one speaks. Otherwise, or with no pause in range, the
/// splitter's quietest point (audio/splitter.hpp), its probabilities looked
/// up from the window boundary at or before `start` (so window i stays
/// window i; the cut is then at most max_len past that boundary).
inline std::size_t quiet_cut(std::span<const float> samples, std::span<const float> probabilities, std::size_t start,
                             std::size_t max_len, float pause, const audio::SplitOptions& split) {
  const std::size_t w = vad_window_samples;
  const auto range = static_cast<std::size_t>(std::llround((split.target_chunk_s - split.search_window_s) * split.sample_rate));
  const std::size_t lo = start + std::min(range, max_len), hi = start + max_len;
  const auto in_pause = [&](std::size_t window) { return window < probabilities.size() && probabilities[window] < pause; };
  // Whole windows inside [lo, hi], latest first.
  for (std::size_t last = hi / w; last > 0 && last * w >= lo + w; --last) {
    const std::size_t window = last - 1;
    if (!in_pause(window)) continue;
    std::size_t first = window;
    while (first > 0 && (first - 1) * w >= lo && in_pause(first - 1)) --first;
    return (first * w + last * w) / 2;
  }
  const std::size_t from = probabilities.empty() ? start : start / w * w;
  const std::span<const float> part = samples.subspan(from, std::min(samples.size() - from, max_len + 1));
  const std::size_t first = std::min(from / w, probabilities.size());
  const std::span<const float> p = probabilities.subspan(first);
  const std::vector<audio::AudioChunk> chunks = p.empty() ? audio::split_at_quiet_points(part, split)
                                                          : audio::split_at_quiet_points(part, p, w, split);
  return std::max(start + 1, from + chunks.front().end);
}

/// Regions covering the speech segments (ordered, disjoint), each at most
/// max_len: a region starts at speech, takes every segment that ends within
/// max_len of its start, and ends there when the next segment starts beyond
/// that; when the next one runs across, the region is cut at the quietest
/// point in the splitter's range and the next starts at the cut. So the
/// regions are the splitter's tiles over the speech alone, the silence
/// between regions skipped.
inline std::vector<audio::AudioChunk> cover_speech(std::span<const float> samples, std::span<const float> probabilities,
                                                   std::span<const audio::SpeechSegment> speech, std::size_t max_len,
                                                   float pause, const audio::SplitOptions& split) {
  std::vector<audio::AudioChunk> regions;
  std::size_t i = 0, start = speech.empty() ? 0 : speech[0].start;
  while (i < speech.size()) {
    start = std::max(start, speech[i].start);
    std::size_t j = i;  // one past the last segment that ends within the window
    while (j < speech.size() && speech[j].end <= start + max_len) ++j;
    if (j == speech.size() || speech[j].start >= start + max_len) {
      regions.push_back({start, speech[j - 1].end});  // j > i: segment i would run across otherwise
      i = j;
      continue;
    }
    const std::size_t cut = quiet_cut(samples, probabilities, start, max_len, pause, split);
    regions.push_back({start, cut});
    start = cut;
    while (i < speech.size() && speech[i].end <= cut) ++i;  // the next region starts in or after segment i
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
  audio::SpeechSegmentOptions so;
  if (!speech_probabilities.empty()) {
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

  // Clipped to the audio and made disjoint (padding never overlaps, but the
  // plan relies on it).
  std::vector<audio::SpeechSegment> clipped;
  for (audio::SpeechSegment s : speech) {
    s.end = std::min(s.end, samples_16k.size());
    if (!clipped.empty()) s.start = std::max(s.start, clipped.back().end);
    if (s.start < s.end) clipped.push_back(s);
  }
  const float pause = so.neg_threshold >= 0 ? so.neg_threshold : std::max(options.threshold - 0.15f, 0.01f);
  return detail::cover_speech(samples_16k, speech_probabilities, clipped, max_len, pause, split);
}

}  // namespace izwi::asr
