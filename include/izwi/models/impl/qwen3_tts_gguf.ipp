#pragma once
// Qwen3-TTS from llama.cpp's GGUF pair: the talker (arch qwen3tts, the text
// projection folded into token_embd, codec tokens named in the vocabulary)
// and the mmproj (clip: a.gen.code.* code predictor, a.gen.wav.* codec).
// Inline in header-only builds; compiled once, in <izwi/src.hpp>, under
// IZWI_SEPARATE_COMPILATION (see izwi/config.hpp).

#include "izwi/config.hpp"
#include "izwi/models/qwen3_tts.hpp"

#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "izwi/core/error.hpp"
#include "izwi/io/gguf.hpp"
#include "izwi/io/gguf_qwen3.hpp"

namespace izwi::detail {

IZWI_DECL kernels::cpu::WeightMatrix gguf_matrix(const io::GgufFile& f, const std::string& name, std::size_t rows,
                                              std::size_t cols) {
  const io::GgufTensorInfo& info = f.expect_shape(name, {rows, cols});
  const auto bytes = f.bytes(info);
  kernels::cpu::WeightMatrix w{info.dtype(), rows, cols, bytes.data()};
  if (bytes.size() != w.row_bytes() * rows)
    throw error(f.name() + ": tensor '" + name + "' has " + std::to_string(bytes.size()) + " bytes, expected " +
                std::to_string(w.row_bytes() * rows));
  return w;
}

/// A [stack][rows][cols] tensor as one matrix of stack × rows rows.
IZWI_DECL kernels::cpu::WeightMatrix gguf_stacked(const io::GgufFile& f, const std::string& name, std::size_t stack,
                                               std::size_t rows, std::size_t cols) {
  const io::GgufTensorInfo& info = f.expect_shape(name, {stack, rows, cols});
  const auto bytes = f.bytes(info);
  kernels::cpu::WeightMatrix w{info.dtype(), stack * rows, cols, bytes.data()};
  if (bytes.size() != w.row_bytes() * w.rows)
    throw error(f.name() + ": tensor '" + name + "' has " + std::to_string(bytes.size()) + " bytes, expected " +
                std::to_string(w.row_bytes() * w.rows));
  return w;
}

/// Rows [first, first + rows) of a matrix, as a matrix.
IZWI_DECL kernels::cpu::WeightMatrix gguf_rows(const kernels::cpu::WeightMatrix& m, std::size_t first, std::size_t rows) {
  return {m.dtype, rows, m.cols, m.row(first)};
}

IZWI_DECL Qwen3LayerWeights gguf_qwen3_layer(const io::GgufFile& f, const std::string& p, const Qwen3Config& c,
                                          const std::array<const char*, 11>& names) {
  const std::size_t q = std::size_t{c.num_heads} * c.head_dim, kv = std::size_t{c.num_kv_heads} * c.head_dim;
  Qwen3LayerWeights w;
  w.input_norm = f.to_f32(p + names[0] + ".weight", {c.hidden_size});
  w.q_proj = gguf_matrix(f, p + names[1] + ".weight", q, c.hidden_size);
  w.q_norm = f.to_f32(p + names[2] + ".weight", {c.head_dim});
  w.k_proj = gguf_matrix(f, p + names[3] + ".weight", kv, c.hidden_size);
  w.k_norm = f.to_f32(p + names[4] + ".weight", {c.head_dim});
  w.v_proj = gguf_matrix(f, p + names[5] + ".weight", kv, c.hidden_size);
  w.o_proj = gguf_matrix(f, p + names[6] + ".weight", c.hidden_size, q);
  w.post_attention_norm = f.to_f32(p + names[7] + ".weight", {c.hidden_size});
  w.gate_proj = gguf_matrix(f, p + names[8] + ".weight", c.intermediate_size, c.hidden_size);
  w.up_proj = gguf_matrix(f, p + names[9] + ".weight", c.intermediate_size, c.hidden_size);
  w.down_proj = gguf_matrix(f, p + names[10] + ".weight", c.hidden_size, c.intermediate_size);
  return w;
}

inline constexpr std::array<const char*, 11> talker_gguf_names = {
    "attn_norm", "attn_q", "attn_q_norm", "attn_k", "attn_k_norm", "attn_v", "attn_output", "ffn_norm",
    "ffn_gate", "ffn_up", "ffn_down"};
inline constexpr std::array<const char*, 11> predictor_gguf_names = {
    "ln1", "attn_q", "attn_q_norm", "attn_k", "attn_k_norm", "attn_v", "attn_out", "ln2",
    "ffn_gate", "ffn_up", "ffn_down"};

/// Qwen3TtsConfig from the pair: shapes from the keys and tensors, control
/// ids from the codec tokens' names (<|codec_pad|>, <|codec_language_english|>,
/// <|spk_ryan|>), text ids from the text tokens'. Dialects are not in the pair.
IZWI_DECL Qwen3TtsConfig qwen3_tts_config_from_gguf(const io::GgufFile& t, const io::GgufFile& m) {
  if (t.architecture() != "qwen3tts")
    throw io::format_error(t.name(), "", "metadata 'general.architecture': is \"" + t.architecture() + "\", expected \"qwen3tts\"");
  const auto tokens = t.get<std::vector<std::string>>("tokenizer.ggml.tokens");
  auto id_of = [&](std::string_view text) -> TokenId {
    for (std::size_t i = 0; i < tokens.size(); ++i)
      if (tokens[i] == text) return static_cast<TokenId>(i);
    throw io::format_error(t.name(), "", "the vocabulary has no token '" + std::string(text) + "'");
  };
  Qwen3TtsConfig c;
  const std::string a = "qwen3tts.";
  c.talker.hidden_size = t.get<std::uint32_t>(a + "embedding_length");
  c.talker.num_layers = t.get<std::uint32_t>(a + "block_count");
  c.talker.num_heads = t.get<std::uint32_t>(a + "attention.head_count");
  c.talker.num_kv_heads = t.get<std::uint32_t>(a + "attention.head_count_kv");
  c.talker.head_dim = t.get<std::uint32_t>(a + "attention.key_length");
  c.talker.intermediate_size = t.get<std::uint32_t>(a + "feed_forward_length");
  c.talker.rope_theta = t.get<double>(a + "rope.freq_base");
  c.talker.rms_norm_eps = t.get<double>(a + "attention.layer_norm_rms_epsilon");
  c.talker.vocab_size = static_cast<std::uint32_t>(t.tensor("output.weight").shape().at(0));
  for (std::int64_t s : t.get<std::vector<std::int64_t>>(a + "rope.dimension_sections"))
    if (s != 0) c.mrope_section.push_back(static_cast<std::uint32_t>(s));
  const TokenId codec0 = id_of("<|codec_0|>");
  c.text_vocab_size = static_cast<std::uint32_t>(codec0);
  c.text_hidden_size = c.talker.hidden_size;  // folded: text rows are token_embd rows
  for (std::size_t i = static_cast<std::size_t>(codec0); i < tokens.size(); ++i) {
    const std::string& n = tokens[i];
    const TokenId id = static_cast<TokenId>(i) - codec0;
    if (n == "<|codec_pad|>") c.codec_pad_id = id;
    else if (n == "<|codec_bos|>") c.codec_bos_id = id;
    else if (n == "<|codec_eos_token|>") c.codec_eos_id = id;
    else if (n == "<|codec_think|>") c.codec_think_id = id;
    else if (n == "<|codec_nothink|>") c.codec_nothink_id = id;
    else if (n == "<|codec_think_bos|>") c.codec_think_bos_id = id;
    else if (n == "<|codec_think_eos|>") c.codec_think_eos_id = id;
    else if (n.rfind("<|codec_language_", 0) == 0 && n.size() > 19) c.languages[n.substr(17, n.size() - 19)] = id;
    else if (n.rfind("<|spk_", 0) == 0 && n.size() > 8) c.speakers[n.substr(6, n.size() - 8)] = id;
  }
  c.tts_pad_id = id_of("<tts_pad>"), c.tts_bos_id = id_of("<tts_text_bos>"), c.tts_eos_id = id_of("<tts_text_eod>");
  c.im_start_id = id_of("<|im_start|>"), c.im_end_id = id_of("<|im_end|>");
  c.assistant_id = id_of("assistant"), c.user_id = id_of("user"), c.newline_id = id_of("\xC4\x8A");  // "Ċ" = "\n"

  const std::string g = "clip.gen.audio.";
  if (m.get<std::string>(g + "projector_type", "") != "qwen3tts_gen")
    throw io::format_error(m.name(), "", "metadata 'clip.gen.audio.projector_type': not qwen3tts_gen");
  c.predictor.hidden_size = m.get<std::uint32_t>(g + "embedding_length");
  c.predictor.num_layers = m.get<std::uint32_t>(g + "block_count");
  c.predictor.num_heads = m.get<std::uint32_t>(g + "attention.head_count");
  c.predictor.num_kv_heads = m.get<std::uint32_t>(g + "attention.head_count_kv");
  c.predictor.intermediate_size = m.get<std::uint32_t>(g + "feed_forward_length");
  c.predictor.rms_norm_eps = m.get<double>(g + "attention.layer_norm_epsilon");
  c.predictor.rope_theta = 1000000.0;  // llama.cpp fixes it (clip.cpp)
  c.predictor.head_dim = static_cast<std::uint32_t>(m.tensor("a.gen.code.blk.0.attn_q.weight").shape().at(0) /
                                                    std::max<std::uint32_t>(c.predictor.num_heads, 1));
  const auto head = m.tensor("a.gen.code.head.weight").shape();  // [groups - 1][vocab][hidden]
  c.predictor.vocab_size = static_cast<std::uint32_t>(head.at(1));
  c.num_code_groups = static_cast<std::uint32_t>(head.at(0) + 1);
  c.validate();
  return c;
}

}  // namespace izwi::detail

