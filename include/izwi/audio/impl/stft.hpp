#pragma once
// Bodies of izwi/audio/stft.hpp.

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include <izwi/audio/detail/stft_frames.hpp>
#include <izwi/core/error.hpp>

namespace izwi::audio {

inline Stft::Stft(StftOptions options, std::span<const float> window)
    : options_(options), fft_(options.n_fft), window_(options.n_fft, 0.0f) {
  if (options_.hop_length == 0) throw izwi::invalid_argument("hop_length", "STFT hop_length must be at least 1");
  if (window.empty() || window.size() > options_.n_fft) {
    throw izwi::invalid_argument("window", "STFT window must hold between 1 and n_fft (" +
                                               std::to_string(options_.n_fft) + ") samples, got " +
                                               std::to_string(window.size()));
  }
  const std::size_t offset = (options_.n_fft - window.size()) / 2;
  std::copy(window.begin(), window.end(), window_.begin() + static_cast<std::ptrdiff_t>(offset));
}

inline std::size_t Stft::frame_count(std::size_t n_samples) const noexcept {
  if (n_samples == 0) return 0;
  if (options_.padding != StftPadding::none) return 1 + n_samples / options_.hop_length;
  if (n_samples < options_.n_fft) return 0;
  return 1 + (n_samples - options_.n_fft) / options_.hop_length;
}

template <class Consumer>
void Stft::for_each_frame(std::span<const float> signal, std::size_t n_frames, Consumer&& consume) const {
  n_frames = std::min(n_frames, frame_count(signal.size()));
  if (n_frames == 0) return;
  FftBuffer<float> frame(options_.n_fft);
  FftBuffer<std::complex<float>> bins(n_bins());
  const bool centred = options_.padding != StftPadding::none;
  const bool reflect = options_.padding == StftPadding::reflect;
  const std::ptrdiff_t first_start = centred ? -static_cast<std::ptrdiff_t>(options_.n_fft / 2) : 0;
  for (std::size_t t = 0; t < n_frames; ++t) {
    const std::ptrdiff_t start = first_start + static_cast<std::ptrdiff_t>(t * options_.hop_length);
    if (detail::windowed_frame<float>(signal, signal.size(), start, reflect, window_, frame.data())) {
      fft_.forward(frame.span(), bins.span());
    } else {
      std::fill_n(bins.data(), bins.size(), std::complex<float>{});
    }
    consume(t, std::span<const std::complex<float>>(bins.data(), bins.size()));
  }
}

inline ComplexSpectrogram Stft::forward(std::span<const float> signal) const {
  ComplexSpectrogram result;
  result.n_frames = frame_count(signal.size());
  result.n_bins = n_bins();
  result.values.resize(result.n_frames * result.n_bins);
  for_each_frame(signal, result.n_frames, [&](std::size_t t, std::span<const std::complex<float>> bins) {
    std::copy(bins.begin(), bins.end(), result.values.begin() + static_cast<std::ptrdiff_t>(t * result.n_bins));
  });
  return result;
}

inline PowerSpectrogram Stft::power(std::span<const float> signal) const {
  PowerSpectrogram result;
  result.n_frames = frame_count(signal.size());
  result.n_bins = n_bins();
  result.values.resize(result.n_frames * result.n_bins);
  for_each_frame(signal, result.n_frames, [&](std::size_t t, std::span<const std::complex<float>> bins) {
    float* out = result.values.data() + t * result.n_bins;
    for (std::size_t k = 0; k < bins.size(); ++k) out[k] = std::norm(bins[k]);
  });
  return result;
}

inline std::vector<float> Stft::inverse(const ComplexSpectrogram& spectrum) const {
  return inverse_impl(spectrum, false, 0);
}

inline std::vector<float> Stft::inverse(const ComplexSpectrogram& spectrum, std::size_t length) const {
  return inverse_impl(spectrum, true, length);
}

inline std::vector<float> Stft::inverse_impl(const ComplexSpectrogram& spectrum, bool has_length,
                                             std::size_t length) const {
  if (spectrum.n_bins != n_bins() || spectrum.values.size() != spectrum.n_frames * spectrum.n_bins) {
    throw izwi::invalid_argument("n_fft", "inverse STFT of n_fft " + std::to_string(options_.n_fft) + " needs " +
                                              std::to_string(n_bins()) + " bins per frame, got a spectrogram of " +
                                              std::to_string(spectrum.n_bins) + " bins and " +
                                              std::to_string(spectrum.values.size()) + " values for " +
                                              std::to_string(spectrum.n_frames) + " frames");
  }
  const std::size_t n_fft = options_.n_fft;
  const std::size_t hop = options_.hop_length;
  const bool centred = options_.padding != StftPadding::none;
  const std::size_t trim = centred ? n_fft / 2 : 0;
  const std::size_t frames = spectrum.n_frames;
  const std::size_t reach = frames == 0 ? 0 : n_fft + hop * (frames - 1);  // samples the frames cover
  if (!has_length) length = reach >= 2 * trim ? reach - 2 * trim : 0;
  if (length == 0) return {};

  // Overlap-add the windowed inverse frames and the squared window over the
  // part of the padded signal the output needs.
  const std::size_t end = std::min(trim + length, reach);
  std::vector<float> sum(end, 0.0f);
  std::vector<float> envelope(end, 0.0f);
  FftBuffer<std::complex<float>> bins(n_bins());
  FftBuffer<float> frame(n_fft);
  for (std::size_t t = 0; t < frames && t * hop < end; ++t) {
    const auto source = spectrum.frame(t);
    std::copy(source.begin(), source.end(), bins.data());
    fft_.inverse(bins.span(), frame.span());
    const std::size_t count = std::min(n_fft, end - t * hop);
    float* s = sum.data() + t * hop;
    float* e = envelope.data() + t * hop;
    for (std::size_t j = 0; j < count; ++j) {
      s[j] += frame[j] * window_[j];
      e[j] += window_[j] * window_[j];
    }
  }

  std::vector<float> out(length, 0.0f);
  for (std::size_t i = trim; i < end; ++i) {
    if (!(envelope[i] > 1e-11f)) {
      throw izwi::invalid_argument(
          "window", "inverse STFT: the squared window overlap-adds to " + std::to_string(envelope[i]) +
                        " at sample " + std::to_string(i - trim) +
                        " (below 1e-11), so the signal there cannot be recovered; use a window and hop_length "
                        "that overlap without gaps (nonzero overlap-add)");
    }
    out[i - trim] = sum[i] / envelope[i];
  }
  return out;
}

}  // namespace izwi::audio
