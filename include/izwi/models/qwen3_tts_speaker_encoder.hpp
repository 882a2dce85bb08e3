#pragma once
// Qwen3-TTS's speaker encoder (Base models): an ECAPA-TDNN that turns
// reference audio into the x-vector a cloned voice speaks with.
//
//   mel       24 kHz mono, reflect-padded by (n_fft - hop) / 2 = 384 on each
//             side, uncentred STFT (n_fft 1024, hop 256, periodic Hann 1024),
//             magnitude sqrt(re² + im² + 1e-9), 128 Slaney mels over 0-12 kHz
//             (librosa's filters, Slaney area norm), ln(max(·, 1e-5)).
//   stem      TDNN: Conv1d(mel → C, k 5) + ReLU.
//   blocks    SE-Res2Net × 3: TDNN 1×1, Res2Net (C split into 8 groups; group
//             0 passes, group i > 0 is ReLU(conv_k3,dilated(x_i + y_{i-1}))),
//             TDNN 1×1, squeeze-excitation (time mean → 1×1 + ReLU → 1×1 +
//             sigmoid, a per-channel gate), plus the block's input.
//   mfa       the blocks' outputs concatenated, TDNN 1×1.
//   asp       attentive statistics pooling: per-channel attention over time
//             from [x, mean, std] (TDNN + tanh, then a 1×1 conv, softmax over
//             time); the weighted mean and std, concatenated (2 × 3C).
//   fc        1×1 conv to enc_dim, the talker's hidden size.
//
// Every convolution is "same"-padded by reflection, as upstream's
// (padding="same", padding_mode="reflect"). Weights are widened to f32 at
// load; activations are time-major [frames][channels] and each convolution
// is one matmul over its unfolded input.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "izwi/audio/mel.hpp"
#include "izwi/audio/stft.hpp"
#include "izwi/io/gguf.hpp"
#include "izwi/io/model_directory.hpp"
#include "izwi/kernels/cpu/thread_pool.hpp"
#include "izwi/models/qwen3_tts_config.hpp"

namespace izwi {

/// One 1-D convolution: weight [out][in · kernel] (torch's [out][in][kernel]
/// flattened), bias [out].
struct Qwen3TtsConv1d {
  std::uint32_t in = 0, out = 0, kernel = 1, dilation = 1;
  std::vector<float> weight, bias;
};

struct Qwen3TtsSpeakerBlock {
  Qwen3TtsConv1d tdnn1, tdnn2, se1, se2;
  std::vector<Qwen3TtsConv1d> res2net;  ///< scale - 1 branches
};

class Qwen3TtsSpeakerEncoder {
 public:
  /// From a Hugging Face directory's model.safetensors (speaker_encoder.*).
  /// Errors name the file, the tensor and the problem.
  static Qwen3TtsSpeakerEncoder load(const io::ModelDirectory& dir, const Qwen3TtsSpeakerEncoderConfig& config);
  /// From llama.cpp's mmproj (projector qwen3tts_spkenc: a.conv1d.0, a.blk.*,
  /// a.conv_out, a.asp_*, mm.a.fc). The shape comes from the tensors; the
  /// kernel sizes, dilations and Res2Net scale are the ones llama.cpp fixes.
  static Qwen3TtsSpeakerEncoder load_gguf(const io::GgufFile& mmproj);

  const Qwen3TtsSpeakerEncoderConfig& config() const noexcept { return config_; }

  /// Frames of the mel front end for n samples at the encoder's rate
  /// (0 when n is too short to reflect-pad).
  std::size_t mel_frames(std::size_t n_samples) const noexcept;
  /// The front end: [frames][mel_dim] log-mel of `pcm` at config().sample_rate.
  std::vector<float> log_mel(std::span<const float> pcm) const;
  /// The x-vector (enc_dim floats) of a [frames][mel_dim] log-mel.
  std::vector<float> embed_mel(std::span<const float> mel, std::size_t frames, detail::ThreadPool& pool) const;
  /// The x-vector of mono `pcm` at `sample_rate` (resampled with soxr when it
  /// is not the encoder's rate). Throws izwi::invalid_argument("reference_audio")
  /// for audio too short to give the convolutions a few frames, or holding a
  /// non-finite sample, and ("sample_rate") for a rate out of range.
  std::vector<float> embed(std::span<const float> pcm, std::uint32_t sample_rate, detail::ThreadPool& pool) const;

 private:
  template <class Fetch>
  static Qwen3TtsSpeakerEncoder load_with(const Qwen3TtsSpeakerEncoderConfig& config, Fetch&& fetch);

  Qwen3TtsSpeakerEncoderConfig config_;
  Qwen3TtsConv1d stem_, mfa_, asp_tdnn_, asp_conv_, fc_;
  std::vector<Qwen3TtsSpeakerBlock> blocks_;
  std::vector<float> window_;
  std::shared_ptr<const audio::MelFilterbank> filterbank_;
};

}  // namespace izwi

#if !defined(IZWI_SEPARATE_COMPILATION)
#include "izwi/models/impl/qwen3_tts_speaker_encoder.ipp"
#endif
