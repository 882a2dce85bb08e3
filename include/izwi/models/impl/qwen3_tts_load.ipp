#pragma once
// Loading Qwen3-TTS's talker and code predictor from model.safetensors
// (tensor names as transformers' Qwen3TTSForConditionalGeneration writes them).
// Inline in header-only builds; compiled once, in <izwi/src.hpp>, under
// IZWI_SEPARATE_COMPILATION (see izwi/config.hpp).

#include "izwi/config.hpp"
#include "izwi/models/qwen3_tts.hpp"

#include <array>
#include <cmath>
#include <string>
#include <utility>

#include "izwi/core/error.hpp"
#include "izwi/io/model_directory.hpp"

namespace izwi::detail {

/// Views into a mapped model directory, shapes checked; norms and biases as f32.
class Qwen3TtsWeightReader {
 public:
  explicit Qwen3TtsWeightReader(const io::ModelDirectory& dir) : dir_(&dir) {}

  kernels::cpu::WeightMatrix matrix(const std::string& name, std::size_t rows, std::size_t cols) const {
    const std::array<std::uint64_t, 2> shape{rows, cols};
    const io::TensorInfo& info = dir_->expect_shape(name, shape);
    if (info.dtype != DType::f32 && info.dtype != DType::f16 && info.dtype != DType::bf16)
      throw error(dir_->path().string() + ": tensor '" + name + "' is " + std::string(to_string(info.dtype)) +
                  "; Qwen3-TTS weights must be f32, f16 or bf16");
    const std::span<const std::byte> bytes = dir_->bytes(name);
    kernels::cpu::WeightMatrix w{info.dtype, rows, cols, bytes.data()};
    if (bytes.size() != w.row_bytes() * rows)
      throw error(dir_->path().string() + ": tensor '" + name + "' has " + std::to_string(bytes.size()) +
                  " bytes, expected " + std::to_string(w.row_bytes() * rows));
    return w;
  }

  std::vector<float> vector(const std::string& name, std::size_t n) const {
    std::vector<float> v = dir_->to_f32(name, {n});
    for (std::size_t i = 0; i < v.size(); ++i)
      if (!std::isfinite(v[i]))
        throw error(dir_->path().string() + ": tensor '" + name + "' holds a non-finite value at index " +
                    std::to_string(i) + "; the checkpoint is corrupt");
    return v;
  }

  bool has(const std::string& name) const { return dir_->find(name).has_value(); }

  /// One Qwen3 decoder layer under `prefix` ("talker.model.layers.3.").
  Qwen3LayerWeights layer(const std::string& p, const Qwen3Config& c) const {
    const std::size_t q = std::size_t{c.num_heads} * c.head_dim, kv = std::size_t{c.num_kv_heads} * c.head_dim;
    Qwen3LayerWeights w;
    w.q_proj = matrix(p + "self_attn.q_proj.weight", q, c.hidden_size);
    w.k_proj = matrix(p + "self_attn.k_proj.weight", kv, c.hidden_size);
    w.v_proj = matrix(p + "self_attn.v_proj.weight", kv, c.hidden_size);
    w.o_proj = matrix(p + "self_attn.o_proj.weight", c.hidden_size, q);
    w.gate_proj = matrix(p + "mlp.gate_proj.weight", c.intermediate_size, c.hidden_size);
    w.up_proj = matrix(p + "mlp.up_proj.weight", c.intermediate_size, c.hidden_size);
    w.down_proj = matrix(p + "mlp.down_proj.weight", c.hidden_size, c.intermediate_size);
    w.input_norm = vector(p + "input_layernorm.weight", c.hidden_size);
    w.post_attention_norm = vector(p + "post_attention_layernorm.weight", c.hidden_size);
    w.q_norm = vector(p + "self_attn.q_norm.weight", c.head_dim);
    w.k_norm = vector(p + "self_attn.k_norm.weight", c.head_dim);
    return w;
  }

