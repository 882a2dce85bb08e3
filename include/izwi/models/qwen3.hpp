#pragma once
// Qwen3: the decoder-only transformer of Qwen3 chat models and the backbone of
// Qwen3-TTS's talker and code predictor.
//
//   x = embed(tokens)
//   per layer:  h = RMSNorm(x)
//               q, k, v = h·Wqᵀ, h·Wkᵀ, h·Wvᵀ
//               q, k = RMSNorm per head (q_norm, k_norm), then NeoX RoPE
//               K/V of every token → its cache slot; paged causal attention (GQA)
//               x += attn·Woᵀ
//               h = RMSNorm(x);  x += (silu(h·Wgᵀ) ⊙ h·Wuᵀ)·Wdᵀ
//   logits = RMSNorm(x)·Wlmᵀ   (lm_head, or the embedding when tied), only
//            for the rows that sample
//
// head_dim is read from config.json, not derived from hidden / heads (Qwen3
// sets it to 128 for every size). Weights load from a Hugging Face directory
// (config.json + safetensors, sharded or not) or from a GGUF file; either way
// the model keeps the mapped file and points into it, so loading copies only
// the small norm vectors.
//
// The model is written against a backend's operations (the BackendOps concept,
// include/izwi/concepts/backend_ops.hpp):
// the CPU executor passes its kernels, a GPU executor would pass its own.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "izwi/concepts/backend_ops.hpp"
#include "izwi/concepts/kv_cache.hpp"
#include "izwi/config.hpp"
#include "izwi/concepts/model_family.hpp"
#include "izwi/concepts/tags.hpp"
#include "izwi/core/dtype.hpp"
#include "izwi/core/ids.hpp"
#include "izwi/core/kv_cache_shape.hpp"
#include "izwi/io/config.hpp"
#include "izwi/io/file_memory.hpp"
#include "izwi/kernels/cpu/matmul.hpp"
#include "izwi/models/forward_batch.hpp"
#include "izwi/tokenizer/bpe_tokenizer.hpp"
#include "izwi/tokenizer/detokenizer.hpp"  // make_model_detokenizer, for CpuExecutor<Qwen3>

namespace izwi {

struct Qwen3Config {
  std::uint32_t hidden_size = 0;
  std::uint32_t num_layers = 0;
  std::uint32_t num_heads = 0;
  std::uint32_t num_kv_heads = 0;
  std::uint32_t head_dim = 0;
  std::uint32_t intermediate_size = 0;
  std::uint32_t vocab_size = 0;
  /// 0 when the checkpoint does not say.
  std::uint32_t max_position_embeddings = 0;
  double rope_theta = 1000000.0;
  double rms_norm_eps = 1e-6;
  bool tie_word_embeddings = false;
  std::vector<TokenId> eos_token_ids;

  /// From config.json's hyperparameters; izwi::invalid_argument naming the
  /// key when the model is not one Qwen3 can run (rope scaling, sliding
  /// window, attention bias, another activation).
  static Qwen3Config from(const io::TransformerConfig& config);
};

/// Where the weights and the KV cache's numbers live.
struct Qwen3LoadOptions {
  /// Element type of the KV cache this model asks for (f32 for bit-exact
  /// comparisons, f16 to halve cache memory as llama.cpp does by default).
  DType kv_cache_dtype = DType::f32;
  /// Load tokenizer.json when the directory has one.
  bool load_tokenizer = true;
  /// The checkpoint read into huge-page memory (decode streams every weight
  /// once per token: ~15% faster than from a mapping), or mapped (shared
  /// page cache, no private copy; izwi-server --mmap). See io/file_memory.hpp.
  io::FileMemory weights_memory = io::FileMemory::read;
  /// With a mapped checkpoint (FileMemory::map), read every weight page once
  /// while loading, so that the first request does not pay for page faults on
  /// a cold mapping (and a progress bar means something).
  bool prefault_weights = true;
  /// Called after each layer with (bytes loaded, total bytes). Loading is not
  /// the hot path, so a std::function is fine here.
  std::function<void(std::size_t, std::size_t)> on_progress;
};

/// One layer's weights: views into the checkpoint's bytes (read or mapped), norms as f32.
struct Qwen3LayerWeights {
  kernels::cpu::WeightMatrix q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj;
  std::vector<float> input_norm, post_attention_norm, q_norm, k_norm;
};

class Qwen3 {
 public:
  using policy_category = model_family_tag;
  using config_type = Qwen3Config;

  /// Loads a Hugging Face model directory or a .gguf file. Errors name the
  /// file, the tensor and the problem (missing tensor, wrong shape,
  /// unsupported dtype); nothing is read out of bounds.
  static Qwen3 load(const std::filesystem::path& path, Qwen3LoadOptions options = {});

  const Qwen3Config& config() const noexcept { return config_; }
  KVCacheShape kv_cache_shape() const noexcept {
    return {config_.num_layers, config_.num_kv_heads, config_.head_dim, kv_cache_dtype_};
  }
  std::size_t vocab_size() const noexcept { return config_.vocab_size; }
  std::span<const TokenId> eos_token_ids() const noexcept { return config_.eos_token_ids; }
  /// The checkpoint's tokenizer, when it has one.
  const tokenizer::BpeTokenizer* tokenizer() const noexcept { return tokenizer_.get(); }
  /// Where the weights came from, for logs ("…/model.gguf (Q8_0)").
  const std::string& description() const noexcept { return description_; }
  std::span<const Qwen3LayerWeights> layers() const noexcept { return layers_; }

  /// Computes one step: writes K/V of every token of `batch` into `kv` and
  /// the logits of batch.logit_rows into `logits` ([rows][vocab]).
  /// `ops` supplies the kernels and scratch memory (BackendOps).
  template <BackendOps Ops, KVCachePolicy K>
  void forward(Ops& ops, const ForwardBatch& batch, std::span<const typename Ops::attention_sequence> sequences,
               K& kv, float* logits) const;

 private:
  Qwen3() = default;
  static Qwen3 from_directory(const std::filesystem::path& dir, const Qwen3LoadOptions& options);
  static Qwen3 from_gguf(const std::filesystem::path& file, const Qwen3LoadOptions& options);

  Qwen3Config config_;
  DType kv_cache_dtype_ = DType::f32;
  kernels::cpu::WeightMatrix embed_tokens_;
  kernels::cpu::WeightMatrix lm_head_;
  std::vector<float> final_norm_;
  std::vector<Qwen3LayerWeights> layers_;
  std::shared_ptr<const void> weights_owner_;  // the mapped checkpoint the views point into
  std::shared_ptr<const tokenizer::BpeTokenizer> tokenizer_;
  std::string description_;
};

static_assert(ModelFamily<Qwen3>, "Qwen3 must satisfy the ModelFamily concept");

}  // namespace izwi

#include "izwi/models/impl/qwen3.hpp"
#if !defined(IZWI_SEPARATE_COMPILATION)
#include "izwi/models/impl/qwen3_load.ipp"
#endif
