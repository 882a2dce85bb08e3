// izwi-qwen3-tts-to-gguf: writes a Hugging Face Qwen3-TTS directory as the
// GGUF pair llama.cpp's llama-tts reads (its converter's layout, read from
// conversion/qwen3tts.py and tools/mtmd/clip.cpp of the llama.cpp source
// node-llama-cpp ships):
//
//   talker.gguf   arch qwen3tts: vocabulary [text tokens | 3072 codec tokens],
//                 token_embd = [text_projection applied to every text row |
//                 codec_embedding], output = codec_head, Qwen3 blocks
//   mmproj.gguf   clip: the code predictor (a.gen.code.*), the codec decoder
//                 (a.gen.wav.*, codebooks dequantised, SnakeBeta folded, conv
//                 kernels F16 as llama.cpp's converter forces them), and the
//                 ECAPA speaker encoder (a.*, mm.a.fc): a Base checkpoint's
//                 own speaker_encoder.*, otherwise a random one, which mtmd
//                 requires even when no speaker file is given
//
//   izwi-qwen3-tts-to-gguf DIR --talker talker.gguf --mmproj mmproj.gguf [--type f32|f16|q8_0]
//       [--ecapa-channels 64] [--seed 1]
//   izwi-qwen3-tts-to-gguf --help
//
// --type sets the talker's and code predictor's matrices (for speed
// comparisons); the codec decoder keeps llama.cpp's converter's types, the
// speaker encoder stays f32. --ecapa-channels and --seed shape the random
// speaker encoder of a checkpoint without one.
//
// For tests: izwi reads DIR, llama.cpp reads the GGUF pair, and both hold the
// same arrays (up to the F16 conv kernels and the folded text projection,
// computed here in f32).
//
// Exit status: 0 after writing both files or --help, 2 for bad arguments, 1
// when DIR cannot be read or a file cannot be written.

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "izwi/io/gguf.hpp"
#include "izwi/io/gguf_qwen3.hpp"
#include "izwi/io/json.hpp"
#include "izwi/io/model_directory.hpp"
#include "izwi/kernels/cpu/kernels.hpp"
#include "izwi/kernels/cpu/thread_pool.hpp"
#include "izwi/models/qwen3_tts_config.hpp"

#include "command_line.hpp"

namespace fs = std::filesystem;
namespace po = boost::program_options;
namespace cli = izwi::command_line;
using namespace izwi;

