#pragma once
// Whisper: OpenAI's encoder-decoder speech recognition and translation model.
//
//   encoder (once per 30-s window, mel [n_mels][3000]):
//     x = GELU(Conv1d(mel, k3, s1, p1));  x = GELU(Conv1d(x, k3, s2, p1))   → [1500][d]
//     x += sinusoidal positions (stored as encoder.positional_embedding)
//     per layer (pre-LN):  x += Attn(LN(x))  (full, 1/sqrt(head_dim), key has no bias)
//                          x += fc2(GELU(fc1(LN(x))))
//     x = LN_post(x)
//   cross-attention K/V (once per window and decoder layer): K = x·Wkᵀ, V = x·Wvᵀ + bv
//   decoder (every step, per token at decoder position p):
//     x = token_embedding[t] + positional_embedding[p]
//     per layer:  x += SelfAttn(LN(x))   causal over the decoder tokens
//                 x += CrossAttn(LN(x))  over the window's encoder K/V
//                 x += fc2(GELU(fc1(LN(x))))
//     logits = LN(x) · token_embeddingᵀ   (tied)
//
// One request is one sequence in the paged KV cache: its first
// audio_positions() cache positions hold the window's cross-attention K/V
// (every decoder layer's, written by store_cross_kv) and its decoder tokens
// follow. So the cache's budget accounts for the audio, the prefix cache
// shares it between requests with the same audio (the blocks' keys carry the
// audio's hash), and preemption frees it with the rest. A decoder token's
// self-attention sees the positions from audio_positions() on, its
// cross-attention [0, n_audio_ctx).
//
// Checkpoints: a Hugging Face directory (openai/whisper-*: config.json,
// model.safetensors, generation_config.json, vocab.json or tokenizer.json) or a whisper.cpp ggml `.bin`
// file (F32, F16, Q8_0). Both go through one table of tensor names (OpenAI's,
// as the ggml file spells them, ↔ transformers'), and the model copies every
// weight into its own aligned memory (ggml files are not aligned), keeping the
// stored element type of the matrices.
//
// The forward passes are written against WhisperOps: the BackendOps concept
// plus layer norm, GELU, biases, conv1d and dense attention.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "izwi/concepts/backend_ops.hpp"
#include "izwi/concepts/kv_cache.hpp"
#include "izwi/concepts/model_family.hpp"
#include "izwi/concepts/tags.hpp"
#include "izwi/core/dtype.hpp"
#include "izwi/core/ids.hpp"
#include "izwi/core/kv_cache_shape.hpp"
#include "izwi/kernels/cpu/matmul.hpp"
#include "izwi/models/forward_batch.hpp"
#include "izwi/tokenizer/whisper_tokenizer.hpp"

namespace izwi {

/// A backend that can run Whisper: BackendOps plus, for x/cx float pointers,
/// w a weight and n sizes:
///   ops.layer_norm(cx, rows, dim, cx_weight, cx_bias, eps, x)
///   ops.gelu(x, n)                                  erf GELU in place
///   ops.add_bias(x, rows, dim, cx_bias)
///   ops.conv1d(cx, channels, length, time_major, w, kernel, stride, pad, columns, x)
///   ops.split_heads(cx_k, cx_v, n, heads, head_dim, x_k_heads, x_v_heads_t)
///   ops.dense_attention(cx_q, rows, cx_k_heads, cx_v_heads_t, n, heads, head_dim, scores, x)
///   ops.matmuls(cx, m, {{&w1, y1}, {&w2, y2}, ...})  matmul() of up to 3 weights over one x, in one pass
template <class O>
concept WhisperOps = BackendOps<O> && requires(O& ops, const typename O::weight_type& w, const float* cx, float* x,
                                               std::size_t n, float eps, bool flag) {
  ops.layer_norm(cx, n, n, cx, cx, eps, x);
  ops.gelu(x, n);
  ops.add_bias(x, n, n, cx);
  ops.conv1d(cx, n, n, flag, w, n, n, n, x, x);
  ops.split_heads(cx, cx, n, n, n, x, x);
  ops.dense_attention(cx, n, cx, cx, n, n, n, x, x);
  ops.matmuls(cx, n, {{&w, x}, {&w, x}, {&w, x}});
};

struct WhisperConfig {
  std::uint32_t n_mels = 80;
  std::uint32_t n_audio_ctx = 1500;  ///< encoder positions (3000 mel frames / 2)
  std::uint32_t n_text_ctx = 448;    ///< decoder positions
  std::uint32_t d_model = 0;         ///< width of encoder and decoder
  std::uint32_t encoder_layers = 0;
  std::uint32_t encoder_heads = 0;
  std::uint32_t decoder_layers = 0;
  std::uint32_t decoder_heads = 0;
  std::uint32_t ffn_dim = 0;  ///< 4 × d_model in every published model
  std::uint32_t vocab_size = 0;
  float layer_norm_eps = 1e-5f;

