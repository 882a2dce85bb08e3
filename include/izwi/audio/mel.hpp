#pragma once
// Mel filterbanks and Whisper's log-mel frontend.
//
// WhisperLogMel reproduces openai/whisper's LogMelSpectrogram exactly:
// 16 kHz input, n_fft 400, hop 160, periodic Hann window, centred
// reflect-padded STFT with the last frame dropped, power spectrum |X|^2, a
// Slaney-style mel filterbank (80 or 128 filters, 0-8000 Hz, Slaney mel scale,
// Slaney area normalisation - librosa.filters.mel's defaults, computed here,
// never loaded), log10 with a 1e-10 floor, clamped to (max - 8), then
// (x + 4) / 4. It agrees with float64 references (numpy, transformers.js's
// WhisperFeatureExtractor) to about 2e-5 in log-mel units; the test suite
// holds it to 1e-4.

#include <cstddef>
#include <span>
#include <vector>

#include <izwi/audio/stft.hpp>

namespace izwi::audio {

// ---------------------------------------------------------------------------
// Mel filterbank
// ---------------------------------------------------------------------------

/// Hz <-> mel conversions. Slaney's (librosa's default, Whisper's): linear
/// below 1 kHz (3 mels per 200 Hz), logarithmic above (27 mels per factor
/// 6.4). HTK's: 2595 * log10(1 + f / 700).
enum class MelScale { slaney, htk };

/// Filter heights. slaney: each triangle is scaled by 2 / (its width in Hz),
/// so every filter has about the same area (constant energy per channel);
/// none: every triangle peaks at 1.
enum class MelNormalization { none, slaney };

double hz_to_mel(double hz, MelScale scale) noexcept;
double mel_to_hz(double mel, MelScale scale) noexcept;

struct MelFilterbankOptions {
  std::size_t n_mels = 80;
  std::size_t n_fft = 400;
  double sample_rate = 16000.0;
  double f_min = 0.0;
  double f_max = 8000.0;
  MelScale scale = MelScale::slaney;
  MelNormalization normalization = MelNormalization::slaney;
};

/// Triangular mel filters over the n_fft / 2 + 1 bins of a onesided power
/// spectrum, as librosa.filters.mel computes them: n_mels + 2 edge
/// frequencies evenly spaced on the mel scale between f_min and f_max; filter
/// m rises from edge m to edge m + 1 and falls to edge m + 2. Weights are
/// computed in double and rounded to float once.
///
/// Stored sparse: each filter is non-zero only on one contiguous band of bins,
/// so applying the bank costs about two multiply-adds per bin instead of
/// n_mels.
class MelFilterbank {
 public:
  /// Throws izwi::invalid_argument naming the field when n_mels or n_fft is 0,
  /// sample_rate is not positive, or not 0 <= f_min < f_max.
  explicit MelFilterbank(const MelFilterbankOptions& options);

  const MelFilterbankOptions& options() const noexcept { return options_; }
  std::size_t n_mels() const noexcept { return options_.n_mels; }
  std::size_t n_bins() const noexcept { return options_.n_fft / 2 + 1; }

  /// First bin of filter `mel`'s band (0 for an empty filter).
  std::size_t first_bin(std::size_t mel) const noexcept { return bands_[mel].first_bin; }
  /// Filter `mel`'s weights on bins first_bin(mel), first_bin(mel) + 1, ...;
  /// every bin outside has weight 0. Empty when the filter falls between bins.
  std::span<const float> band(std::size_t mel) const noexcept {
    return {weights_.data() + bands_[mel].offset, bands_[mel].size};
  }

  /// The full matrix, [n_mels][n_bins] row-major (librosa's layout).
  std::vector<float> dense() const;

  /// mel_energies[m] = sum_k weight(m, k) * power[k], accumulated in Real
  /// (float or double). `power` holds n_bins() values, `mel_energies`
  /// n_mels() (checked; izwi::invalid_argument).
  template <class Real>
  void apply(std::span<const Real> power, std::span<Real> mel_energies) const;
  void apply(std::span<const float> power, std::span<float> mel_energies) const {
    apply<float>(power, mel_energies);
  }

