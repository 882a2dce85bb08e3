#pragma once
// Bodies of include/izwi/asr/chunking.hpp.

#include <algorithm>
#include <cmath>
#include <limits>
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
///
/// The plan is greedy from left to right and a region depends on nothing
/// but where it starts, so it can be resumed: `resume` is the end of the
/// last region planned before (0: none), and planning stops before a region
/// that would start after `last_start` (VadRegionPlanner's limit of what is
/// final).
inline std::vector<audio::AudioChunk> cover_speech(std::span<const float> samples, std::span<const float> probabilities,
                                                   std::span<const audio::SpeechSegment> speech, std::size_t max_len,
                                                   float pause, const audio::SplitOptions& split, std::size_t resume = 0,
                                                   std::size_t last_start = std::numeric_limits<std::size_t>::max()) {
  std::vector<audio::AudioChunk> regions;
  std::size_t i = 0, start = resume;
  while (i < speech.size() && speech[i].end <= resume) ++i;  // the next region starts in or after segment i
  while (i < speech.size()) {
    start = std::max(start, speech[i].start);
    if (start > last_start) break;
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
    while (i < speech.size() && speech[i].end <= cut) ++i;
  }
  return regions;
}

inline VadPlanSettings vad_plan_settings(const VadChunkingOptions& options) {
  if (!(options.threshold >= 0.0f && options.threshold <= 1.0f))
    throw invalid_argument("chunking_strategy.threshold",
                           "threshold must be in [0, 1], got " + std::to_string(options.threshold));
  if (!(options.prefix_padding_ms >= 0))
    throw invalid_argument("chunking_strategy.prefix_padding_ms", "prefix_padding_ms must not be negative");
  if (!(options.silence_duration_ms >= 0))
    throw invalid_argument("chunking_strategy.silence_duration_ms", "silence_duration_ms must not be negative");
  if (!(options.max_chunk_s > 0))
    throw invalid_argument("chunking_strategy.max_chunk_s", "the longest region must be positive");
  VadPlanSettings s;
  s.split.sample_rate = 16000;
  s.split.max_chunk_s = options.max_chunk_s;
  s.split.target_chunk_s = options.max_chunk_s;
  s.split.search_window_s = std::min(5.0, options.max_chunk_s / 2);
  s.max_len = static_cast<std::size_t>(std::llround(options.max_chunk_s * s.split.sample_rate));
  s.segments.window_samples = vad_window_samples;
  s.segments.threshold = options.threshold;
  s.segments.min_silence_duration_ms = options.silence_duration_ms;
  s.segments.speech_pad_ms = options.prefix_padding_ms;
  const float neg = s.segments.neg_threshold;
  s.pause = neg >= 0 ? neg : std::max(options.threshold - 0.15f, 0.01f);
  return s;
}

/// The speech segments of the samples (Silero's with probabilities, the
/// energy VAD's without), clipped to the audio and made disjoint (padding
/// never overlaps, but the plan relies on it).
inline std::vector<audio::SpeechSegment> plan_speech(std::span<const float> samples, std::span<const float> probabilities,
                                                     const VadPlanSettings& s) {
  const std::vector<audio::SpeechSegment> speech = probabilities.empty()
                                                       ? audio::energy_vad_segments(samples)
                                                       : audio::speech_segments(probabilities, samples.size(), s.segments);
  std::vector<audio::SpeechSegment> clipped;
  for (audio::SpeechSegment seg : speech) {
    seg.end = std::min(seg.end, samples.size());
    if (!clipped.empty()) seg.start = std::max(seg.start, clipped.back().end);
    if (seg.start < seg.end) clipped.push_back(seg);
  }
  return clipped;
}

/// The plan of the whole audio from `resume` on (see cover_speech).
inline std::vector<audio::AudioChunk> plan_rest(std::span<const float> samples, std::span<const float> probabilities,
                                                const VadPlanSettings& s, std::size_t resume) {
  if (samples.empty()) return {};
  const std::vector<audio::SpeechSegment> speech = plan_speech(samples, probabilities, s);
  if (speech.empty()) return {};
  // One window holds it all: the whole audio, as the sequential path decodes it.
  if (samples.size() <= s.max_len) return {{0, samples.size()}};
  return cover_speech(samples, probabilities, speech, s.max_len, s.pause, s.split, resume);
}

}  // namespace detail

inline std::vector<audio::AudioChunk> plan_vad_regions(std::span<const float> samples_16k,
                                                       std::span<const float> speech_probabilities,
                                                       const VadChunkingOptions& options) {
  return detail::plan_rest(samples_16k, speech_probabilities, detail::vad_plan_settings(options), 0);
}

inline VadRegionPlanner::VadRegionPlanner(std::span<const float> samples_16k, const VadChunkingOptions& options)
    : samples_(samples_16k), settings_(detail::vad_plan_settings(options)) {
  // Everything a region starting at s reads lies before s + max_len + one
  // window (quiet_cut: probabilities and samples up to s + max_len, the
  // splitter's energy a few ms past its candidates). A speech segment's
  // edges there are final once min_silence_duration of quiet has followed
  // its end and the padding of it and of its neighbour fit behind that
  // (speech_segments splits overlapping padding between the two). One
  // second more covers the window rounding.
  const double guard_ms = options.silence_duration_ms + 2 * options.prefix_padding_ms + 1000;
  guard_ = static_cast<std::size_t>(std::ceil(guard_ms * 16)) + 2 * detail::vad_window_samples;
  probabilities_.reserve(windows());
}

inline std::size_t VadRegionPlanner::windows() const noexcept {
  return (samples_.size() + detail::vad_window_samples - 1) / detail::vad_window_samples;
}

inline void VadRegionPlanner::add_probabilities(std::span<const float> next) {
  if (finished_) throw invalid_argument("speech_probabilities", "the plan is finished");
  if (next.size() > windows() - probabilities_.size())
    throw invalid_argument("speech_probabilities", "more probabilities than the audio has windows");
  probabilities_.insert(probabilities_.end(), next.begin(), next.end());
}

inline std::vector<audio::AudioChunk> VadRegionPlanner::take_final() {
  if (finished_) return {};
  const std::size_t covered = std::min(samples_.size(), probabilities_.size() * detail::vad_window_samples);
  // A region is final when it starts at or before `covered - max_len - guard`
  // (so never while the audio seen is one window long, where the plan is
  // "all of it" or nothing).
  if (covered < settings_.max_len + guard_) return {};
  const std::size_t last_start = covered - settings_.max_len - guard_;
  if (last_start < resume_) return {};
  const std::span<const float> seen = samples_.first(covered);
  const std::vector<audio::SpeechSegment> speech = detail::plan_speech(seen, probabilities_, settings_);
  std::vector<audio::AudioChunk> out = detail::cover_speech(seen, probabilities_, speech, settings_.max_len,
                                                            settings_.pause, settings_.split, resume_, last_start);
  if (!out.empty()) resume_ = out.back().end;
  return out;
}

inline std::vector<audio::AudioChunk> VadRegionPlanner::finish() {
  if (finished_) return {};
  if (probabilities_.size() != windows())
    throw invalid_argument("speech_probabilities", "the plan needs a probability for each of the audio's " +
                                                       std::to_string(windows()) + " windows, got " +
                                                       std::to_string(probabilities_.size()));
  finished_ = true;
  return detail::plan_rest(samples_, probabilities_, settings_, resume_);
}

}  // namespace izwi::asr
