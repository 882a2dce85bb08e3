#pragma once
// Silero VAD v5, 16 kHz: a small speech detector run natively on its trained
// weights (converted once from the published ONNX by
// scripts/convert_silero_vad.py into assets/silero-vad/silero_vad_v5_16k.safetensors).
//
// Per 512-sample window (32 ms) the network sees 576 samples: the last 64
// samples of the previous window as context, then the window. It
//   1. reflect-pads 64 samples on the right (640),
//   2. takes an STFT as a strided convolution (258 basis rows of 256 taps,
//      stride 128: 4 frames; rows 0..128 real, 129..257 imaginary),
//   3. keeps the magnitude (129 x 4),
//   4. runs four conv(k=3, pad 1) + ReLU layers: 129->128 (stride 1),
//      128->64 (stride 2), 64->64 (stride 2), 64->128 (stride 1): 128 x 1,
//   5. steps an LSTM cell (hidden 128; PyTorch gate order i, f, g, o) whose
//      h and c carry over to the next window,
//   6. ReLU, 1x1 conv 128->1, sigmoid: the speech probability.
// Matches onnxruntime on the original ONNX graph within 1e-4 per window
// (test/vad/silero_vad_test.cpp).
//
//   auto vad = izwi::models::SileroVad::load("assets/silero-vad/silero_vad_v5_16k.safetensors");
//   std::vector<float> p = vad.speech_probabilities(samples_16k);   // one per 512 samples
//   auto stream = vad.stream();                                      // or live, window by window
//   float q = stream.process(window);

#include <izwi/io/safetensors.hpp>
#include <izwi/models/detail/silero_vad_network.hpp>

#include <array>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

namespace izwi::models {

class SileroVadStream;

/// The loaded model: immutable weights, cheap to copy (shared), usable from
/// many threads at once. Each stream carries its own state.
class SileroVad {
 public:
  static constexpr int sample_rate = 16000;
  static constexpr std::size_t window_samples = 512;   ///< one probability per this many samples
  static constexpr std::size_t context_samples = 64;   ///< carried over from the previous window
  static constexpr std::size_t hidden_size = 128;      ///< LSTM state: h and c, 128 each

  /// Loads the converted safetensors file; throws io::format_error if a
  /// tensor is missing or has the wrong shape.
  static SileroVad load(const std::filesystem::path& safetensors_path);
  static SileroVad load(const io::SafetensorsFile& file);

  /// Probabilities for a whole 16 kHz mono signal, one per 512-sample window
  /// from a fresh state. A final partial window is zero-padded, as
  /// silero-vad's get_speech_timestamps does, so the count is
  /// ceil(samples / 512).
  std::vector<float> speech_probabilities(std::span<const float> samples_16k) const;

  /// A fresh stateful stream over this model.
  SileroVadStream stream() const;

 private:
  explicit SileroVad(std::shared_ptr<const detail::SileroVadWeights> weights) : weights_(std::move(weights)) {}
  friend class SileroVadStream;

  std::shared_ptr<const detail::SileroVadWeights> weights_;
};

/// Runs the model window by window, carrying the 64-sample context and the
/// LSTM state. Not thread-safe; one per audio stream. Allocates nothing after
/// construction.
class SileroVadStream {
 public:
  explicit SileroVadStream(const SileroVad& model);

  /// Speech probability of the next 512 samples. Throws
  /// izwi::invalid_argument if `window` does not hold exactly 512 samples.
  float process(std::span<const float> window);

  /// Speech probability of window `index` of a whole signal (its samples
  /// [index * 512, index * 512 + 512), the last, partial window zero-padded).
  /// Windows 0, 1, 2, ... of one signal through a fresh stream give
  /// SileroVad::speech_probabilities' values, so the signal can be run
  /// piecewise. Throws izwi::invalid_argument past the signal's windows.
  float process_window_of(std::span<const float> signal, std::size_t index);

  /// Back to the state of a new stream: zero context, zero h and c.
  void reset() noexcept;

  /// The LSTM state as onnxruntime's "state" tensor lays it out: h then c.
  std::array<float, 2 * SileroVad::hidden_size> state() const noexcept;

 private:
  std::shared_ptr<const detail::SileroVadWeights> weights_;
  detail::SileroVadState state_;
};

}  // namespace izwi::models

#include <izwi/models/impl/silero_vad.hpp>
