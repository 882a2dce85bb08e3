#pragma once
// Bodies of izwi/audio/mel.hpp.

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <string>

#include <izwi/audio/detail/log_mel_kernels.hpp>
#include <izwi/audio/detail/stft_frames.hpp>
#include <izwi/audio/window.hpp>
#include <izwi/core/error.hpp>

namespace izwi::audio {

namespace detail {
// Slaney's mel scale (Auditory Toolbox): 200/3 Hz per mel up to 1 kHz, then
// log-spaced with 27 mels per factor 6.4 in frequency.
inline constexpr double slaney_hz_per_mel = 200.0 / 3.0;
inline constexpr double slaney_log_start_hz = 1000.0;
inline constexpr double slaney_log_start_mel = slaney_log_start_hz / slaney_hz_per_mel;  // 15
inline double slaney_log_step() noexcept { return std::log(6.4) / 27.0; }
}  // namespace detail

inline double hz_to_mel(double hz, MelScale scale) noexcept {
  if (scale == MelScale::htk) return 2595.0 * std::log10(1.0 + hz / 700.0);
  if (hz < detail::slaney_log_start_hz) return hz / detail::slaney_hz_per_mel;
  return detail::slaney_log_start_mel + std::log(hz / detail::slaney_log_start_hz) / detail::slaney_log_step();
}

inline double mel_to_hz(double mel, MelScale scale) noexcept {
  if (scale == MelScale::htk) return 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0);
  if (mel < detail::slaney_log_start_mel) return mel * detail::slaney_hz_per_mel;
  return detail::slaney_log_start_hz * std::exp(detail::slaney_log_step() * (mel - detail::slaney_log_start_mel));
}

inline MelFilterbank::MelFilterbank(const MelFilterbankOptions& options) : options_(options) {
  if (options.n_mels == 0) throw izwi::invalid_argument("n_mels", "mel filterbank needs at least one filter");
  if (options.n_fft == 0 || options.n_fft > RealFft::max_size) {
    throw izwi::invalid_argument("n_fft", "mel filterbank n_fft must be between 1 and " +
                                              std::to_string(RealFft::max_size) + ", got " +
                                              std::to_string(options.n_fft));
  }
  if (!(options.sample_rate > 0.0)) {
    throw izwi::invalid_argument("sample_rate", "mel filterbank sample_rate must be positive, got " +
                                                    std::to_string(options.sample_rate));
  }
  if (!(options.f_min >= 0.0 && options.f_min < options.f_max)) {
    throw izwi::invalid_argument("f_min", "mel filterbank needs 0 <= f_min < f_max, got f_min " +
                                              std::to_string(options.f_min) + " and f_max " +
                                              std::to_string(options.f_max));
  }

  // Filter edges: n_mels + 2 points evenly spaced in mel, converted to Hz.
  const std::size_t n_edges = options.n_mels + 2;
  const double mel_low = hz_to_mel(options.f_min, options.scale);
  const double mel_high = hz_to_mel(options.f_max, options.scale);
  const double mel_step = (mel_high - mel_low) / static_cast<double>(n_edges - 1);
  std::vector<double> edge_hz(n_edges);
  for (std::size_t i = 0; i < n_edges; ++i) {
    edge_hz[i] = mel_to_hz(mel_low + mel_step * static_cast<double>(i), options.scale);
  }

  const std::size_t bins = n_bins();
  const double hz_per_bin = options.sample_rate / static_cast<double>(options.n_fft);
  std::vector<float> row(bins);
  bands_.resize(options.n_mels);
  for (std::size_t m = 0; m < options.n_mels; ++m) {
    const double left = edge_hz[m], centre = edge_hz[m + 1], right = edge_hz[m + 2];
    const double height = options.normalization == MelNormalization::slaney ? 2.0 / (right - left) : 1.0;
    std::size_t first = bins, last = 0;
    for (std::size_t k = 0; k < bins; ++k) {
      const double f = static_cast<double>(k) * hz_per_bin;
      const double rising = (f - left) / (centre - left);
      const double falling = (right - f) / (right - centre);
      const double w = std::max(0.0, std::min(rising, falling));
      row[k] = static_cast<float>(w * height);
      if (row[k] != 0.0f) {
        first = std::min(first, k);
        last = k;
      }
    }
    band_extent& band = bands_[m];
    band.offset = weights_.size();
    if (first < bins) {
      band.first_bin = first;
      band.size = last - first + 1;
      weights_.insert(weights_.end(), row.begin() + static_cast<std::ptrdiff_t>(first),
                      row.begin() + static_cast<std::ptrdiff_t>(last + 1));
    }
  }
}

inline std::vector<float> MelFilterbank::dense() const {
  std::vector<float> matrix(n_mels() * n_bins(), 0.0f);
  for (std::size_t m = 0; m < n_mels(); ++m) {
    const auto weights = band(m);
    std::copy(weights.begin(), weights.end(),
              matrix.begin() + static_cast<std::ptrdiff_t>(m * n_bins() + first_bin(m)));
  }
  return matrix;
}

template <class Real>
void MelFilterbank::apply(std::span<const Real> power, std::span<Real> mel_energies) const {
  if (power.size() != n_bins() || mel_energies.size() != n_mels()) {
    throw izwi::invalid_argument("n_mels", "mel_filterbank::apply needs " + std::to_string(n_bins()) +
                                               " power bins and room for " + std::to_string(n_mels()) +
                                               " mel energies, got " + std::to_string(power.size()) + " and " +
                                               std::to_string(mel_energies.size()));
  }
  for (std::size_t m = 0; m < n_mels(); ++m) {
    const Real* p = power.data() + bands_[m].first_bin;
    const float* w = weights_.data() + bands_[m].offset;
    Real sum = 0;
    for (std::size_t j = 0; j < bands_[m].size; ++j) sum += static_cast<Real>(w[j]) * p[j];
    mel_energies[m] = sum;
  }
}