namespace izwi {

IZWI_DECL Qwen3Tts Qwen3Tts::load_gguf(const std::filesystem::path& talker_gguf, const std::filesystem::path& mmproj_gguf,
                                    Qwen3TtsLoadOptions options) {
  struct Pair {
    io::GgufFile talker, mmproj;
  };
  auto files = std::make_shared<Pair>(Pair{io::GgufFile::open(talker_gguf, options.weights_memory),
                                           io::GgufFile::open(mmproj_gguf, options.weights_memory)});
  const io::GgufFile& t = files->talker;
  const io::GgufFile& m = files->mmproj;
  Qwen3Tts model;
  model.config_ = detail::qwen3_tts_config_from_gguf(t, m);
  const Qwen3TtsConfig& c = model.config_;
  const std::size_t h = c.talker.hidden_size, text = c.text_vocab_size, codec = c.talker.vocab_size;
  const auto embd = detail::gguf_matrix(t, "token_embd.weight", text + codec, h);
  model.talker_.folded_text_embedding = detail::gguf_rows(embd, 0, text);
  model.talker_.codec_embedding = detail::gguf_rows(embd, text, codec);
  model.talker_.codec_head = detail::gguf_matrix(t, "output.weight", codec, h);
  model.talker_.final_norm = t.to_f32("output_norm.weight", {h});
  for (std::uint32_t l = 0; l < c.talker.num_layers; ++l)
    model.talker_.layers.push_back(
        detail::gguf_qwen3_layer(t, "blk." + std::to_string(l) + ".", c.talker, detail::talker_gguf_names));

  const std::size_t groups = c.num_code_groups - 1, vocab = c.predictor.vocab_size, ph = c.predictor.hidden_size;
  const auto code_embd = detail::gguf_stacked(m, "a.gen.code.embd.weight", groups, vocab, h);
  const auto code_head = detail::gguf_stacked(m, "a.gen.code.head.weight", groups, vocab, ph);
  for (std::size_t g = 0; g < groups; ++g) {
    model.predictor_.codec_embeddings.push_back(detail::gguf_rows(code_embd, g * vocab, vocab));
    model.predictor_.heads.push_back(detail::gguf_rows(code_head, g * vocab, vocab));
  }
  if (ph != h) {
    model.predictor_.projection = detail::gguf_matrix(m, "a.gen.code.proj_in.weight", ph, h);
    model.predictor_.projection_bias = m.to_f32("a.gen.code.proj_in.bias", {ph});
  }
  model.predictor_.final_norm = m.to_f32("a.gen.code.output_norm.weight", {ph});
  for (std::uint32_t l = 0; l < c.predictor.num_layers; ++l)
    model.predictor_.layers.push_back(detail::gguf_qwen3_layer(m, "a.gen.code.blk." + std::to_string(l) + ".",
                                                               c.predictor, detail::predictor_gguf_names));
  model.codec_ = std::make_shared<const Qwen3TtsCodecDecoder>(
      Qwen3TtsCodecDecoder::load_gguf(mmproj_gguf, options.codec_precision));
  if (m.get<bool>("clip.has_audio_encoder", false)) {
    model.speaker_encoder_ = std::make_shared<const Qwen3TtsSpeakerEncoder>(Qwen3TtsSpeakerEncoder::load_gguf(m));
    if (model.speaker_encoder_->config().enc_dim != h)
      throw io::format_error(m.name(), "mm.a.fc.weight",
                             "the speaker encoder's x-vector is " +
                                 std::to_string(model.speaker_encoder_->config().enc_dim) +
                                 " wide but the talker's hidden size is " + std::to_string(h));
    model.config_.speaker_encoder = model.speaker_encoder_->config();
  }
  if (options.load_tokenizer)
    if (const auto beside = talker_gguf.parent_path() / "tokenizer.json"; std::filesystem::exists(beside))
      model.tokenizer_ = std::make_shared<const tokenizer::BpeTokenizer>(tokenizer::BpeTokenizer::from_file(beside));
  model.description_ = talker_gguf.string() + " + " + mmproj_gguf.string() + " (Qwen3-TTS, GGUF, " +
                       std::string(to_string(model.talker_.codec_head.dtype)) + ")";
  model.weights_owner_ = std::move(files);
  return model;
}

}  // namespace izwi
