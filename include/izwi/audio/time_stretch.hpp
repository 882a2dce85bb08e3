#pragma once
// Changing the speed of speech without changing its pitch, in a stream.
//
//   audio::TimeStretcher stretch(24000, 2.0);          // twice as fast
//   for (auto& piece : model_output) send(stretch.push(piece));
//   send(stretch.finish());
//
// /v1/audio/speech's `speed` (0.25-4.0) time-stretches the model's 24 kHz
// output with Rubber Band (librubberband), a phase-vocoder library that keeps
// the pitch (resampling would raise it like a tape played fast). Rubber Band
// runs in its real-time (streaming) mode so that audio leaves while the model
// still speaks: the input is padded at the start by getPreferredStartPad()
// silent samples and getStartDelay() samples are dropped from the output,
// so the output is aligned with the input; at the end silence is pushed
// through and the output cut to exactly round(input / speed) samples. The R3 ("finer") engine: the better of the two for voices.
//
// Deterministic: the same pieces in the same sizes give the same samples,
// which is what lets a streamed response equal a non-streamed one.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace RubberBand {
class RubberBandStretcher;
}

namespace izwi::audio {

/// The `speed` range of /v1/audio/speech (OpenAI's).
inline constexpr double min_speed = 0.25;
inline constexpr double max_speed = 4.0;

/// A mono stream time-stretched by `speed` (2.0: half as long), pitch kept.
/// Move-only; not thread-safe; one stream per object.
class TimeStretcher {
 public:
  /// Throws izwi::invalid_argument("speed") outside [0.25, 4], and for a
  /// sample rate of 0.
  TimeStretcher(std::uint32_t sample_rate, double speed);
  ~TimeStretcher();
  TimeStretcher(TimeStretcher&&) noexcept;
  TimeStretcher& operator=(TimeStretcher&&) noexcept;

  /// Feeds samples; returns the stretched samples that are ready (maybe none).
  std::vector<float> push(std::span<const float> samples);
  /// Ends the stream: returns what is left. Later calls return nothing.
  std::vector<float> finish();

  double speed() const noexcept { return speed_; }

 private:
  void feed(const float* samples, std::size_t count, bool final);
  void collect(std::vector<float>& out);
  std::size_t expected_length() const noexcept;
  void trim_to_length(std::vector<float>& out);

  std::unique_ptr<RubberBand::RubberBandStretcher> stretcher_;
  double speed_ = 1.0;
  std::size_t to_drop_ = 0;  // output samples still to discard (the start delay)
  std::size_t input_samples_ = 0;
  std::size_t output_samples_ = 0;
  bool finished_ = false;
};

}  // namespace izwi::audio

#include "izwi/audio/impl/time_stretch.hpp"
