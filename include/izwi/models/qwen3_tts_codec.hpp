#pragma once
// The Qwen3-TTS 12 Hz codec decoder (speech tokenizer v2, decoder only): 16
// codes per frame in, 1920 samples at 24 kHz out. Every layer is causal, so
// it runs incrementally: a stream carries its state from call to call and the
// samples of any chunking equal those of one full causal decode.
//
//   codes [T][16]
//   split RVQ:  x = P₀·cb₀[c₀] + P₁·Σ_{q≥1} cb_q[c_q]        [T][codebook_dim]
//   pre-conv:   causal Conv1d k3 → latent_dim                      (state: 2 input rows)
//   transformer: in-proj → hidden; 8 × { x += s₁ ⊙ Attn(RMSNorm x)   sliding window 72, RoPE θ 1e4
//                                        x += s₂ ⊙ SwiGLU(RMSNorm x) } (state: K/V of the last 71 frames)
//                RMSNorm, out-proj → latent_dim
//   upsample ×2: ConvTranspose k=s=2 (no overlap), ConvNeXt { causal depthwise k7 (state: 6 rows),
//                LayerNorm, Linear ×4, GELU (erf), Linear, γ, residual }
//   decoder:    causal Conv1d k7 → decoder_dim                     (state: 6 rows)
//               4 × { SnakeBeta, ConvTranspose k=2r s=r            (state: r rows of overlap)
//                     3 × residual { SnakeBeta, causal Conv1d k7 dilation 1/3/9 (state: 6·d rows),
//                                    SnakeBeta, Conv1d k1 } }
//               SnakeBeta, causal Conv1d k7 → 1 channel, clamp to [-1, 1]
//   SnakeBeta(x) = x + sin²(x·e^α) / (e^β + 1e-9)
//
// Activations are time-major ([time][channels]), so several streams' rows
// stack into one matrix and every convolution and projection runs once for
// the whole batch (decode_batch); only the context rows differ per stream.
// Weights are widened to f32 when loaded (the kernels also reordered tap-major
// into matmul order), so any stored dtype (f32, bf16, f16) works, then
// packed once into the GEMM's panels (kernels::cpu::GemmPanels), which
// replace the row-major copies. The decoder
// keeps its audio-rate scratch buffers between calls: after decoding F frames
// in one call (all streams together) it holds about F·4.5 MB (the published
// shapes; the thread pool's GEMM scratch adds up to about 16 MB).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "izwi/kernels/cpu/matmul.hpp"
#include "izwi/kernels/cpu/thread_pool.hpp"
#include "izwi/models/qwen3_tts_codec_weights.hpp"
#include "izwi/models/qwen3_tts_config.hpp"