 private:
  const io::ModelDirectory* dir_;
};

IZWI_DECL Qwen3TtsTalkerWeights load_qwen3_tts_talker(const Qwen3TtsWeightReader& r, const Qwen3TtsConfig& c) {
  const Qwen3Config& t = c.talker;
  Qwen3TtsTalkerWeights w;
  w.text_embedding = r.matrix("talker.model.text_embedding.weight", c.text_vocab_size, c.text_hidden_size);
  w.text_fc1 = r.matrix("talker.text_projection.linear_fc1.weight", c.text_hidden_size, c.text_hidden_size);
  w.text_fc1_bias = r.vector("talker.text_projection.linear_fc1.bias", c.text_hidden_size);
  w.text_fc2 = r.matrix("talker.text_projection.linear_fc2.weight", t.hidden_size, c.text_hidden_size);
  w.text_fc2_bias = r.vector("talker.text_projection.linear_fc2.bias", t.hidden_size);
  w.codec_embedding = r.matrix("talker.model.codec_embedding.weight", t.vocab_size, t.hidden_size);
  w.codec_head = r.matrix("talker.codec_head.weight", t.vocab_size, t.hidden_size);
  w.final_norm = r.vector("talker.model.norm.weight", t.hidden_size);
  for (std::uint32_t l = 0; l < t.num_layers; ++l)
    w.layers.push_back(r.layer("talker.model.layers." + std::to_string(l) + ".", t));
  return w;
}

IZWI_DECL Qwen3TtsPredictorWeights load_qwen3_tts_predictor(const Qwen3TtsWeightReader& r, const Qwen3TtsConfig& c) {
  const Qwen3Config& p = c.predictor;
  const std::string prefix = "talker.code_predictor.";
  Qwen3TtsPredictorWeights w;
  for (std::uint32_t g = 0; g + 1 < c.num_code_groups; ++g) {
    w.codec_embeddings.push_back(r.matrix(prefix + "model.codec_embedding." + std::to_string(g) + ".weight",
                                          p.vocab_size, c.talker.hidden_size));
    w.heads.push_back(r.matrix(prefix + "lm_head." + std::to_string(g) + ".weight", p.vocab_size, p.hidden_size));
  }
  if (p.hidden_size != c.talker.hidden_size) {
    w.projection = r.matrix(prefix + "small_to_mtp_projection.weight", p.hidden_size, c.talker.hidden_size);
    w.projection_bias = r.vector(prefix + "small_to_mtp_projection.bias", p.hidden_size);
  }
  w.final_norm = r.vector(prefix + "model.norm.weight", p.hidden_size);
  for (std::uint32_t l = 0; l < p.num_layers; ++l)
    w.layers.push_back(r.layer(prefix + "model.layers." + std::to_string(l) + ".", p));
  return w;
}

}  // namespace izwi::detail

namespace izwi {

IZWI_DECL Qwen3Tts Qwen3Tts::load(const std::filesystem::path& dir, Qwen3TtsLoadOptions options) {
  if (!std::filesystem::is_directory(dir))
    throw invalid_argument("model", dir.string() + " is not a Qwen3-TTS model directory");
  if (!std::filesystem::is_directory(dir / "speech_tokenizer"))
    throw error(dir.string() + ": no speech_tokenizer/ directory (the codec decoder's config.json and "
                               "model.safetensors); a Qwen3-TTS checkpoint ships one");
  auto directory = std::make_shared<io::ModelDirectory>(io::ModelDirectory::open(dir, options.weights_memory));
  Qwen3Tts model;
  model.config_ = Qwen3TtsConfig::from(directory->config());
  const detail::Qwen3TtsWeightReader reader(*directory);
  model.talker_ = detail::load_qwen3_tts_talker(reader, model.config_);
  model.predictor_ = detail::load_qwen3_tts_predictor(reader, model.config_);
  if (model.config_.speaker_encoder)
    model.speaker_encoder_ = std::make_shared<const Qwen3TtsSpeakerEncoder>(
        Qwen3TtsSpeakerEncoder::load(*directory, *model.config_.speaker_encoder));
  model.codec_ = std::make_shared<const Qwen3TtsCodecDecoder>(
      Qwen3TtsCodecDecoder::load(dir / "speech_tokenizer", options.codec_precision));
  if (model.config_.speaker_encoder) {
    // Base models clone in context too: the speech tokenizer's encoder gives
    // the reference codes. Checkpoints without encoder_config clone by x-vector only.
    const std::filesystem::path st = dir / "speech_tokenizer";
    const io::JsonValue doc = io::read_json_file(st / "config.json");
    if (Qwen3TtsSpeechEncoderConfig::has_encoder(io::ConfigView(doc, (st / "config.json").string())))
      model.speech_encoder_ = std::make_shared<const Qwen3TtsSpeechEncoder>(Qwen3TtsSpeechEncoder::load(st));
  }
  const Qwen3TtsCodecConfig& codec = model.codec_->config();
  if (codec.num_quantizers != model.config_.num_code_groups)
    throw error(dir.string() + ": speech_tokenizer/config.json has " + std::to_string(codec.num_quantizers) +
                " quantizers but config.json " + std::to_string(model.config_.num_code_groups) + " code groups");
  if (model.speech_encoder_ && (model.speech_encoder_->config().valid_quantizers != model.config_.num_code_groups ||
                                model.speech_encoder_->config().codebook_size != codec.codebook_size))
    throw error(dir.string() + ": speech_tokenizer/config.json's encoder gives " +
                std::to_string(model.speech_encoder_->config().valid_quantizers) + " codes of " +
                std::to_string(model.speech_encoder_->config().codebook_size) + " per frame; the talker needs " +
                std::to_string(model.config_.num_code_groups) + " of " + std::to_string(codec.codebook_size));
  if (codec.codebook_size != model.config_.predictor.vocab_size)
    throw error(dir.string() + ": the codec's codebooks hold " + std::to_string(codec.codebook_size) +
                " codes but the code predictor's vocabulary is " + std::to_string(model.config_.predictor.vocab_size));
  if (options.load_tokenizer)
    if (const auto tokenizer_json = directory->tokenizer_json_path())
      model.tokenizer_ =
          std::make_shared<const tokenizer::BpeTokenizer>(tokenizer::BpeTokenizer::from_file(*tokenizer_json));
  model.description_ = dir.string() + " (Qwen3-TTS " + model.config_.model_type + ", safetensors, " +
                       std::string(to_string(model.talker_.codec_head.dtype)) + ")";
  model.weights_owner_ = std::move(directory);
  return model;
}

}  // namespace izwi
