#pragma once
// Voice activity detection without a model, and speech segments from any
// detector's per-window probabilities.
//
// EnergyVad: frame energy in dB against an adaptive noise floor. The floor
// drops at once to any quieter frame and climbs slowly (floor_rise_db_per_s)
// while the signal stays louder, so it follows changing background noise
// without rising onto speech, which always has gaps. A frame is speech when
// its energy exceeds floor + margin_db (and an absolute minimum, so dither on
// digital silence is not speech); hangover_frames more frames stay speech
// after the last loud one, bridging the short dips inside words.
//
// speech_segments(): turns per-window speech probabilities (Silero VAD: one
// per 512 samples) into [start, end) sample ranges with the semantics and
// defaults of silero-vad's get_speech_timestamps: a segment starts at the
// first window >= threshold, ends once probabilities stay below
// neg_threshold (default threshold - 0.15) for min_silence_duration_ms,
// segments not longer than min_speech_duration_ms are dropped, segments
// longer than max_speech_duration_s are cut at the last silence of at least
// 98 ms (or hard at the limit), then each is padded by speech_pad_ms (half
// the gap when two padded segments would touch).
//
//   auto p = izwi::models::SileroVad::load(path).speech_probabilities(samples);
//   for (auto s : izwi::audio::speech_segments(p, samples.size())) use(s.start_seconds(16000));

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace izwi::audio {

/// Speech in samples [start, end).
struct SpeechSegment {
  std::size_t start = 0;
  std::size_t end = 0;

  double start_seconds(int sample_rate) const noexcept { return static_cast<double>(start) / sample_rate; }
  double end_seconds(int sample_rate) const noexcept { return static_cast<double>(end) / sample_rate; }
  std::size_t length() const noexcept { return end - start; }
  bool operator==(const SpeechSegment&) const = default;
};

/// Parameters of speech_segments(); the defaults are get_speech_timestamps'.
struct SpeechSegmentOptions {
  int sample_rate = 16000;
  std::size_t window_samples = 512;  ///< samples per probability
  float threshold = 0.5f;            ///< speech starts at or above this
  float neg_threshold = -1.0f;       ///< speech may end below this; negative: max(threshold - 0.15, 0.01)
  double min_speech_duration_ms = 250;
  double max_speech_duration_s = std::numeric_limits<double>::infinity();
  double min_silence_duration_ms = 100;
  double speech_pad_ms = 30;
};

/// Speech segments of a signal of `total_samples` samples whose
/// probabilities[i] covers samples [i * window, (i + 1) * window). Throws
/// izwi::invalid_argument for a non-positive sample rate or window.
std::vector<SpeechSegment> speech_segments(std::span<const float> probabilities, std::size_t total_samples,
                                           const SpeechSegmentOptions& options = {});

/// Parameters of the energy VAD.
struct EnergyVadOptions {
  int sample_rate = 16000;
  double frame_ms = 20;               ///< frame length and hop
  double margin_db = 9;               ///< speech when energy > noise floor + margin
  double min_speech_db = -55;         ///< and energy above this (dBFS, mean square of full scale = 0 dB)
  double floor_rise_db_per_s = 4;     ///< how fast the floor climbs under a louder signal
  int hangover_frames = 8;            ///< frames kept as speech after the last loud one
};

/// Streaming energy VAD: feed frames of frame_samples() samples in order.
class EnergyVad {
 public:
  explicit EnergyVad(const EnergyVadOptions& options = {});

  std::size_t frame_samples() const noexcept { return frame_samples_; }

  /// Classifies the next frame (any length > 0; normally frame_samples()).
  bool process_frame(std::span<const float> frame) noexcept;

  /// The current noise floor estimate in dBFS (meaningless before a frame).
  double noise_floor_db() const noexcept { return floor_db_; }
  /// Energy of the last frame in dBFS.
  double last_energy_db() const noexcept { return energy_db_; }

  void reset() noexcept;

 private:
  EnergyVadOptions options_;
  std::size_t frame_samples_;
  double rise_per_frame_db_;
  double floor_db_ = 0;
  double energy_db_ = 0;
  bool started_ = false;
  int hangover_left_ = 0;
};

/// One decision per frame of a whole signal (a final partial frame included).
std::vector<std::uint8_t> energy_vad_frames(std::span<const float> samples, const EnergyVadOptions& options = {});

/// Runs of speech frames as sample ranges (clamped to the signal).
std::vector<SpeechSegment> energy_vad_segments(std::span<const float> samples, const EnergyVadOptions& options = {});

}  // namespace izwi::audio

#include <izwi/audio/impl/vad.hpp>