inline std::vector<float> pad_or_trim(std::span<const float> samples, std::size_t length) {
  std::vector<float> out(length, 0.0f);
  std::copy_n(samples.begin(), std::min(length, samples.size()), out.begin());
  return out;
}

inline WhisperLogMel::WhisperLogMel(std::size_t n_mels)
    : filterbank_(MelFilterbankOptions{.n_mels = n_mels,
                                         .n_fft = whisper_n_fft,
                                         .sample_rate = static_cast<double>(whisper_sample_rate),
                                         .f_min = 0.0,
                                         .f_max = 8000.0,
                                         .scale = MelScale::slaney,
                                         .normalization = MelNormalization::slaney}),
      fft_(whisper_n_fft),
      window_(hann_window<double>(whisper_n_fft, WindowSymmetry::periodic)) {}

inline std::size_t WhisperLogMel::frame_count(std::size_t n_samples, WhisperPadding padding) noexcept {
  // A centred STFT of n samples has 1 + n / hop frames; Whisper drops the last.
  return padding == WhisperPadding::pad_or_trim_30s ? whisper_chunk_frames : n_samples / whisper_hop_length;
}

inline LogMelSpectrogram WhisperLogMel::operator()(std::span<const float> samples_16k,
                                                       WhisperPadding padding) const {
  LogMelSpectrogram result;
  result.n_mels = n_mels();
  result.n_frames = frame_count(samples_16k.size(), padding);
  result.values.resize(result.n_mels * result.n_frames);
  compute_into(samples_16k, padding, result.values);
  return result;
}

inline void WhisperLogMel::compute_into(std::span<const float> samples_16k, WhisperPadding padding,
                                          std::span<float> out) const {
  const std::size_t n_frames = frame_count(samples_16k.size(), padding);
  const std::size_t mels = n_mels();
  if (out.size() != mels * n_frames) {
    throw izwi::invalid_argument("out", "whisper_log_mel::compute_into needs " + std::to_string(mels) + " x " +
                                            std::to_string(n_frames) + " floats, got " +
                                            std::to_string(out.size()));
  }
  if (n_frames == 0) return;

  // pad_or_trim without copying: cut by shortening the span, pad by telling
  // the frame cutter the signal continues with zeros up to 30 s.
  std::span<const float> signal = samples_16k;
  std::size_t logical_length = samples_16k.size();
  if (padding == WhisperPadding::pad_or_trim_30s) {
    signal = samples_16k.first(std::min(samples_16k.size(), whisper_chunk_samples));
    logical_length = whisper_chunk_samples;
  }

  FftBuffer<double> frame(whisper_n_fft);
  FftBuffer<std::complex<double>> bins(fft_.bins());
  std::vector<float> power(fft_.bins());
  // Mel energies of a tile of consecutive frames, [n_mels][tile_frames], so
  // each output row receives a contiguous run per tile instead of one
  // scattered float per frame.
  constexpr std::size_t tile_frames = 16;
  std::vector<float> tile(mels * tile_frames);
  std::vector<float> energies(mels);
  constexpr std::ptrdiff_t half_window = whisper_n_fft / 2;
  std::size_t computed_end = 0;  // one past the last frame that read any audio
  for (std::size_t tile_start = 0; tile_start < n_frames; tile_start += tile_frames) {
    const std::size_t tile_count = std::min(tile_frames, n_frames - tile_start);
    for (std::size_t i = 0; i < tile_count; ++i) {
      const std::size_t t = tile_start + i;
      const std::ptrdiff_t start = static_cast<std::ptrdiff_t>(t * whisper_hop_length) - half_window;
      if (detail::windowed_frame<double>(signal, logical_length, start, true, window_, frame.data())) {
        fft_.forward(frame.span(), bins.span());
        // The FFT needed double (see fft.hpp); its power, a sum of squares,
        // keeps its relative precision in float.
        detail::power_to_float(reinterpret_cast<const double*>(bins.data()), power.data(), power.size());
        filterbank_.apply<float>(power, energies);
        computed_end = t + 1;
      } else {
        std::fill(energies.begin(), energies.end(), 0.0f);  // a frame of padding zeros
      }
      for (std::size_t m = 0; m < mels; ++m) tile[m * tile_frames + i] = energies[m];
    }
    for (std::size_t m = 0; m < mels; ++m) {
      std::copy_n(tile.data() + m * tile_frames, tile_count, out.data() + m * n_frames + tile_start);
    }
  }

  // log10 with Whisper's 1e-10 floor, then keep the top 8 decades (80 dB)
  // below the loudest value and map roughly into [-1, 1]: (x + 4) / 4.
  // Frames of padding only ever follow the audio (pad_or_trim pads at the
  // end), and their energies are 0: their log is the floor's, log10(1e-10) =
  // -10, without computing it (a 5 s request is 5/6 padding).
  float max_log = -10.0f;
  for (std::size_t m = 0; m < mels; ++m) {
    float* row = out.data() + m * n_frames;
    max_log = std::max(max_log, detail::log10_with_floor(row, computed_end, 1e-10f));
    std::fill(row + computed_end, row + n_frames, -10.0f);
  }
  detail::clamp_shift_scale(out.data(), out.size(), max_log - 8.0f, 4.0f, 0.25f);
}

inline LogMelSpectrogram whisper_log_mel_spectrogram(std::span<const float> samples_16k, std::size_t n_mels,
                                                       WhisperPadding padding) {
  return WhisperLogMel(n_mels)(samples_16k, padding);
}

}  // namespace izwi::audio