namespace {

constexpr cli::Program program{"izwi-qwen3-tts-to-gguf",
                               "izwi-qwen3-tts-to-gguf DIR --talker talker.gguf --mmproj mmproj.gguf [options]",
                               "writes a Qwen3-TTS directory as llama.cpp's GGUF pair"};

/// Type of the talker's and the code predictor's matrices (--type); norms stay f32.
io::GgmlType matrix_type = io::GgmlType::f32;

bool is_matrix(const std::vector<std::uint64_t>& shape) { return shape.size() >= 2; }

/// `type` for a tensor whose rows hold `row_values` values: Q8_0 needs whole
/// blocks of 32, so rows that are not (the small test shape's predictor,
/// 48 wide) stay f32, as llama.cpp's quantizer falls back for such tensors.
io::GgmlType storable(io::GgmlType type, std::uint64_t row_values) {
  return type == io::GgmlType::q8_0 && row_values % 32 != 0 ? io::GgmlType::f32 : type;
}

struct Source {
  io::ModelDirectory dir;
  std::vector<float> get(const std::string& name) const { return dir.to_f32(name); }
  std::vector<std::uint64_t> shape(const std::string& name) const {
    const auto loc = dir.at(name);
    return loc.info->shape;
  }
};

void add(io::GgufWriter& w, const std::string& name, const Source& s, const std::string& hf,
         io::GgmlType type = io::GgmlType::f32) {
  const std::vector<float> v = s.get(hf);
  std::vector<std::uint64_t> shape = s.shape(hf);
  w.add_tensor(name, storable(type, shape.back()), shape, v);
}

/// tokenizer.json's tokens padded to `text_vocab`, then the codec tokens
/// named as llama.cpp's converter names them (<|codec_i|>, overridden by
/// every *_id key of talker_config).
io::GgufVocabulary vocabulary(const io::JsonValue& tokenizer, const io::JsonValue& talker, std::size_t text_vocab,
                              std::size_t codec_vocab) {
  io::GgufVocabulary v;
  std::vector<std::string> tokens(text_vocab);
  std::vector<io::GgufTokenType> types(text_vocab, io::GgufTokenType::unused);
  const io::JsonValue& model = *io::json_find(tokenizer, "model");
  for (const auto& [token, id] : io::json_find(model, "vocab")->as_object())
    if (static_cast<std::size_t>(id.as_int64()) < text_vocab) {
      tokens[id.as_int64()] = std::string(token);
      types[id.as_int64()] = io::GgufTokenType::normal;
    }
  if (const io::JsonValue* added = io::json_find(tokenizer, "added_tokens"))
    for (const io::JsonValue& t : added->as_array()) {
      const auto i = static_cast<std::size_t>(io::json_find(t, "id")->as_int64());
      if (i >= text_vocab) continue;
      tokens[i] = std::string(*io::json_string(*io::json_find(t, "content")));
      const io::JsonValue* special = io::json_find(t, "special");
      types[i] = special && special->as_bool() ? io::GgufTokenType::control : io::GgufTokenType::user_defined;
    }
  // Qwen3-TTS's own text specials (config.json's tts_*_token_id), which llama.cpp finds by name.
  const std::pair<std::size_t, const char*> tts[] = {{151671, "<tts_pad>"}, {151672, "<tts_text_bos>"}, {151673, "<tts_text_eod>"}};
  for (const auto& [id, name] : tts) tokens[id] = name, types[id] = io::GgufTokenType::control;
  for (std::size_t i = 0; i < text_vocab; ++i)
    if (tokens[i].empty()) tokens[i] = "[PAD" + std::to_string(i) + "]";
  std::vector<std::string> codec(codec_vocab);
  for (std::size_t i = 0; i < codec_vocab; ++i) codec[i] = "<|codec_" + std::to_string(i) + "|>";
  for (const auto& [key, value] : talker.as_object()) {
    const std::string k(key);
    if (k.size() < 3 || k.substr(k.size() - 3) != "_id") continue;
    const std::string prefix = k.substr(0, k.size() - 3);
    if (const auto id = io::json_integer(value)) {
      if (*id >= 0 && static_cast<std::size_t>(*id) < codec_vocab) codec[*id] = "<|" + prefix + "|>";
    } else if (value.is_object()) {
      for (const auto& [sub, sub_value] : value.as_object())
        if (const auto id = io::json_integer(sub_value); id && *id >= 0 && static_cast<std::size_t>(*id) < codec_vocab)
          codec[*id] = "<|" + prefix + "_" + std::string(sub) + "|>";
    }
  }
  for (auto& t : codec) tokens.push_back(t), types.push_back(io::GgufTokenType::control);
  for (const io::JsonValue& merge : io::json_find(model, "merges")->as_array()) {
    if (merge.is_string()) {
      v.merges.emplace_back(*io::json_string(merge));
    } else {
      const auto& pair = merge.as_array();
      v.merges.push_back(std::string(*io::json_string(pair.at(0))) + " " + std::string(*io::json_string(pair.at(1))));
    }
  }
  v.tokens = std::move(tokens);
  v.token_types = std::move(types);
  return v;
}

/// text_projection(text_embedding) for every text row, then codec_embedding: [text_vocab + codec_vocab][hidden].
std::vector<float> folded_embeddings(const Source& s, const Qwen3TtsConfig& c) {
  const std::size_t th = c.text_hidden_size, h = c.talker.hidden_size, n = c.text_vocab_size;
  const std::vector<float> e = s.get("talker.model.text_embedding.weight");
  std::vector<float> w1 = s.get("talker.text_projection.linear_fc1.weight"), b1 = s.get("talker.text_projection.linear_fc1.bias");
  std::vector<float> w2 = s.get("talker.text_projection.linear_fc2.weight"), b2 = s.get("talker.text_projection.linear_fc2.bias");
  const std::vector<float> codec = s.get("talker.model.codec_embedding.weight");
  const kernels::cpu::WeightMatrix fc1{DType::f32, th, th, w1.data()}, fc2{DType::f32, h, th, w2.data()};
  detail::ThreadPool pool(0);
  std::vector<float> out(n * h + codec.size()), mid;
  constexpr std::size_t chunk = 1024;
  for (std::size_t r = 0; r < n; r += chunk) {
    const std::size_t m = std::min(chunk, n - r);
    mid.resize(m * th);
    kernels::cpu::matmul(e.data() + r * th, m, th, fc1, mid.data(), pool);
    for (std::size_t i = 0; i < m * th; ++i) {
      const float v = mid[i] + b1[i % th];
      mid[i] = v / (1.0f + std::exp(-v));
    }
    float* o = out.data() + r * h;
    kernels::cpu::matmul(mid.data(), m, th, fc2, o, pool);
    for (std::size_t i = 0; i < m * h; ++i) o[i] += b2[i % h];
  }
  std::copy(codec.begin(), codec.end(), out.begin() + static_cast<std::ptrdiff_t>(n * h));
  return out;
}

void write_talker(const Source& s, const io::JsonValue& config, const io::JsonValue& tokenizer,
                  const Qwen3TtsConfig& c, const fs::path& out) {
  io::GgufWriter w;
  const Qwen3Config& t = c.talker;
  const std::string a = "qwen3tts.";
  w.set("general.architecture", io::GgufValue::string("qwen3tts"));
  w.set("general.name", io::GgufValue::string("izwi-random-qwen3-tts"));
  w.set("general.file_type", io::GgufValue::u32(0));
  w.set(a + "block_count", io::GgufValue::u32(t.num_layers));
  w.set(a + "context_length", io::GgufValue::u32(32768));
  w.set(a + "embedding_length", io::GgufValue::u32(t.hidden_size));
  w.set(a + "feed_forward_length", io::GgufValue::u32(t.intermediate_size));
  w.set(a + "attention.head_count", io::GgufValue::u32(t.num_heads));
  w.set(a + "attention.head_count_kv", io::GgufValue::u32(t.num_kv_heads));
  w.set(a + "attention.key_length", io::GgufValue::u32(t.head_dim));
  w.set(a + "attention.value_length", io::GgufValue::u32(t.head_dim));
  w.set(a + "rope.freq_base", io::GgufValue::f32(static_cast<float>(t.rope_theta)));
  std::vector<std::int64_t> sections(c.mrope_section.begin(), c.mrope_section.end());
  sections.resize(4, 0);
  w.set(a + "rope.dimension_sections", io::GgufValue::integers(io::GgufValueType::int32, sections));
  w.set(a + "attention.layer_norm_rms_epsilon", io::GgufValue::f32(static_cast<float>(t.rms_norm_eps)));
  const io::JsonValue& talker_json = *io::json_find(config, "talker_config");
  const io::GgufVocabulary v = vocabulary(tokenizer, talker_json, c.text_vocab_size, t.vocab_size);
  w.set("tokenizer.ggml.model", io::GgufValue::string("gpt2"));
  w.set("tokenizer.ggml.pre", io::GgufValue::string("qwen2"));
  w.set("tokenizer.ggml.tokens", io::GgufValue::strings(v.tokens));
  std::vector<std::int64_t> types;
  for (auto type : v.token_types) types.push_back(static_cast<std::int64_t>(type));
  w.set("tokenizer.ggml.token_type", io::GgufValue::integers(io::GgufValueType::int32, std::move(types)));
  w.set("tokenizer.ggml.merges", io::GgufValue::strings(v.merges));
  const std::int64_t total = static_cast<std::int64_t>(c.text_vocab_size) + t.vocab_size;
  const std::int64_t eos = static_cast<std::int64_t>(c.text_vocab_size) + c.codec_eos_id;
  w.set("tokenizer.ggml.eos_token_id", io::GgufValue::u32(static_cast<std::uint32_t>(eos)));
  w.set("tokenizer.ggml.add_eos_token", io::GgufValue::boolean(false));
  w.set("tokenizer.ggml.add_bos_token", io::GgufValue::boolean(false));
  std::vector<std::int64_t> suppress;
  for (std::int64_t i = total - 1024; i < total; ++i)
    if (i != eos) suppress.push_back(i);
  w.set("tokenizer.ggml.suppress_tokens", io::GgufValue::integers(io::GgufValueType::int32, std::move(suppress)));

  const std::vector<float> embd = folded_embeddings(s, c);
  w.add_tensor("token_embd.weight", storable(matrix_type, t.hidden_size), {static_cast<std::uint64_t>(total), t.hidden_size},
               embd);
  add(w, "output.weight", s, "talker.codec_head.weight", matrix_type);
  add(w, "output_norm.weight", s, "talker.model.norm.weight");
  for (const std::string& name : s.dir.tensor_names()) {
    const std::string prefix = "talker.model.layers.";
    if (name.rfind(prefix, 0) != 0) continue;
    const auto gguf = io::qwen3_gguf_tensor_name(name.substr(std::string("talker.").size()));
    if (!gguf) throw std::runtime_error("no GGUF name for " + name);
    add(w, *gguf, s, name, is_matrix(s.shape(name)) ? matrix_type : io::GgmlType::f32);
  }
  w.write(out);
}

/// A random ECAPA-TDNN in llama.cpp's layout: unused unless a speaker file is
/// given, but mtmd refuses an mmproj without an audio encoder.
void add_random_ecapa(io::GgufWriter& w, std::uint64_t channels, std::uint64_t out_dim, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto random = [&](const std::string& name, std::vector<std::uint64_t> shape, std::uint64_t fan_in) {
    std::size_t n = 1;
    for (auto d : shape) n *= d;
    std::normal_distribution<float> dist(0.0f, 1.0f / std::sqrt(static_cast<float>(fan_in)));
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    w.add_tensor(name + ".weight", io::GgmlType::f32, shape, v);
    std::vector<float> b(shape[0], 0.0f);
    w.add_tensor(name + ".bias", io::GgmlType::f32, {shape[0]}, b);
  };
  const std::uint64_t c = channels, se = 128 * channels / 512, att = 128 * channels / 512, sub = c / 8;
  random("a.conv1d.0", {c, 128, 5}, 128 * 5);
  for (int b = 1; b <= 3; ++b) {
    const std::string p = "a.blk." + std::to_string(b) + ".";
    random(p + "conv_pw1", {c, c, 1}, c);
    for (int x = 0; x < 7; ++x) random(p + "res2." + std::to_string(x), {sub, sub, 3}, sub * 3);
    random(p + "conv_pw2", {c, c, 1}, c);
    random(p + "se_conv1", {se, c, 1}, c);
    random(p + "se_conv2", {c, se, 1}, se);
  }
  random("a.conv_out", {3 * c, 3 * c, 1}, 3 * c);
  random("a.asp_tdnn", {att, 9 * c, 1}, 9 * c);
  random("a.asp_attn", {3 * c, att, 1}, att);
  random("mm.a.fc", {out_dim, 6 * c, 1}, 6 * c);
}

/// A Base checkpoint's speaker_encoder.* under llama.cpp's names (its
/// converter's map: gguf-py tensor_mapping and conversion/qwen3tts.py), f32.
/// Returns the ECAPA channel count.
std::uint64_t add_speaker_encoder(io::GgufWriter& w, const Source& s, const Qwen3TtsSpeakerEncoderConfig& e) {
  if (e.num_blocks() != 3 || e.enc_res2net_scale != 8)
    throw std::runtime_error("llama.cpp's speaker encoder has 3 SE-Res2Net blocks of Res2Net scale 8; this one has " +
                             std::to_string(e.num_blocks()) + " of scale " + std::to_string(e.enc_res2net_scale));
  auto conv = [&](const std::string& gguf, const std::string& hf) {
    add(w, gguf + ".weight", s, "speaker_encoder." + hf + ".weight");
    add(w, gguf + ".bias", s, "speaker_encoder." + hf + ".bias");
  };
  conv("a.conv1d.0", "blocks.0.conv");
  for (int b = 1; b <= 3; ++b) {
    const std::string g = "a.blk." + std::to_string(b) + ".", h = "blocks." + std::to_string(b) + ".";
    conv(g + "conv_pw1", h + "tdnn1.conv");
    for (int x = 0; x < 7; ++x) conv(g + "res2." + std::to_string(x), h + "res2net_block.blocks." + std::to_string(x) + ".conv");
    conv(g + "conv_pw2", h + "tdnn2.conv");
    conv(g + "se_conv1", h + "se_block.conv1");
    conv(g + "se_conv2", h + "se_block.conv2");
  }
  conv("a.conv_out", "mfa.conv");
  conv("a.asp_tdnn", "asp.tdnn.conv");
  conv("a.asp_attn", "asp.conv");
  conv("mm.a.fc", "fc");
  return e.enc_channels.front();
}

void write_code_predictor(io::GgufWriter& w, const Source& s, const Qwen3TtsConfig& c) {
  const std::string p = "talker.code_predictor.";
  std::vector<float> embd, head;
  for (std::uint32_t g = 0; g + 1 < c.num_code_groups; ++g) {
    const auto e = s.get(p + "model.codec_embedding." + std::to_string(g) + ".weight");
    const auto h = s.get(p + "lm_head." + std::to_string(g) + ".weight");
    embd.insert(embd.end(), e.begin(), e.end());
    head.insert(head.end(), h.begin(), h.end());
  }
  const std::uint64_t groups = c.num_code_groups - 1, vocab = c.predictor.vocab_size;
  w.add_tensor("a.gen.code.embd.weight", storable(matrix_type, c.talker.hidden_size), {groups, vocab, c.talker.hidden_size},
               embd);
  w.add_tensor("a.gen.code.head.weight", storable(matrix_type, c.predictor.hidden_size),
               {groups, vocab, c.predictor.hidden_size}, head);
  add(w, "a.gen.code.out_embd.weight", s, "talker.model.codec_embedding.weight");
  add(w, "a.gen.code.output_norm.weight", s, p + "model.norm.weight");
  if (s.dir.find(p + "small_to_mtp_projection.weight")) {
    add(w, "a.gen.code.proj_in.weight", s, p + "small_to_mtp_projection.weight");
    add(w, "a.gen.code.proj_in.bias", s, p + "small_to_mtp_projection.bias");
  }
  const std::pair<const char*, const char*> names[] = {
      {"input_layernorm", "ln1"},         {"self_attn.q_proj", "attn_q"},   {"self_attn.q_norm", "attn_q_norm"},
      {"self_attn.k_proj", "attn_k"},     {"self_attn.k_norm", "attn_k_norm"}, {"self_attn.v_proj", "attn_v"},
      {"self_attn.o_proj", "attn_out"},   {"post_attention_layernorm", "ln2"}, {"mlp.gate_proj", "ffn_gate"},
      {"mlp.up_proj", "ffn_up"},          {"mlp.down_proj", "ffn_down"}};
  for (std::uint32_t l = 0; l < c.predictor.num_layers; ++l)
    for (const auto& [hf, gguf] : names) {
      const std::string name = p + "model.layers." + std::to_string(l) + "." + hf + ".weight";
      // ffn_down stays f32, as llama.cpp's converter keeps it (its activations exceed the f16 range).
      const bool matrix = is_matrix(s.shape(name)) && std::string(gguf) != "ffn_down";
      add(w, "a.gen.code.blk." + std::to_string(l) + "." + gguf + ".weight", s, name,
          matrix ? matrix_type : io::GgmlType::f32);
    }
}

void add_snake(io::GgufWriter& w, const std::string& name, const Source& s, const std::string& hf) {
  std::vector<float> alpha = s.get(hf + ".alpha"), beta = s.get(hf + ".beta");
  for (float& x : alpha) x = std::exp(x);
  for (float& x : beta) x = 1.0f / (std::exp(x) + 1e-9f);
  w.add_tensor(name + ".alpha", io::GgmlType::f32, {alpha.size()}, alpha);
  w.add_tensor(name + ".beta", io::GgmlType::f32, {beta.size()}, beta);
}

void add_conv(io::GgufWriter& w, const std::string& name, const Source& s, const std::string& hf, io::GgmlType type) {
  add(w, name + ".weight", s, hf + ".weight", type);
  add(w, name + ".bias", s, hf + ".bias");
}

std::vector<float> codebook(const Source& s, const std::string& prefix) {
  const auto sum = s.get(prefix + "._codebook.embedding_sum"), usage = s.get(prefix + "._codebook.cluster_usage");
  std::vector<float> out(sum.size());
  const std::size_t dim = sum.size() / usage.size();
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = sum[i] / std::max(usage[i / dim], 1e-5f);
  return out;
}

/// The codec's split residual quantizer: its 1x1 projections as matrices and
/// its codebooks dequantised, all f32.
void write_codec_quantizer(io::GgufWriter& w, const Source& s, const Qwen3TtsCodecConfig& c) {
  const io::GgmlType f32 = io::GgmlType::f32;
  const std::uint64_t half = c.codebook_dim / 2;
  const auto squeeze = [&](const std::string& name, const std::string& hf) {
    const auto v = s.get(hf);
    const auto shape = s.shape(hf);
    w.add_tensor(name, f32, {shape[0], shape[1]}, v);
  };
  squeeze("a.gen.wav.quant.first.in_proj.weight", "decoder.quantizer.rvq_first.input_proj.weight");
  squeeze("a.gen.wav.quant.first.out_proj.weight", "decoder.quantizer.rvq_first.output_proj.weight");
  squeeze("a.gen.wav.quant.rest.in_proj.weight", "decoder.quantizer.rvq_rest.input_proj.weight");
  squeeze("a.gen.wav.quant.rest.out_proj.weight", "decoder.quantizer.rvq_rest.output_proj.weight");
  w.add_tensor("a.gen.wav.quant.first.codebook.weight", f32, {c.codebook_size, half},
               codebook(s, "decoder.quantizer.rvq_first.vq.layers.0"));
  std::vector<float> rest;
  for (std::uint32_t q = 0; q + 1 < c.num_quantizers; ++q) {
    const auto b = codebook(s, "decoder.quantizer.rvq_rest.vq.layers." + std::to_string(q));
    rest.insert(rest.end(), b.begin(), b.end());
  }
  w.add_tensor("a.gen.wav.quant.rest.codebook.weight", f32, {c.num_quantizers - 1u, c.codebook_size, half}, rest);
}

void write_codec(io::GgufWriter& w, const Source& s, const Qwen3TtsCodecConfig& c) {
  const io::GgmlType f16 = io::GgmlType::f16, f32 = io::GgmlType::f32;
  write_codec_quantizer(w, s, c);
  add_conv(w, "a.gen.wav.pre_conv", s, "decoder.pre_conv.conv", f16);
  const std::string t = "decoder.pre_transformer.";
  add_conv(w, "a.gen.wav.tfm.in_proj", s, t + "input_proj", f32);
  add_conv(w, "a.gen.wav.tfm.out_proj", s, t + "output_proj", f32);
  add(w, "a.gen.wav.tfm.output_norm.weight", s, t + "norm.weight");
  const std::pair<const char*, const char*> names[] = {
      {"input_layernorm.weight", "ln1.weight"},        {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.k_proj.weight", "attn_k.weight"},    {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.o_proj.weight", "attn_out.weight"},  {"self_attn_layer_scale.scale", "ls1.weight"},
      {"post_attention_layernorm.weight", "ln2.weight"}, {"mlp.gate_proj.weight", "ffn_gate.weight"},
      {"mlp.up_proj.weight", "ffn_up.weight"},         {"mlp.down_proj.weight", "ffn_down.weight"},
      {"mlp_layer_scale.scale", "ls2.weight"}};
  for (std::uint32_t l = 0; l < c.num_layers; ++l)
    for (const auto& [hf, gguf] : names)
      add(w, "a.gen.wav.tfm.blk." + std::to_string(l) + "." + gguf, s, t + "layers." + std::to_string(l) + "." + hf);
  for (std::size_t b = 0; b < c.upsampling_ratios.size(); ++b) {
    const std::string g = "a.gen.wav.up.blk." + std::to_string(b) + ".", h = "decoder.upsample." + std::to_string(b) + ".";
    add_conv(w, g + "conv", s, h + "0.conv", f32);
    add_conv(w, g + "dwconv", s, h + "1.dwconv.conv", f16);
    add_conv(w, g + "norm", s, h + "1.norm", f32);
    add_conv(w, g + "pw1", s, h + "1.pwconv1", f32);
    add_conv(w, g + "pw2", s, h + "1.pwconv2", f32);
    add(w, g + "gamma", s, h + "1.gamma");
  }
  add_conv(w, "a.gen.wav.dac.entry", s, "decoder.decoder.0.conv", f16);
  for (std::size_t b = 0; b < c.upsample_rates.size(); ++b) {
    const std::string g = "a.gen.wav.dac.blk." + std::to_string(b) + ".";
    const std::string h = "decoder.decoder." + std::to_string(b + 1) + ".block.";
    add_snake(w, g + "snake", s, h + "0");
    add_conv(w, g + "conv", s, h + "1.conv", f32);
    for (int x = 0; x < 3; ++x) {
      const std::string gr = g + "res." + std::to_string(x) + ".", hr = h + std::to_string(x + 2) + ".";
      add_snake(w, gr + "act1", s, hr + "act1");
      add_conv(w, gr + "conv1", s, hr + "conv1.conv", f16);
      add_snake(w, gr + "act2", s, hr + "act2");
      add_conv(w, gr + "conv2", s, hr + "conv2.conv", f16);
    }
  }
  const std::size_t n = c.upsample_rates.size();
  add_snake(w, "a.gen.wav.dac.post_snake", s, "decoder.decoder." + std::to_string(n + 1));
  add_conv(w, "a.gen.wav.dac.post_conv", s, "decoder.decoder." + std::to_string(n + 2) + ".conv", f16);
}

void write_mmproj(const Source& s, const Source& codec_dir, const Qwen3TtsConfig& c, const Qwen3TtsCodecConfig& codec,
                  std::uint64_t ecapa_channels, std::uint64_t seed, const fs::path& out) {
  io::GgufWriter w;
  w.set("general.architecture", io::GgufValue::string("clip"));
  w.set("general.name", io::GgufValue::string("izwi-random-qwen3-tts-mmproj"));
  w.set("general.file_type", io::GgufValue::u32(0));
  w.set("clip.has_vision_encoder", io::GgufValue::boolean(false));
  w.set("clip.has_audio_encoder", io::GgufValue::boolean(true));
  w.set("clip.audio.projector_type", io::GgufValue::string("qwen3tts_spkenc"));
  w.set("clip.audio.projection_dim", io::GgufValue::u32(c.talker.hidden_size));
  w.set("clip.audio.num_mel_bins", io::GgufValue::u32(128));
  w.set("clip.audio.block_count", io::GgufValue::u32(3));
  if (c.speaker_encoder) ecapa_channels = c.speaker_encoder->enc_channels.front();
  w.set("clip.audio.embedding_length", io::GgufValue::u32(static_cast<std::uint32_t>(3 * ecapa_channels)));
  w.set("clip.audio.feed_forward_length", io::GgufValue::u32(static_cast<std::uint32_t>(3 * ecapa_channels)));
  w.set("clip.audio.attention.head_count", io::GgufValue::u32(1));
  w.set("clip.audio.attention.layer_norm_epsilon", io::GgufValue::f32(1e-5f));
  w.set("clip.has_gen_audio_encoder", io::GgufValue::boolean(true));
  w.set("clip.gen.audio.projector_type", io::GgufValue::string("qwen3tts_gen"));
  w.set("clip.gen.audio.projection_dim", io::GgufValue::u32(c.talker.hidden_size));
  w.set("clip.gen.audio.embedding_length", io::GgufValue::u32(c.predictor.hidden_size));
  w.set("clip.gen.audio.feed_forward_length", io::GgufValue::u32(c.predictor.intermediate_size));
  w.set("clip.gen.audio.block_count", io::GgufValue::u32(c.predictor.num_layers));
  w.set("clip.gen.audio.attention.head_count", io::GgufValue::u32(c.predictor.num_heads));
  w.set("clip.gen.audio.attention.head_count_kv", io::GgufValue::u32(c.predictor.num_kv_heads));
  w.set("clip.gen.audio.attention.layer_norm_epsilon", io::GgufValue::f32(static_cast<float>(c.predictor.rms_norm_eps)));
  write_code_predictor(w, s, c);
  write_codec(w, codec_dir, codec);
  if (c.speaker_encoder) add_speaker_encoder(w, s, *c.speaker_encoder);
  else add_random_ecapa(w, ecapa_channels, c.talker.hidden_size, seed);
  w.write(out);
}

struct Options {
  fs::path dir, talker, mmproj;
  io::GgmlType type = io::GgmlType::f32;  // becomes matrix_type
  std::uint64_t ecapa_channels = 64, seed = 1;  // the random speaker encoder's
};

Options parse(int argc, char** argv) {
  Options o;
  std::string dir, talker, mmproj, type = "f32";
  std::size_t ecapa_channels = o.ecapa_channels, seed = o.seed;
  po::options_description options("options");
  options.add_options()
      ("talker", po::value(&talker)->value_name("FILE"), "the talker GGUF to write (required)")
      ("mmproj", po::value(&mmproj)->value_name("FILE"), "the mmproj GGUF to write (required)")
      ("type", po::value(&type)->value_name("f32|f16|q8_0")->default_value(type),
       "the talker's and code predictor's matrices")
      ("ecapa-channels", cli::count(&ecapa_channels)->value_name("N"),
       "channels of the random speaker encoder (a multiple of 64), for a checkpoint without one")
      ("seed", cli::count(&seed)->value_name("N"), "seed of that random speaker encoder")
      ("help,h", "show this help");
  po::options_description hidden;
  hidden.add_options()("dir", po::value(&dir));
  po::positional_options_description positional;
  positional.add("dir", 1);
  cli::read_command_line(argc, argv, program, options, hidden, positional);
  if (dir.empty()) cli::usage_error(program, "DIR (the Hugging Face Qwen3-TTS directory) is required");
  if (talker.empty() || mmproj.empty())
    cli::usage_error(program, "--talker and --mmproj (the files to write) are required");
  if (type == "f32") o.type = io::GgmlType::f32;
  else if (type == "f16") o.type = io::GgmlType::f16;
  else if (type == "q8_0") o.type = io::GgmlType::q8_0;
  else cli::usage_error(program, "--type must be f32, f16 or q8_0, not " + type);
  if (ecapa_channels == 0 || ecapa_channels % 64 != 0)
    cli::usage_error(program, "--ecapa-channels must be a positive multiple of 64");
  o.dir = dir;
  o.talker = talker;
  o.mmproj = mmproj;
  o.ecapa_channels = ecapa_channels;
  o.seed = seed;
  return o;
}

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  matrix_type = o.type;
  const Qwen3TtsConfig c = Qwen3TtsConfig::read(o.dir / "config.json");
  const Qwen3TtsCodecConfig codec = Qwen3TtsCodecConfig::read(o.dir / "speech_tokenizer/config.json");
  if (!fs::exists(o.dir / "tokenizer.json")) throw std::runtime_error(o.dir.string() + " has no tokenizer.json");
  const io::JsonValue config = io::read_json_file(o.dir / "config.json");
  const io::JsonValue tokenizer = io::read_json_file(o.dir / "tokenizer.json");
  const Source main{io::ModelDirectory::open(o.dir)}, codec_dir{io::ModelDirectory::open(o.dir / "speech_tokenizer")};
  write_talker(main, config, tokenizer, c, o.talker);
  write_mmproj(main, codec_dir, c, codec, o.ecapa_channels, o.seed, o.mmproj);
  std::cout << "wrote " << o.talker << " and " << o.mmproj << "\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << program.name << ": " << e.what() << "\n";
  return 1;
}
