#pragma once
// Bodies of izwi/audio/time_stretch.hpp.

#include <algorithm>
#include <cmath>
#include <string>

#include <rubberband/RubberBandStretcher.h>

#include "izwi/core/error.hpp"

namespace izwi::audio {

inline TimeStretcher::TimeStretcher(std::uint32_t sample_rate, double speed) : speed_(speed) {
  if (!(speed >= min_speed && speed <= max_speed))
    throw invalid_argument("speed", "speed must be in [0.25, 4.0], got " + std::to_string(speed));
  if (sample_rate == 0) throw invalid_argument("sample_rate", "the sample rate must be positive");
  using RB = RubberBand::RubberBandStretcher;
  // Real-time: output as the input arrives. R3 (finer) sounds best on speech;
  // the time ratio is output length over input length.
  stretcher_ = std::make_unique<RB>(sample_rate, 1, RB::OptionProcessRealTime | RB::OptionEngineFiner, 1.0 / speed);
  // Pad the start with silence and drop the start delay from the output, as
  // the library asks of real-time users for an aligned, full-length result.
  const std::size_t pad = stretcher_->getPreferredStartPad();
  to_drop_ = stretcher_->getStartDelay();
  if (pad > 0) {
    const std::vector<float> silence(pad, 0.0f);
    feed(silence.data(), silence.size(), false);
  }
}

inline TimeStretcher::~TimeStretcher() = default;
inline TimeStretcher::TimeStretcher(TimeStretcher&&) noexcept = default;
inline TimeStretcher& TimeStretcher::operator=(TimeStretcher&&) noexcept = default;

inline void TimeStretcher::feed(const float* samples, std::size_t count, bool final) {
  // process() takes at most getSamplesRequired()-sized blocks without
  // reallocating; larger pieces go in several calls.
  const std::size_t block = 4096;
  stretcher_->setMaxProcessSize(block);
  if (count == 0 && final) {
    stretcher_->process(&samples, 0, true);
    return;
  }
  for (std::size_t at = 0; at < count; at += block) {
    const std::size_t n = std::min(block, count - at);
    const float* p = samples + at;
    stretcher_->process(&p, n, final && at + n == count);
  }
}

inline void TimeStretcher::collect(std::vector<float>& out) {
  for (int available = stretcher_->available(); available > 0; available = stretcher_->available()) {
    const std::size_t at = out.size();
    out.resize(at + static_cast<std::size_t>(available));
    float* p = out.data() + at;
    const std::size_t got = stretcher_->retrieve(&p, static_cast<std::size_t>(available));
    out.resize(at + got);
    if (got == 0) break;
  }
  const std::size_t drop = std::min(to_drop_, out.size());
  out.erase(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(drop));
  to_drop_ -= drop;
}

inline std::size_t TimeStretcher::expected_length() const noexcept {
  return static_cast<std::size_t>(std::llround(static_cast<double>(input_samples_) / speed_));
}

inline void TimeStretcher::trim_to_length(std::vector<float>& out) {
  // Never more than input / speed in all: what goes beyond is the silence
  // finish() pushed through (or the stretcher running ahead by a few samples).
  const std::size_t wanted = expected_length();
  const std::size_t room = wanted > output_samples_ ? wanted - output_samples_ : 0;
  if (out.size() > room && finished_) out.resize(room);
  output_samples_ += out.size();
}

inline std::vector<float> TimeStretcher::push(std::span<const float> samples) {
  std::vector<float> out;
  if (finished_ || samples.empty()) return out;
  input_samples_ += samples.size();
  feed(samples.data(), samples.size(), false);
  collect(out);
  trim_to_length(out);
  return out;
}

inline std::vector<float> TimeStretcher::finish() {
  std::vector<float> out;
  if (finished_) return out;
  finished_ = true;
  // The stretcher holds up to its delay (and a window) of input back: push
  // silence through so that all of the real input comes out, then cut the
  // result to input / speed samples.
  const auto tail = static_cast<std::size_t>(std::ceil(static_cast<double>(stretcher_->getStartDelay()) * speed_)) +
                    2 * stretcher_->getSamplesRequired() + 4096;
  const std::vector<float> silence(tail, 0.0f);
  feed(silence.data(), silence.size(), true);
  collect(out);
  trim_to_length(out);
  const std::size_t wanted = expected_length();
  if (output_samples_ < wanted) {
    out.resize(out.size() + (wanted - output_samples_), 0.0f);
    output_samples_ = wanted;
  }
  return out;
}

}  // namespace izwi::audio
