#pragma once
// Qwen3-TTS's speech tokenizer encoder (12 Hz, v2): 24 kHz audio in, 16 codes
// per 12.5 Hz frame out — the reference codes of in-context voice cloning.
// Upstream's Qwen3TTSTokenizerV2Encoder is transformers' MimiModel without its
// decoder (speech_tokenizer/model.safetensors, `encoder.*`):
//
//   SEANet      causal Conv1d(1 → F, k7); for each ratio of reversed(upsampling_ratios)
//               (4, 5, 6, 8): residual blocks { ELU, Conv k3 (dilation growth^j) → C/2,
//               ELU, Conv k1 → C, + input }, ELU, Conv(C → 2C, k = 2·ratio, stride ratio);
//               ELU, Conv(→ hidden, k3). 960 samples per 25 Hz step.
//   transformer 8 × { x += s₁ ⊙ Attn(LayerNorm x)   causal, RoPE θ 1e4 (rotate-half)
//                     x += s₂ ⊙ fc2(GELU(fc1(LayerNorm x))) }
//   downsample  causal Conv(hidden → hidden, k4, stride 2, no bias), padded by
//               replicating the edge frames: 12.5 Hz.
//   split RVQ   semantic: input_proj (1×1) then 1 codebook; acoustic: its own
//               input_proj then codebooks 1..15 on the residual. A code is the
//               nearest centroid (Euclidean); centroid = embed_sum / max(usage, 1e-5).
//
// Every convolution is causal and padded as MimiConv1d pads it: (k−1)·d+1 − s
// frames on the left (zeros, or the edge for the downsample), and on the right
// what makes the output ceil(L / s) long. N samples give ceil(N / 1920) frames,
// what upstream keeps of a padded batch. The transformer attends to every earlier
// frame: transformers' Mimi (which upstream runs) builds a plain causal mask, not
// the 250-frame window its config names (the same for references up to 10 s).
// Weights are widened to f32 at load; activations are time-major
// [frames][channels] and each convolution is a matmul over unfolded rows.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

#include "izwi/io/config.hpp"
#include "izwi/kernels/cpu/thread_pool.hpp"

namespace izwi {

/// speech_tokenizer/config.json's encoder_config (a MimiConfig) and the
/// top-level encoder_valid_num_quantizers.
struct Qwen3TtsSpeechEncoderConfig {
  std::uint32_t sample_rate = 24000;
  std::uint32_t num_filters = 64;
  std::uint32_t kernel_size = 7, residual_kernel_size = 3, last_kernel_size = 3;
  std::uint32_t num_residual_layers = 1, dilation_growth_rate = 2, compress = 2;
  std::vector<std::uint32_t> upsampling_ratios{8, 6, 5, 4};
  std::uint32_t hidden_size = 512, num_layers = 8, num_heads = 8, num_kv_heads = 8, head_dim = 64;
  std::uint32_t intermediate_size = 2048;
  double norm_eps = 1e-5, rope_theta = 10000.0;
  double frame_rate = 12.5;
  std::uint32_t codebook_size = 2048, codebook_dim = 256, quantizer_dim = 256;
  std::uint32_t num_quantizers = 32, num_semantic_quantizers = 1;
  /// Codebooks kept per frame (the talker's code groups).
  std::uint32_t valid_quantizers = 16;

  /// Samples per 25 Hz step of the SEANet (the product of upsampling_ratios).
  std::size_t hop() const noexcept;
  /// Stride of the downsample (2 for 25 → 12.5 Hz); 1: no downsample.
  std::uint32_t downsample_stride() const noexcept;
  std::size_t samples_per_frame() const noexcept { return hop() * downsample_stride(); }

  /// From the whole speech_tokenizer/config.json (its encoder_config object,
  /// which must be present: check has_encoder first).
  static bool has_encoder(const io::ConfigView& root) noexcept { return root.has("encoder_config"); }
  static Qwen3TtsSpeechEncoderConfig from(const io::ConfigView& root);
  /// izwi::invalid_argument naming the field when the shape cannot run.
  void validate() const;
};

namespace detail {
struct Qwen3TtsSpeechEncoderWeights;
}

class Qwen3TtsSpeechEncoder {
 public:
  /// Loads speech_tokenizer/ (config.json's encoder_config, model.safetensors'
  /// encoder.*). A missing or misshapen tensor throws naming file and tensor;
  /// a config without encoder_config throws naming the key.
  static Qwen3TtsSpeechEncoder load(const std::filesystem::path& speech_tokenizer_dir);

  const Qwen3TtsSpeechEncoderConfig& config() const noexcept { return config_; }
  /// Frames of codes for n samples at config().sample_rate: ceil(n / 1920).
  std::size_t frames(std::size_t n_samples) const noexcept;

  /// Codes [frames][valid_quantizers] of mono `pcm` at config().sample_rate:
  /// quantize(latent(pcm)).
  std::vector<std::int32_t> encode(std::span<const float> pcm, detail::ThreadPool& pool) const;
  /// The continuous frames before quantization, [frames][hidden_size] (after
  /// the downsample): what the split RVQ reads.
  std::vector<float> latent(std::span<const float> pcm, detail::ThreadPool& pool) const;
  /// The split RVQ's codes [frames][valid_quantizers] of latent frames.
  std::vector<std::int32_t> quantize(std::span<const float> latent, detail::ThreadPool& pool) const;
  /// The same for audio at `sample_rate` (resampled with soxr when it differs).
  /// Throws izwi::invalid_argument("reference_audio") for empty audio or a
  /// non-finite sample.
  std::vector<std::int32_t> encode(std::span<const float> pcm, std::uint32_t sample_rate, detail::ThreadPool& pool) const;

 private:
  Qwen3TtsSpeechEncoderConfig config_;
  std::shared_ptr<const detail::Qwen3TtsSpeechEncoderWeights> weights_;
};

}  // namespace izwi

#if !defined(IZWI_SEPARATE_COMPILATION)
#include "izwi/models/impl/qwen3_tts_speech_encoder.ipp"
#endif