  std::uint32_t head_dim() const noexcept { return encoder_heads ? d_model / encoder_heads : 0; }
  bool multilingual() const noexcept { return vocab_size >= 51865; }

  /// A published shape: tiny, base, small, medium, large-v1, large-v2,
  /// large-v3, large-v3-turbo, and tiny.en … medium.en (izwi::invalid_argument otherwise).
  static WhisperConfig preset(std::string_view name);
  /// transformers' WhisperConfig (config.json).
  static WhisperConfig from_hf_config(const std::filesystem::path& config_json);
  /// Throws izwi::invalid_argument naming the field when the shape is not one Whisper can have.
  void validate() const;
};

/// What a Hugging Face generation_config.json adds; for a ggml file, which
/// carries none, openai-whisper's defaults (openai_defaults()).
struct WhisperGenerationConfig {
  /// openai-whisper's decoding defaults for this vocabulary, as the published
  /// generation_config.json files list them: suppress_tokens = the non-speech
  /// symbols (tokenizer::WhisperTokenizer::non_speech_tokens) and the special
  /// tokens <|startoftranscript|>, the tasks, <|startoflm|>, <|startofprev|>
  /// and <|nospeech|>; begin_suppress_tokens = " " and <|endoftext|>. No
  /// alignment heads.
  static WhisperGenerationConfig openai_defaults(const tokenizer::WhisperTokenizer& tokenizer);

  /// Tokens never generated (openai-whisper's non-speech symbols and specials).
  std::vector<TokenId> suppress_tokens;
  /// Tokens never generated first (" " and <|endoftext|>).
  std::vector<TokenId> begin_suppress_tokens;
  /// (decoder layer, head) pairs whose cross-attention aligns text with audio.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> alignment_heads;
};

struct WhisperLoadOptions {
  /// Element type of the decoder's self-attention KV cache (whisper.cpp keeps f16).
  DType kv_cache_dtype = DType::f32;
  /// Load the tokenizer (ggml vocabulary, vocab.json, or `tiktoken_file`).
  bool load_tokenizer = true;
  /// A .tiktoken rank file to use when the checkpoint has no vocabulary.
  std::optional<std::filesystem::path> tiktoken_file;
};

struct WhisperLinear {
  kernels::cpu::WeightMatrix weight;
  std::vector<float> bias;  ///< empty: no bias (attention keys)
};

struct WhisperAttentionWeights {
  WhisperLinear query, key, value, out;
};

struct WhisperLayerWeights {
  WhisperAttentionWeights self_attn;
  std::vector<float> self_attn_ln_w, self_attn_ln_b;
  WhisperAttentionWeights cross_attn;  ///< decoder only
  std::vector<float> cross_attn_ln_w, cross_attn_ln_b;
  WhisperLinear fc1, fc2;
  std::vector<float> mlp_ln_w, mlp_ln_b;
};

namespace detail::whisper {
struct Loader;
/// transformers' name of an OpenAI/ggml Whisper tensor name (the loader's
/// table; izwi-make-random-whisper writes Hugging Face files with it).
std::string hf_tensor_name(std::string_view openai);
}  // namespace detail::whisper

class Whisper {
 public:
  using policy_category = model_family_tag;
  using config_type = WhisperConfig;

  /// A Hugging Face directory or a ggml-whisper .bin file. Errors name the
  /// file, the tensor and the problem.
  static Whisper load(const std::filesystem::path& path, WhisperLoadOptions options = {});

  const WhisperConfig& config() const noexcept { return config_; }
  /// The cache of a request: cross-attention K/V, then the decoder's
  /// self-attention K/V (the same heads and head size).
  KVCacheShape kv_cache_shape() const noexcept {
    return {config_.decoder_layers, config_.decoder_heads, config_.head_dim(), kv_cache_dtype_};
  }
  std::size_t vocab_size() const noexcept { return config_.vocab_size; }
  const tokenizer::WhisperSpecialTokens& special_tokens() const noexcept { return special_; }
  const tokenizer::WhisperTokenizer* tokenizer() const noexcept { return tokenizer_.get(); }
  const WhisperGenerationConfig& generation_config() const noexcept { return generation_; }
  /// The mel filterbank stored in a ggml file ([n_mels][201]); empty for HF directories.
  std::span<const float> mel_filters() const noexcept { return mel_filters_; }
  const std::string& description() const noexcept { return description_; }

  /// Encoder of one window: mel [n_mels][2 × n_audio_ctx] (channel-major, as
  /// WhisperLogMel produces) → out [n_audio_ctx][d_model].
  template <WhisperOps Ops>
  void encode(Ops& ops, const float* mel, float* out) const { encode_batch(ops, mel, 1, out); }
  /// The encoder of `windows` windows at once (several requests' audio in one
  /// step): mels back to back, outputs back to back. Every matrix product runs
  /// over all windows' rows; attention stays within each window.
  template <WhisperOps Ops>
  void encode_batch(Ops& ops, const float* mels, std::size_t windows, float* out) const;