namespace izwi {

namespace detail {
class Qwen3TtsCodecSource;
class Qwen3TtsCodecScratchCache;
}  // namespace detail

/// How the codec's convolutional decoder (its entry convolution and the
/// decoder blocks' convolutions: nearly all of its multiply-adds per frame)
/// multiplies: f32 everywhere, or bf16 on AMX or AVX512_BF16 (the weights
/// packed once as bf16 tiles, the activations rounded to bf16 per value, f32
/// accumulation; kernels::cpu::pack_gemm_panels_bf16) where the CPU's kernel
/// variant has it
/// (kernels::cpu::conv1d_bf16_available()), f32 elsewhere. The quantizer, the
/// transformer and the upsampling stages stay f32 either way. docs/tts.md
/// gives the measured error against f32 and llama.cpp.
enum class Qwen3TtsCodecPrecision { f32, bf16 };

/// "f32" or "bf16" (a server flag's or bench option's value); nullopt otherwise.
inline std::optional<Qwen3TtsCodecPrecision> parse_qwen3_tts_codec_precision(std::string_view name) noexcept {
  if (name == "f32") return Qwen3TtsCodecPrecision::f32;
  if (name == "bf16") return Qwen3TtsCodecPrecision::bf16;
  return std::nullopt;
}

/// One stream's carried state: what the next call needs from the frames
/// already decoded. Made by Qwen3TtsCodecDecoder::new_stream().
struct Qwen3TtsCodecState {
  /// Frames decoded so far (the transformer's next RoPE position).
  std::int64_t frames = 0;
  /// Per causal convolution (in model order), its last context_rows() input rows.
  std::vector<std::vector<float>> conv_context;
  /// Per transposed convolution, the overlap rows already summed (bias not yet added).
  std::vector<std::vector<float>> overlap;
  /// Per transformer layer, K and V rows ([kv_heads × head_dim] each) of the
  /// last min(frames, sliding_window - 1) frames, oldest first.
  std::vector<std::vector<float>> keys, values;
};

/// One stream of a batched decode.
struct Qwen3TtsCodecStream {
  Qwen3TtsCodecState* state = nullptr;
  /// [frames][num_quantizers] codes, each in [0, codebook_size).
  std::span<const std::int32_t> codes;
  /// Receives frames × samples_per_frame() samples (appended).
  std::vector<float>* pcm = nullptr;
};

class Qwen3TtsCodecDecoder {
 public:
  /// Loads speech_tokenizer/ (config.json + model.safetensors; the encoder's
  /// tensors are ignored). Errors name the file, the tensor and the problem.
  static Qwen3TtsCodecDecoder load(const std::filesystem::path& speech_tokenizer_dir,
                                   Qwen3TtsCodecPrecision precision = Qwen3TtsCodecPrecision::f32);
  /// Loads the codec decoder from llama.cpp's mmproj GGUF (a.gen.wav.*; its
  /// shape read from the tensors, the rest as llama.cpp fixes it: 16 heads,
  /// window 72, θ 1e4, RMSNorm ε 1e-5).
  static Qwen3TtsCodecDecoder load_gguf(const std::filesystem::path& mmproj_gguf,
                                        Qwen3TtsCodecPrecision precision = Qwen3TtsCodecPrecision::f32);
  /// The precision the decoder runs in: bf16 only when asked for and available.
  Qwen3TtsCodecPrecision precision() const noexcept { return precision_; }

  const Qwen3TtsCodecConfig& config() const noexcept { return config_; }
  const Qwen3TtsCodecWeights& weights() const noexcept { return *weights_; }
  std::size_t samples_per_frame() const noexcept { return config_.samples_per_frame(); }

  /// The state of a stream that has decoded nothing (zero conv padding).
  Qwen3TtsCodecState new_stream() const;

  /// Decodes `codes` ([frames][num_quantizers]) after what `state` has seen,
  /// appending frames × samples_per_frame() samples to `pcm`. A code outside
  /// [0, codebook_size) throws izwi::invalid_argument naming frame and
  /// codebook, before any state changes.
  void decode(detail::ThreadPool& pool, Qwen3TtsCodecState& state, std::span<const std::int32_t> codes,
              std::vector<float>& pcm) const;
  /// The same for several streams in one pass (each stream's result equals
  /// its decode() alone up to summation order). Streams must be distinct.
  void decode_batch(detail::ThreadPool& pool, std::span<const Qwen3TtsCodecStream> streams) const;

 private:
  Qwen3TtsCodecDecoder() = default;
  static Qwen3TtsCodecDecoder from_source(const detail::Qwen3TtsCodecSource& source, const Qwen3TtsCodecConfig& config,
                                           Qwen3TtsCodecPrecision precision);
  Qwen3TtsCodecConfig config_;
  Qwen3TtsCodecPrecision precision_ = Qwen3TtsCodecPrecision::f32;
  std::shared_ptr<const Qwen3TtsCodecWeights> weights_;
  std::shared_ptr<const std::vector<std::vector<float>>> storage_;  // what the WeightMatrix views point into
  // Audio-rate buffers kept between calls (shared by copies; thread-safe).
  std::shared_ptr<detail::Qwen3TtsCodecScratchCache> scratch_;
};

}  // namespace izwi

#if !defined(IZWI_SEPARATE_COMPILATION)
#include "izwi/models/impl/qwen3_tts_codec_load.ipp"
#include "izwi/models/impl/qwen3_tts_codec_gguf.ipp"
#include "izwi/models/impl/qwen3_tts_codec.ipp"
#endif