 private:
  struct band_extent {
    std::size_t first_bin = 0;
    std::size_t offset = 0;  // into weights_
    std::size_t size = 0;
  };
  MelFilterbankOptions options_;
  std::vector<band_extent> bands_;
  std::vector<float> weights_;
};

// ---------------------------------------------------------------------------
// Whisper's log-mel frontend
// ---------------------------------------------------------------------------

inline constexpr std::size_t whisper_sample_rate = 16000;
inline constexpr std::size_t whisper_n_fft = 400;
inline constexpr std::size_t whisper_hop_length = 160;
/// Whisper reads 30 s windows: 480000 samples, 3000 frames.
inline constexpr std::size_t whisper_chunk_samples = 30 * whisper_sample_rate;
inline constexpr std::size_t whisper_chunk_frames = whisper_chunk_samples / whisper_hop_length;

/// How much audio one feature matrix covers.
enum class WhisperPadding {
  /// Whisper's pad_or_trim: zero-pad or cut the input to 30 s (480000
  /// samples), giving exactly 3000 frames - what the encoder takes, and what
  /// Hugging Face's WhisperFeatureExtractor produces.
  pad_or_trim_30s,
  /// The input as it is: n_samples / 160 frames (rounded down), for models
  /// and callers that take variable-length features. The (max - 8) clamp uses
  /// this input's own maximum.
  none,
};

/// Log-mel features, [n_mels][n_frames] row-major: the layout of Whisper's
/// encoder input (one row per mel channel, frames along a row).
struct LogMelSpectrogram {
  std::size_t n_mels = 0;
  std::size_t n_frames = 0;
  std::vector<float> values;

  std::span<const float> row(std::size_t mel) const { return {values.data() + mel * n_frames, n_frames}; }
  float at(std::size_t mel, std::size_t frame) const { return values[mel * n_frames + frame]; }
};

/// Whisper's pad_or_trim: the first `length` samples, zero-padded at the end
/// if there are fewer.
std::vector<float> pad_or_trim(std::span<const float> samples, std::size_t length = whisper_chunk_samples);

/// Whisper's log-mel frontend for one channel count. Construct once (it holds
/// the filterbank, window and FFT plan), call from any number of threads.
class WhisperLogMel {
 public:
  /// n_mels is 80 (Whisper tiny to large-v2) or 128 (large-v3); other counts
  /// are computed the same way. Throws izwi::invalid_argument("n_mels") for 0.
  explicit WhisperLogMel(std::size_t n_mels = 80);

  std::size_t n_mels() const noexcept { return filterbank_.n_mels(); }
  const MelFilterbank& filterbank() const noexcept { return filterbank_; }

  /// Frames the features of n_samples samples have: 3000 for
  /// pad_or_trim_30s, n_samples / 160 for none.
  static std::size_t frame_count(std::size_t n_samples, WhisperPadding padding) noexcept;

  /// The log-mel features of `samples_16k` (mono, 16 kHz, nominally in
  /// [-1, 1]; resample first if not).
  LogMelSpectrogram operator()(std::span<const float> samples_16k,
                                 WhisperPadding padding = WhisperPadding::pad_or_trim_30s) const;

  /// The same into a caller-owned buffer of n_mels() * frame_count(...)
  /// floats, [n_mels][n_frames] (checked; izwi::invalid_argument("out")).
  /// Allocates only a few kilobytes of scratch.
  void compute_into(std::span<const float> samples_16k, WhisperPadding padding, std::span<float> out) const;

 private:
  // Double precision from the window to the mel energies: see fft.hpp on
  // why log10's 8-decade range needs it. The log itself is taken in float.
  MelFilterbank filterbank_;
  RealFftDouble fft_;
  std::vector<double> window_;
};

/// One-shot convenience: WhisperLogMel(n_mels)(samples_16k, padding).
LogMelSpectrogram whisper_log_mel_spectrogram(std::span<const float> samples_16k, std::size_t n_mels = 80,
                                                WhisperPadding padding = WhisperPadding::pad_or_trim_30s);

}  // namespace izwi::audio

#include <izwi/audio/impl/mel.hpp>
