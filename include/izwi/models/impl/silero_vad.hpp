#pragma once
// Bodies of include/izwi/models/silero_vad.hpp.

#include <izwi/core/error.hpp>

#include <algorithm>
#include <string>

namespace izwi::models {

namespace detail {

// Reads a k=3 Conv1d weight [out][in][3] and stores it [out][tap][in].
inline SileroConv load_silero_conv(const io::SafetensorsFile& file, int layer, std::size_t in, std::size_t out, std::size_t stride) {
  const std::string prefix = "model.encoder." + std::to_string(layer) + ".reparam_conv.";
  const std::vector<float> weight = file.to_f32(prefix + "weight", {out, in, 3});
  SileroConv conv;
  conv.in = in;
  conv.out = out;
  conv.stride = stride;
  conv.bias = file.to_f32(prefix + "bias", {out});
  conv.weight.resize(out * 3 * in);
  for (std::size_t o = 0; o < out; ++o)
    for (std::size_t i = 0; i < in; ++i)
      for (std::size_t k = 0; k < 3; ++k) conv.weight[(o * 3 + k) * in + i] = weight[(o * in + i) * 3 + k];
  return conv;
}

}  // namespace detail

inline SileroVad SileroVad::load(const std::filesystem::path& safetensors_path) {
  return load(io::SafetensorsFile::open(safetensors_path));
}

inline SileroVad SileroVad::load(const io::SafetensorsFile& file) {
  using namespace detail;
  auto weights = std::make_shared<SileroVadWeights>();
  weights->stft_basis = file.to_f32("model.stft.forward_basis_buffer", {2 * silero_bins, 1, silero_fft});
  weights->stft_is_windowed_dft = silero_basis_is_windowed_dft(weights->stft_basis);
  if (weights->stft_is_windowed_dft) weights->fft = SileroFft(weights->stft_basis.data());
  weights->encoder[0] = load_silero_conv(file, 0, silero_bins, 128, 1);
  weights->encoder[1] = load_silero_conv(file, 1, 128, 64, 2);
  weights->encoder[2] = load_silero_conv(file, 2, 64, 64, 2);
  weights->encoder[3] = load_silero_conv(file, 3, 64, silero_hidden, 1);

  const auto w_ih = file.to_f32("model.decoder.rnn.weight_ih", {silero_gates, silero_hidden});
  const auto w_hh = file.to_f32("model.decoder.rnn.weight_hh", {silero_gates, silero_hidden});
  const auto b_ih = file.to_f32("model.decoder.rnn.bias_ih", {silero_gates});
  const auto b_hh = file.to_f32("model.decoder.rnn.bias_hh", {silero_gates});
  weights->lstm_weight.resize(silero_gates * 2 * silero_hidden);
  weights->lstm_bias.resize(silero_gates);
  for (std::size_t g = 0; g < silero_gates; ++g) {
    std::copy_n(w_ih.begin() + static_cast<std::ptrdiff_t>(g * silero_hidden), silero_hidden,
                weights->lstm_weight.begin() + static_cast<std::ptrdiff_t>(g * 2 * silero_hidden));
    std::copy_n(w_hh.begin() + static_cast<std::ptrdiff_t>(g * silero_hidden), silero_hidden,
                weights->lstm_weight.begin() + static_cast<std::ptrdiff_t>(g * 2 * silero_hidden + silero_hidden));
    weights->lstm_bias[g] = b_ih[g] + b_hh[g];
  }
  weights->head_weight = file.to_f32("model.decoder.decoder.2.weight", {1, silero_hidden, 1});
  weights->head_bias = file.to_f32("model.decoder.decoder.2.bias", {1})[0];
  return SileroVad(std::move(weights));
}

inline std::vector<float> SileroVad::speech_probabilities(std::span<const float> samples_16k) const {
  SileroVadStream vad(*this);
  const std::size_t windows = (samples_16k.size() + window_samples - 1) / window_samples;
  std::vector<float> probabilities;
  probabilities.reserve(windows);
  for (std::size_t i = 0; i < windows; ++i) probabilities.push_back(vad.process_window_of(samples_16k, i));
  return probabilities;
}

inline SileroVadStream SileroVad::stream() const { return SileroVadStream(*this); }

inline SileroVadStream::SileroVadStream(const SileroVad& model) : weights_(model.weights_) {}

inline float SileroVadStream::process_window_of(std::span<const float> signal, std::size_t index) {
  constexpr std::size_t w = SileroVad::window_samples;
  if (index >= (signal.size() + w - 1) / w)
    throw izwi::invalid_argument("index", "window " + std::to_string(index) + " is past the signal's " +
                                        std::to_string((signal.size() + w - 1) / w) + " windows");
  const std::size_t start = index * w, n = std::min(w, signal.size() - start);
  if (n == w) return process(signal.subspan(start, w));
  std::array<float, w> tail{};  // zero-padded, as silero-vad's get_speech_timestamps pads it
  std::copy_n(signal.begin() + static_cast<std::ptrdiff_t>(start), n, tail.begin());
  return process(tail);
}

inline float SileroVadStream::process(std::span<const float> window) {
  if (window.size() != SileroVad::window_samples)
    throw izwi::invalid_argument("window", "Silero VAD takes windows of exactly 512 samples at 16 kHz, got " +
                                               std::to_string(window.size()));
  std::copy(window.begin(), window.end(), state_.input.begin() + SileroVad::context_samples);
  return detail::silero_forward(*weights_, state_);
}

inline void SileroVadStream::reset() noexcept { state_ = detail::SileroVadState{}; }

inline std::array<float, 2 * SileroVad::hidden_size> SileroVadStream::state() const noexcept {
  std::array<float, 2 * SileroVad::hidden_size> out{};
  std::copy_n(state_.lstm_input.begin() + SileroVad::hidden_size, SileroVad::hidden_size, out.begin());
  std::copy(state_.cell.begin(), state_.cell.end(), out.begin() + SileroVad::hidden_size);
  return out;
}

}  // namespace izwi::models