  /// Cache positions a request's audio occupies before its first decoder
  /// token: n_audio_ctx rounded up to a multiple of 64, so that with any
  /// power-of-two block size up to 64 the audio fills whole blocks and a
  /// prefix-cache hit can end exactly where the decoder starts. Positions
  /// from n_audio_ctx on are never written nor read.
  std::size_t audio_positions() const noexcept { return (std::size_t{config_.n_audio_ctx} + 63) / 64 * 64; }
  /// The sequence length a request may reach: the audio, then n_text_ctx decoder tokens.
  std::size_t max_sequence_length() const noexcept { return audio_positions() + config_.n_text_ctx; }

  /// Cross-attention K/V of encoder rows [first_row, first_row + slots.size())
  /// of one window's encoder output ([n_audio_ctx][d_model]), for every
  /// decoder layer, written into the cache at `slots` (negative: skipped).
  template <WhisperOps Ops, KVCachePolicy K>
  void store_cross_kv(Ops& ops, const float* encoder_out, std::size_t first_row, std::span<const std::int64_t> slots,
                      K& kv) const;

  /// One decoder step over the batch: batch.tokens are decoder tokens at
  /// decoder positions batch.positions (< n_text_ctx), their K/V go to
  /// batch.slots. `self` holds each sequence's self-attention (cache
  /// positions; first_visible = audio_positions()), `cross` the same rows'
  /// cross-attention (visible range [0, n_audio_ctx)). Logits of
  /// batch.logit_rows go to `logits` ([rows][vocab]).
  template <WhisperOps Ops, KVCachePolicy K>
  void forward(Ops& ops, const ForwardBatch& batch, std::span<const typename Ops::attention_sequence> self,
               std::span<const typename Ops::attention_sequence> cross, K& kv, float* logits) const;

  /// forward() that also returns what word timestamps need: for every token
  /// of the batch, the cross-attention probabilities of `heads` ((decoder
  /// layer, head) pairs) over the first `audio_frames` encoder positions,
  /// the softmax taken over those positions only (openai-whisper's
  /// find_alignment looks at the audio actually present):
  /// weights [heads.size()][batch tokens][audio_frames]. The decoder pass
  /// itself is forward()'s, through the cache; the alignment heads' keys are
  /// recomputed in f32 from `encoder_out` (the window's encoder output,
  /// [n_audio_ctx][d_model]) because the cache's layout belongs to the
  /// backend and may hold them in f16.
  template <WhisperOps Ops, KVCachePolicy K>
  void alignment_weights(Ops& ops, const ForwardBatch& batch, std::span<const typename Ops::attention_sequence> self,
                         std::span<const typename Ops::attention_sequence> cross, K& kv, const float* encoder_out,
                         std::span<const std::pair<std::uint32_t, std::uint32_t>> heads, std::size_t audio_frames,
                         float* weights, float* logits) const;

 private:
  /// The decoder layers of forward(); `on_cross_query(layer, q)` sees each
  /// layer's cross-attention queries ([tokens][d_model]). Returns the final
  /// hidden rows (an ops buffer, before the last layer norm).
  template <WhisperOps Ops, KVCachePolicy K, class OnCrossQuery>
  const float* decode_layers(Ops& ops, const ForwardBatch& batch,
                             std::span<const typename Ops::attention_sequence> self,
                             std::span<const typename Ops::attention_sequence> cross, K& kv,
                             OnCrossQuery&& on_cross_query) const;
  /// Final layer norm and tied logits of batch.logit_rows of `x`.
  template <WhisperOps Ops>
  void output_logits(Ops& ops, const float* x, std::span<const std::uint32_t> rows, float* logits) const;

  Whisper() = default;
  friend struct detail::whisper::Loader;

  WhisperConfig config_;
  DType kv_cache_dtype_ = DType::f32;
  kernels::cpu::WeightMatrix conv1_, conv2_;
  std::vector<float> conv1_bias_, conv2_bias_, encoder_positions_;
  std::vector<WhisperLayerWeights> encoder_layers_;
  std::vector<float> encoder_ln_w_, encoder_ln_b_;
  kernels::cpu::WeightMatrix token_embedding_;
  std::vector<float> decoder_positions_;
  std::vector<WhisperLayerWeights> decoder_layers_;
  std::vector<float> decoder_ln_w_, decoder_ln_b_;
  std::shared_ptr<const void> weights_owner_;  ///< the aligned copies the matrices point into
  tokenizer::WhisperSpecialTokens special_;
  std::shared_ptr<const tokenizer::WhisperTokenizer> tokenizer_;
  std::vector<float> mel_filters_;
  WhisperGenerationConfig generation_;
  std::string description_;
};

static_assert(ModelFamily<Whisper>, "Whisper must satisfy the ModelFamily concept");

}  // namespace izwi

#include "izwi/models/impl/whisper.hpp"
#include "izwi/models/impl/whisper_config.hpp"
#if !defined(IZWI_SEPARATE_COMPILATION)
#include "izwi/models/impl/whisper_load.ipp"
#endif
