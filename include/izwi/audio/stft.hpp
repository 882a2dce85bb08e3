#pragma once
// Short-time Fourier transform and its overlap-add inverse, with torch.stft /
// torch.istft semantics (onesided, unnormalised, window applied before the FFT).

#include <complex>
#include <cstddef>
#include <span>
#include <vector>

#include <izwi/audio/fft.hpp>

namespace izwi::audio {

/// How frames are laid over the signal.
enum class StftPadding {
  /// Centred: frame t is centred on sample t * hop_length, and the signal is
  /// extended by n_fft / 2 samples on each side by mirroring it without
  /// repeating the edge sample (numpy.pad "reflect"; repeated for very short
  /// signals). torch.stft(center=True, pad_mode="reflect"); Whisper uses this.
  reflect,
  /// Centred, extended with zeros (torch's pad_mode="constant").
  zeros,
  /// Not centred: frame t covers samples [t * hop_length, t * hop_length + n_fft).
  none,
};

struct StftOptions {
  std::size_t n_fft = 400;
  std::size_t hop_length = 160;
  StftPadding padding = StftPadding::reflect;
};

/// Complex STFT bins, frame-major: values[frame * n_bins + bin], bins from DC
/// to Nyquist (n_bins = n_fft / 2 + 1). Note torch.stft returns the transpose.
struct ComplexSpectrogram {
  std::size_t n_frames = 0;
  std::size_t n_bins = 0;
  std::vector<std::complex<float>> values;

  std::span<const std::complex<float>> frame(std::size_t t) const { return {values.data() + t * n_bins, n_bins}; }
  std::span<std::complex<float>> frame(std::size_t t) { return {values.data() + t * n_bins, n_bins}; }
  std::complex<float> at(std::size_t t, std::size_t bin) const { return values[t * n_bins + bin]; }
};

/// Power |X|^2 of each STFT bin, same layout as ComplexSpectrogram.
struct PowerSpectrogram {
  std::size_t n_frames = 0;
  std::size_t n_bins = 0;
  std::vector<float> values;

  std::span<const float> frame(std::size_t t) const { return {values.data() + t * n_bins, n_bins}; }
  float at(std::size_t t, std::size_t bin) const { return values[t * n_bins + bin]; }
};

/// An STFT of fixed size, hop, window and padding. Construct once, use from
/// any number of threads (all members are const; scratch is per call).
class Stft {
 public:
  /// `window` holds between 1 and n_fft samples; a shorter one is zero-padded
  /// on both sides to n_fft, centred, as torch.stft does. Throws
  /// izwi::invalid_argument naming "n_fft", "hop_length" or "window" when one
  /// is out of range (n_fft 0 or above RealFft::max_size, hop_length 0).
  Stft(StftOptions options, std::span<const float> window);

  const StftOptions& options() const noexcept { return options_; }
  std::size_t n_fft() const noexcept { return options_.n_fft; }
  std::size_t hop_length() const noexcept { return options_.hop_length; }
  std::size_t n_bins() const noexcept { return options_.n_fft / 2 + 1; }
  /// The window as applied, zero-padded to n_fft.
  std::span<const float> window() const noexcept { return window_; }

  /// Frames an n_samples-long signal yields: 1 + n_samples / hop_length when
  /// centred; 0 if n_samples < n_fft, else 1 + (n_samples - n_fft) / hop_length
  /// when not. An empty signal has no frames.
  std::size_t frame_count(std::size_t n_samples) const noexcept;

  /// The complex STFT of `signal` (frame_count(signal.size()) frames).
  ComplexSpectrogram forward(std::span<const float> signal) const;

  /// |STFT|^2 of `signal`, without keeping the complex bins.
  PowerSpectrogram power(std::span<const float> signal) const;

  /// Inverse by weighted overlap-add (torch.istft): each frame's inverse FFT
  /// times the window is added at t * hop_length, and the sum divided by the
  /// overlap-added squared window. Centred transforms drop n_fft / 2 samples
  /// at the start. The result has `length` samples (zero-padded past the last
  /// frame's reach); without `length`, hop_length * (n_frames - 1) when
  /// centred and n_fft + hop_length * (n_frames - 1) when not - for a centred
  /// forward() of n samples, pass n to get exactly n back.
  /// Throws izwi::invalid_argument("window") where the squared window sums to
  /// less than 1e-11 inside the output (the window/hop pair fails the
  /// nonzero-overlap-add condition, or the output reaches past the frames'
  /// edge for an uncentred transform), and ("n_fft") when the spectrogram's
  /// n_bins does not match.
  std::vector<float> inverse(const ComplexSpectrogram& spectrum) const;
  std::vector<float> inverse(const ComplexSpectrogram& spectrum, std::size_t length) const;

  /// The loop under forward() and power(), for frontends that reduce each
  /// frame right away (the Whisper log-mel): calls
  /// `consume(frame_index, std::span<const std::complex<float>> bins)` for
  /// frames [0, n_frames) in order, n_frames <= frame_count(signal.size())
  /// (larger values are clamped). The span is valid only during the call.
  template <class Consumer>
  void for_each_frame(std::span<const float> signal, std::size_t n_frames, Consumer&& consume) const;

 private:
  std::vector<float> inverse_impl(const ComplexSpectrogram& spectrum, bool has_length, std::size_t length) const;

  StftOptions options_;
  RealFft fft_;
  std::vector<float> window_;
};

}  // namespace izwi::audio

#include <izwi/audio/impl/stft.hpp>
