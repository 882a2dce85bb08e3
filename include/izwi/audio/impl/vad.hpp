#pragma once
// Bodies of include/izwi/audio/vad.hpp.

#include <izwi/core/error.hpp>

#include <algorithm>
#include <cmath>
#include <string>

namespace izwi::audio {

namespace detail {

/// Widens each segment by `pad` samples on both sides: the whole pad where
/// the gap to the neighbour allows, else half the gap each side.
inline void pad_speech_segments(std::vector<SpeechSegment>& segments, double pad, std::size_t total_samples) {
  const auto pad_samples = static_cast<std::size_t>(pad);
  for (std::size_t i = 0; i < segments.size(); ++i) {
    SpeechSegment& s = segments[i];
    if (i == 0) s.start = s.start > pad_samples ? s.start - pad_samples : 0;
    if (i + 1 < segments.size()) {
      SpeechSegment& next = segments[i + 1];
      const std::size_t gap = next.start > s.end ? next.start - s.end : 0;
      if (static_cast<double>(gap) < 2.0 * pad) {
        s.end += gap / 2;
        next.start = next.start > gap / 2 ? next.start - gap / 2 : 0;
      } else {
        s.end = std::min(total_samples, s.end + pad_samples);
        next.start = next.start > pad_samples ? next.start - pad_samples : 0;
      }
    } else {
      s.end = std::min(total_samples, s.end + pad_samples);
    }
  }
}

}  // namespace detail

inline std::vector<SpeechSegment> speech_segments(std::span<const float> probabilities, std::size_t total_samples,
                                                  const SpeechSegmentOptions& options) {
  if (options.sample_rate <= 0) throw izwi::invalid_argument("sample_rate", "sample rate must be positive");
  if (options.window_samples == 0) throw izwi::invalid_argument("window_samples", "window must hold at least one sample");

  // Durations in samples, kept fractional as the reference computes them.
  const double rate = options.sample_rate;
  const double window = static_cast<double>(options.window_samples);
  const double min_speech = rate * options.min_speech_duration_ms / 1000.0;
  const double pad = rate * options.speech_pad_ms / 1000.0;
  const double max_speech = rate * options.max_speech_duration_s - window - 2.0 * pad;
  const double min_silence = rate * options.min_silence_duration_ms / 1000.0;
  const double min_silence_at_max_speech = rate * 98.0 / 1000.0;  // a cut inside overlong speech needs this much silence
  const float negative =
      options.neg_threshold >= 0.0f ? options.neg_threshold : std::max(options.threshold - 0.15f, 0.01f);

  std::vector<SpeechSegment> segments;
  bool in_speech = false;
  std::size_t start = 0;
  // Candidate end of the current segment (first quiet window) and, for cutting
  // overlong speech, the last silence long enough to cut at and where speech
  // resumed after it. Zero means "none", as in the reference.
  std::size_t quiet_since = 0, last_cut = 0, resumed_at = 0;

  for (std::size_t i = 0; i < probabilities.size(); ++i) {
    const float p = probabilities[i];
    const std::size_t position = i * options.window_samples;
    if (p >= options.threshold && quiet_since != 0) {
      quiet_since = 0;
      if (resumed_at < last_cut) resumed_at = position;
    }
    if (p >= options.threshold && !in_speech) {
      in_speech = true;
      start = position;
      continue;
    }
    if (in_speech && static_cast<double>(position - start) > max_speech) {
      if (last_cut != 0) {
        segments.push_back({start, last_cut});
        if (resumed_at < last_cut) in_speech = false;
        else start = resumed_at;
        last_cut = resumed_at = quiet_since = 0;
      } else {
        segments.push_back({start, position});
        last_cut = resumed_at = quiet_since = 0;
        in_speech = false;
        continue;
      }
    }
    if (p < negative && in_speech) {
      if (quiet_since == 0) quiet_since = position;
      if (static_cast<double>(position - quiet_since) > min_silence_at_max_speech) last_cut = quiet_since;
      if (static_cast<double>(position - quiet_since) < min_silence) continue;
      if (static_cast<double>(quiet_since - start) > min_speech) segments.push_back({start, quiet_since});
      last_cut = resumed_at = quiet_since = 0;
      in_speech = false;
    }
  }
  if (in_speech && total_samples > start && static_cast<double>(total_samples - start) > min_speech)
    segments.push_back({start, total_samples});

  detail::pad_speech_segments(segments, pad, total_samples);
  return segments;
}

inline EnergyVad::EnergyVad(const EnergyVadOptions& options) : options_(options) {
  if (options.sample_rate <= 0) throw izwi::invalid_argument("sample_rate", "sample rate must be positive");
  if (!(options.frame_ms > 0)) throw izwi::invalid_argument("frame_ms", "frame length must be positive");
  frame_samples_ = std::max<std::size_t>(1, static_cast<std::size_t>(std::lround(options.sample_rate * options.frame_ms / 1000.0)));
  rise_per_frame_db_ = options.floor_rise_db_per_s * options.frame_ms / 1000.0;
}

inline bool EnergyVad::process_frame(std::span<const float> frame) noexcept {
  double sum = 0;
  for (float x : frame) sum += static_cast<double>(x) * x;
  const double mean_square = frame.empty() ? 0.0 : sum / static_cast<double>(frame.size());
  energy_db_ = 10.0 * std::log10(mean_square + 1e-12);  // -120 dB for digital silence
  if (!started_) {
    floor_db_ = energy_db_;
    started_ = true;
  } else if (energy_db_ < floor_db_) {
    floor_db_ = energy_db_;
  } else {
    floor_db_ = std::min(energy_db_, floor_db_ + rise_per_frame_db_);
  }
  const bool loud = energy_db_ > floor_db_ + options_.margin_db && energy_db_ > options_.min_speech_db;
  if (loud) {
    hangover_left_ = options_.hangover_frames;
    return true;
  }
  if (hangover_left_ > 0) {
    --hangover_left_;
    return true;
  }
  return false;
}

inline void EnergyVad::reset() noexcept {
  started_ = false;
  hangover_left_ = 0;
  floor_db_ = energy_db_ = 0;
}

inline std::vector<std::uint8_t> energy_vad_frames(std::span<const float> samples, const EnergyVadOptions& options) {
  EnergyVad vad(options);
  const std::size_t n = vad.frame_samples();
  std::vector<std::uint8_t> decisions;
  decisions.reserve((samples.size() + n - 1) / n);
  for (std::size_t start = 0; start < samples.size(); start += n)
    decisions.push_back(vad.process_frame(samples.subspan(start, std::min(n, samples.size() - start))) ? 1 : 0);
  return decisions;
}

inline std::vector<SpeechSegment> energy_vad_segments(std::span<const float> samples, const EnergyVadOptions& options) {
  const auto decisions = energy_vad_frames(samples, options);
  const std::size_t n = EnergyVad(options).frame_samples();
  std::vector<SpeechSegment> segments;
  for (std::size_t i = 0; i < decisions.size();) {
    if (!decisions[i]) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < decisions.size() && decisions[j]) ++j;
    segments.push_back({i * n, std::min(samples.size(), j * n)});
    i = j;
  }
  return segments;
}

}  // namespace izwi::audio
