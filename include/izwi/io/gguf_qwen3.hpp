#pragma once
// The qwen3 architecture in GGUF, as llama.cpp names it (src/llama-arch.cpp,
// LLM_ARCH_QWEN3): the metadata keys its loader reads, its tensor names, and
// conversions between those and Hugging Face's names and config.json.
//
// Keys (prefix = general.architecture = "qwen3"):
//   qwen3.block_count, qwen3.context_length, qwen3.embedding_length,
//   qwen3.feed_forward_length, qwen3.attention.head_count,
//   qwen3.attention.head_count_kv, qwen3.attention.key_length,
//   qwen3.attention.value_length, qwen3.rope.freq_base,
//   qwen3.rope.dimension_count, qwen3.attention.layer_norm_rms_epsilon
// and the byte-level BPE vocabulary:
//   tokenizer.ggml.model ("gpt2"), tokenizer.ggml.pre ("qwen2"),
//   tokenizer.ggml.tokens, tokenizer.ggml.token_type, tokenizer.ggml.merges,
//   tokenizer.ggml.{bos,eos,padding}_token_id, tokenizer.ggml.add_bos_token,
//   tokenizer.chat_template.
//
// Tensors (HF name -> GGUF name; N = layer):
//   model.embed_tokens.weight                       token_embd.weight
//   model.layers.N.input_layernorm.weight           blk.N.attn_norm.weight
//   model.layers.N.self_attn.{q,k,v}_proj.weight    blk.N.attn_{q,k,v}.weight
//   model.layers.N.self_attn.o_proj.weight          blk.N.attn_output.weight
//   model.layers.N.self_attn.{q,k}_norm.weight      blk.N.attn_{q,k}_norm.weight
//   model.layers.N.post_attention_layernorm.weight  blk.N.ffn_norm.weight
//   model.layers.N.mlp.{gate,up,down}_proj.weight   blk.N.ffn_{gate,up,down}.weight
//   model.norm.weight                               output_norm.weight
//   lm_head.weight                                  output.weight (absent when tied)
// qwen3 weights need no permutation (unlike llama's Q/K): the bytes are the
// same, and ne is the HF shape reversed (see gguf.hpp).

#include <izwi/config.hpp>
#include <izwi/io/config.hpp>
#include <izwi/io/gguf.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace izwi::io {

/// llama.cpp's token types (tokenizer.ggml.token_type).
enum class GgufTokenType : std::int32_t { undefined = 0, normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6 };

/// llama.cpp's general.file_type values for the types izwi writes.
enum class GgufFileType : std::uint32_t { all_f32 = 0, mostly_f16 = 1, mostly_q8_0 = 7, mostly_bf16 = 32 };

/// A byte-level BPE vocabulary as GGUF stores it. `tokens` must cover the
/// embedding's rows: llama.cpp's converter pads a tokenizer shorter than
/// vocab_size with "[PAD<i>]" tokens of type unused; added special tokens are
/// control, other added tokens user_defined, everything else normal.
struct GgufVocabulary {
  std::string model = "gpt2";
  std::string pre = "qwen2";
  std::vector<std::string> tokens;
  std::vector<GgufTokenType> token_types;  ///< one per token
  std::vector<std::string> merges;         ///< "left right", by rank
  std::optional<std::uint32_t> bos_token_id;
  std::optional<std::uint32_t> eos_token_id;
  std::optional<std::uint32_t> padding_token_id;
  bool add_bos_token = false;
  std::string chat_template;  ///< written when non-empty
};

/// Sets general.* , qwen3.* and tokenizer.* metadata on `writer` from a
/// config.json's hyperparameters. izwi::error if token_types and tokens differ
/// in length or the vocabulary is empty.
void add_qwen3_metadata(GgufWriter& writer, const TransformerConfig& config, const GgufVocabulary& vocabulary,
                        GgufFileType file_type, std::string_view model_name = "izwi");

/// The hyperparameters of a qwen3 GGUF file as a TransformerConfig
/// (vocab_size from tokenizer.ggml.tokens or token_embd.weight,
/// tie_word_embeddings when output.weight is absent). format_error naming the
/// key when one is missing or mistyped, or when general.architecture is not "qwen3".
TransformerConfig qwen3_config_from_gguf(const GgufFile& file);

/// The GGUF name of a Hugging Face Qwen3 tensor name; nullopt if it has none.
std::optional<std::string> qwen3_gguf_tensor_name(std::string_view hf_name);
/// The Hugging Face name of a GGUF qwen3 tensor name; nullopt if it has none.
std::optional<std::string> qwen3_hf_tensor_name(std::string_view gguf_name);

}  // namespace izwi::io

#if !defined(IZWI_SEPARATE_COMPILATION)
#include <izwi/io/impl/gguf_qwen3.ipp>
#endif
