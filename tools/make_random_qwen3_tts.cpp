// izwi-make-random-qwen3-tts: writes a Qwen3-TTS 12 Hz CustomVoice (or Base)
// checkpoint with random weights and the real topology, in the Hugging Face layout:
//
//   DIR/config.json, generation_config.json, [tokenizer.json]
//   DIR/model.safetensors                      talker.* (talker, text projection, code predictor),
//                                              speaker_encoder.* (Base: the ECAPA-TDNN)
//   DIR/speech_tokenizer/config.json           the codec decoder's decoder_config
//                                              (Base: and the encoder's encoder_config)
//   DIR/speech_tokenizer/model.safetensors     decoder.* (the codec decoder), encoder.*
//                                              (Base: the speech tokenizer's Mimi encoder)
//
//   izwi-make-random-qwen3-tts --out DIR [--shape small|0.6b] [--tokenizer tokenizer.json]
//       [--seed 1] [--dtype f32|bf16] [--logit-scale 4] [--wav-gain 1]
//       [--model-type custom_voice|base]
//
// Shapes: "0.6b" is Qwen3-TTS-12Hz-0.6B's (talker 1024 wide, 28 layers; text
// embedding 151936 × 2048; predictor 1024 wide, 5 layers; codec decoder 512
// wide, 8 layers, decoder_dim 1536). "small" keeps everything llama.cpp's
// implementation fixes (codec vocabulary 3072, 2048 codes per codebook, 16
// codebooks, 8 codec layers of 16 heads, window 72, strides 8·5·4·3 and 2·2)
// and shrinks the widths: talker 64 wide, 2 layers, 4/2 heads of 32; text
// hidden 64; predictor 48 wide (so small_to_mtp_projection exists), 2 layers;
// codec 64 wide, decoder_dim 64. --model-type base adds the speaker encoder
// (0.6b: channels 512, x-vector 1024; small: channels 64 - llama.cpp's Res2Net
// scale 8, kernels 5/3/3/3/1 and dilations 1/2/3/4/1 kept - attention and SE
// channels 16, x-vector = the talker's 64) and drops the named speakers, as a
// published Base config has none, and the speech tokenizer's Mimi encoder for
// in-context cloning (0.6b: the published shape, SEANet 64 filters, transformer
// 512 wide with 8 layers, 32 codebooks of 256; small: 8 filters, 32 wide, 2
// layers of 4 heads, 16 codebooks of 16; strides 4·5·6·8 and the downsample
// kept in both). The speaker and speech encoders draw from their own random
// streams, so a Base and a CustomVoice checkpoint of one seed share every
// other weight.
//
// Scales: linear and conv weights N(0, 1/fan_in), norms 1 ± 0.05, small
// biases, layer scales and ConvNeXt γ 0.1 (both heads' rows at --logit-scale
// so greedy choices have wide margins; the codec-EOS row at 0.1 of that so a
// random talker does not stop at once). The codec decoder's output has an RMS
// of roughly 0.1-0.3 with few clipped samples at --wav-gain 1. Speaker and
// language ids are illustrative control ids, not the published ones. The
// weights are random: the model is untrained, and config.json says so.

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "izwi/io/safetensors.hpp"

#include <boost/program_options.hpp>

namespace fs = std::filesystem;
namespace po = boost::program_options;
using namespace izwi;

namespace {

constexpr const char* program = "izwi-make-random-qwen3-tts";

struct Shape {
  std::uint32_t hidden, layers, heads, kv_heads, head_dim, ffn, text_hidden;
  std::vector<std::uint32_t> mrope;
  std::uint32_t p_hidden, p_layers, p_heads, p_kv_heads, p_head_dim, p_ffn;
  std::uint32_t codebook_dim, latent, c_hidden, c_ffn, c_heads, c_head_dim, decoder_dim;
  std::uint32_t ecapa_channels, ecapa_attention;  // the speaker encoder (Base)
  // The speech tokenizer's encoder (Base): SEANet filters, transformer width,
  // layers, heads, head_dim, ffn, codebook width, quantizers written.
  std::uint32_t e_filters, e_hidden, e_layers, e_heads, e_head_dim, e_ffn, e_codebook_dim, e_quantizers;
};

Shape shape_of(const std::string& name) {
  if (name == "0.6b")
    return {1024, 28, 16, 8, 128, 3072, 2048, {24, 20, 20}, 1024, 5, 16, 8, 128, 3072, 512, 1024, 512, 1024, 16, 64, 1536,
            512, 128, 64, 512, 8, 8, 64, 2048, 256, 32};
  if (name == "small")
    return {64, 2, 4, 2, 32, 128, 64, {6, 5, 5}, 48, 2, 4, 2, 16, 96, 32, 64, 64, 128, 16, 4, 64, 64, 16,
            8, 32, 2, 4, 8, 64, 16, 16};
  std::cerr << program << ": --shape must be small or 0.6b\n";
  std::exit(2);
}

struct Options {
  fs::path out, tokenizer;
  std::string shape = "small", dtype = "f32", model_type = "custom_voice";
  std::uint64_t seed = 1;
  double logit_scale = 4.0, wav_gain = 1.0;
};

Options parse(int argc, char** argv) {
  Options o;
  std::string out, tokenizer;
  po::options_description options("options");
  options.add_options()
      ("out", po::value(&out)->value_name("DIR"), "directory to write (required)")
      ("shape", po::value(&o.shape)->value_name("small|0.6b")->default_value(o.shape), "model shape")
      ("tokenizer", po::value(&tokenizer)->value_name("FILE"), "a Qwen3 tokenizer.json to copy beside the weights")
      ("seed", po::value(&o.seed)->value_name("N")->default_value(o.seed), "random seed")
      ("dtype", po::value(&o.dtype)->value_name("f32|bf16")->default_value(o.dtype), "safetensors dtype")
      ("logit-scale", po::value(&o.logit_scale)->value_name("X")->default_value(o.logit_scale),
       "standard deviation of the talker's and predictor's logits")
      ("wav-gain", po::value(&o.wav_gain)->value_name("X")->default_value(o.wav_gain),
       "scale of the codec decoder's last convolution")
      ("model-type", po::value(&o.model_type)->value_name("custom_voice|base")->default_value(o.model_type),
       "CustomVoice (named speakers) or Base (a speaker encoder for voice cloning)")
      ("help,h", "show this help");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, options), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << program << ": " << e.what() << "\n" << options;
    std::exit(2);
  }
  if (vm.count("help")) {
    std::cout << program << ": writes a random-weight Qwen3-TTS checkpoint\nusage: " << program
              << " --out DIR [options]\n" << options;
    std::exit(0);
  }
  o.out = out;
  o.tokenizer = tokenizer;
  if (o.out.empty()) {
    std::cerr << program << ": --out is required\n" << options;
    std::exit(2);
  }
  if (o.model_type != "custom_voice" && o.model_type != "base") {
    std::cerr << program << ": --model-type must be custom_voice or base\n";
    std::exit(2);
  }
  if (o.dtype != "f32" && o.dtype != "bf16") {
    std::cerr << program << ": --dtype must be f32 or bf16\n";
    std::exit(2);
  }
  return o;
}

std::uint16_t to_bf16(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits += 0x7fff + ((bits >> 16) & 1);  // round to nearest even, as torch does
  return static_cast<std::uint16_t>(bits >> 16);
}

/// Random tensors of one safetensors file, written in name order.
class TensorSet {
 public:
  explicit TensorSet(std::mt19937_64& rng) : rng_(&rng) {}
  std::vector<float>& add(const std::string& name, std::vector<std::uint64_t> shape, double mean, double stddev) {
    std::size_t n = 1;
    for (auto d : shape) n *= d;
    std::normal_distribution<float> dist(static_cast<float>(mean), static_cast<float>(stddev));
    std::vector<float> values(n);
    for (float& x : values) x = dist(*rng_);
    auto& t = tensors_[name];
    t = {std::move(shape), std::move(values)};
    return t.second;
  }
  /// N(0, gain / sqrt(fan_in)): a linear or conv weight.
  void weight(const std::string& name, std::vector<std::uint64_t> shape, std::uint64_t fan_in, double gain = 1.0) {
    add(name, std::move(shape), 0.0, gain / std::sqrt(static_cast<double>(fan_in)));
  }
  void norm(const std::string& name, std::uint64_t n) { add(name, {n}, 1.0, 0.05); }
  void bias(const std::string& name, std::uint64_t n) { add(name, {n}, 0.0, 0.02); }
  void uniform(const std::string& name, std::uint64_t n, float lo, float hi) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> values(n);
    for (float& x : values) x = dist(*rng_);
    tensors_[name] = {{n}, std::move(values)};
  }

  /// Adds another set's tensors (drawn from its own generator).
  void merge(TensorSet&& other) { tensors_.merge(other.tensors_); }

  void write(const fs::path& path, bool bf16) const {
    std::vector<std::vector<std::uint16_t>> converted;
    std::vector<io::TensorToWrite> out;
    converted.reserve(tensors_.size());
    for (const auto& [name, tensor] : tensors_) {
      io::TensorToWrite t;
      t.name = name;
      t.shape = tensor.first;
      if (bf16) {
        auto& c = converted.emplace_back(tensor.second.size());
        for (std::size_t i = 0; i < c.size(); ++i) c[i] = to_bf16(tensor.second[i]);
        t.dtype = DType::bf16;
        t.data = std::as_bytes(std::span(c));
      } else {
        t.dtype = DType::f32;
        t.data = std::as_bytes(std::span(tensor.second));
      }
      out.push_back(std::move(t));
    }
    io::write_safetensors(path, out, {{"format", "pt"}});
  }

 private:
  std::mt19937_64* rng_;
  std::map<std::string, std::pair<std::vector<std::uint64_t>, std::vector<float>>> tensors_;
};

void add_qwen3_layers(TensorSet& t, const std::string& prefix, std::uint32_t layers, std::uint64_t hidden,
                      std::uint64_t heads, std::uint64_t kv_heads, std::uint64_t head_dim, std::uint64_t ffn) {
  for (std::uint32_t l = 0; l < layers; ++l) {
    const std::string p = prefix + "layers." + std::to_string(l) + ".";
    t.norm(p + "input_layernorm.weight", hidden);
    t.norm(p + "post_attention_layernorm.weight", hidden);
    t.weight(p + "self_attn.q_proj.weight", {heads * head_dim, hidden}, hidden);
    t.weight(p + "self_attn.k_proj.weight", {kv_heads * head_dim, hidden}, hidden);
    t.weight(p + "self_attn.v_proj.weight", {kv_heads * head_dim, hidden}, hidden);
    t.weight(p + "self_attn.o_proj.weight", {hidden, heads * head_dim}, heads * head_dim);
    t.norm(p + "self_attn.q_norm.weight", head_dim);
    t.norm(p + "self_attn.k_norm.weight", head_dim);
    t.weight(p + "mlp.gate_proj.weight", {ffn, hidden}, hidden);
    t.weight(p + "mlp.up_proj.weight", {ffn, hidden}, hidden);
    t.weight(p + "mlp.down_proj.weight", {hidden, ffn}, ffn);
  }
}

constexpr std::uint64_t codec_vocab = 3072, codebook = 2048, text_vocab = 151936, codec_eos = 2150;

void add_talker(TensorSet& t, const Shape& s, const Options& o) {
  const std::uint64_t h = s.hidden, th = s.text_hidden;
  t.add("talker.model.text_embedding.weight", {text_vocab, th}, 0.0, 1.0);
  t.weight("talker.text_projection.linear_fc1.weight", {th, th}, th);
  t.bias("talker.text_projection.linear_fc1.bias", th);
  t.weight("talker.text_projection.linear_fc2.weight", {h, th}, th);
  t.bias("talker.text_projection.linear_fc2.bias", h);
  t.add("talker.model.codec_embedding.weight", {codec_vocab, h}, 0.0, 1.0);
  add_qwen3_layers(t, "talker.model.", s.layers, h, s.heads, s.kv_heads, s.head_dim, s.ffn);
  t.norm("talker.model.norm.weight", h);
  auto& head = t.add("talker.codec_head.weight", {codec_vocab, h}, 0.0, o.logit_scale / std::sqrt(double(h)));
  for (std::uint64_t i = 0; i < h; ++i) head[codec_eos * h + i] *= 0.1f;

  const std::uint64_t ph = s.p_hidden;
  const std::string p = "talker.code_predictor.";
  add_qwen3_layers(t, p + "model.", s.p_layers, ph, s.p_heads, s.p_kv_heads, s.p_head_dim, s.p_ffn);
  t.norm(p + "model.norm.weight", ph);
  for (int g = 0; g < 15; ++g) {
    t.add(p + "model.codec_embedding." + std::to_string(g) + ".weight", {codebook, h}, 0.0, 1.0);
    t.weight(p + "lm_head." + std::to_string(g) + ".weight", {codebook, ph}, ph, o.logit_scale);
  }
  if (ph != h) {
    t.weight(p + "small_to_mtp_projection.weight", {ph, h}, h);
    t.bias(p + "small_to_mtp_projection.bias", ph);
  }
}

/// The ECAPA-TDNN of a Base model (speaker_encoder.*), upstream's layout:
/// blocks.0 the stem, blocks.1-3 SE-Res2Net, mfa, asp, fc.
void add_speaker_encoder(TensorSet& t, const Shape& s) {
  const std::uint64_t c = s.ecapa_channels, sub = c / 8, att = s.ecapa_attention, se = s.ecapa_attention;
  const std::string p = "speaker_encoder.";
  auto conv = [&](const std::string& name, std::uint64_t in, std::uint64_t out, std::uint64_t k, double gain = 1.0) {
    t.weight(p + name + ".weight", {out, in, k}, in * k, gain);
    t.bias(p + name + ".bias", out);
  };
  conv("blocks.0.conv", 128, c, 5, 0.2);  // log-mel inputs are around -5: keep the stem's output moderate
  for (int b = 1; b <= 3; ++b) {
    const std::string bp = "blocks." + std::to_string(b) + ".";
    conv(bp + "tdnn1.conv", c, c, 1);
    for (int i = 0; i < 7; ++i) conv(bp + "res2net_block.blocks." + std::to_string(i) + ".conv", sub, sub, 3);
    conv(bp + "tdnn2.conv", c, c, 1);
    conv(bp + "se_block.conv1", c, se, 1);
    conv(bp + "se_block.conv2", se, c, 1);
  }
  conv("mfa.conv", 3 * c, 3 * c, 1);
  conv("asp.tdnn.conv", 9 * c, att, 1);
  conv("asp.conv", att, 3 * c, 1);
  conv("fc", 6 * c, s.hidden, 1);
}

void add_snake(TensorSet& t, const std::string& p, std::uint64_t channels) {
  t.add(p + ".alpha", {channels}, 0.0, 0.1);
  t.add(p + ".beta", {channels}, 0.0, 0.1);
}

void add_conv(TensorSet& t, const std::string& p, std::uint64_t in, std::uint64_t out, std::uint64_t k, double gain = 1.0) {
  t.weight(p + ".weight", {out, in, k}, in * k, gain);
  t.bias(p + ".bias", out);
}

void add_codec(TensorSet& t, const Shape& s, const Options& o) {
  const std::uint64_t half = s.codebook_dim / 2, lat = s.latent, ch = s.c_hidden, qd = std::uint64_t{s.c_heads} * s.c_head_dim;
  for (int q = 0; q < 16; ++q) {
    const std::string p = q == 0 ? "decoder.quantizer.rvq_first.vq.layers.0._codebook."
                                 : "decoder.quantizer.rvq_rest.vq.layers." + std::to_string(q - 1) + "._codebook.";
    t.uniform(p + "cluster_usage", codebook, 0.5f, 2.0f);
    t.add(p + "embedding_sum", {codebook, half}, 0.0, 1.0);
  }
  for (const char* part : {"rvq_first", "rvq_rest"}) {
    const std::string p = std::string("decoder.quantizer.") + part;
    t.weight(p + ".input_proj.weight", {half, s.codebook_dim, 1}, s.codebook_dim);  // the encoder's; unused here
    t.weight(p + ".output_proj.weight", {s.codebook_dim, half, 1}, half);
  }
  add_conv(t, "decoder.pre_conv.conv", s.codebook_dim, lat, 3);
  const std::string p = "decoder.pre_transformer.";
  t.weight(p + "input_proj.weight", {ch, lat}, lat);
  t.bias(p + "input_proj.bias", ch);
  t.weight(p + "output_proj.weight", {lat, ch}, ch);
  t.bias(p + "output_proj.bias", lat);
  t.norm(p + "norm.weight", ch);
  for (int l = 0; l < 8; ++l) {
    const std::string lp = p + "layers." + std::to_string(l) + ".";
    t.norm(lp + "input_layernorm.weight", ch);
    t.norm(lp + "post_attention_layernorm.weight", ch);
    t.add(lp + "self_attn_layer_scale.scale", {ch}, 0.1, 0.01);
    t.add(lp + "mlp_layer_scale.scale", {ch}, 0.1, 0.01);
    t.weight(lp + "self_attn.q_proj.weight", {qd, ch}, ch);
    t.weight(lp + "self_attn.k_proj.weight", {qd, ch}, ch);
    t.weight(lp + "self_attn.v_proj.weight", {qd, ch}, ch);
    t.weight(lp + "self_attn.o_proj.weight", {ch, qd}, qd);
    t.weight(lp + "mlp.gate_proj.weight", {s.c_ffn, ch}, ch);
    t.weight(lp + "mlp.up_proj.weight", {s.c_ffn, ch}, ch);
    t.weight(lp + "mlp.down_proj.weight", {ch, s.c_ffn}, s.c_ffn);
  }
  for (int b = 0; b < 2; ++b) {
    const std::string up = "decoder.upsample." + std::to_string(b) + ".";
    t.weight(up + "0.conv.weight", {lat, lat, 2}, lat);
    t.bias(up + "0.conv.bias", lat);
    t.weight(up + "1.dwconv.conv.weight", {lat, 1, 7}, 7);
    t.bias(up + "1.dwconv.conv.bias", lat);
    t.norm(up + "1.norm.weight", lat);
    t.bias(up + "1.norm.bias", lat);
    t.weight(up + "1.pwconv1.weight", {4 * lat, lat}, lat);
    t.bias(up + "1.pwconv1.bias", 4 * lat);
    t.weight(up + "1.pwconv2.weight", {lat, 4 * lat}, 4 * lat);
    t.bias(up + "1.pwconv2.bias", lat);
    t.add(up + "1.gamma", {lat}, 0.1, 0.01);
  }
  add_conv(t, "decoder.decoder.0.conv", lat, s.decoder_dim, 7);
  const std::uint32_t rates[4] = {8, 5, 4, 3};
  std::uint64_t c = s.decoder_dim;
  for (int b = 0; b < 4; ++b) {
    const std::string bp = "decoder.decoder." + std::to_string(b + 1) + ".block.";
    add_snake(t, bp + "0", c);
    t.weight(bp + "1.conv.weight", {c, c / 2, 2 * rates[b]}, 2 * c);
    t.bias(bp + "1.conv.bias", c / 2);
    c /= 2;
    for (int u = 0; u < 3; ++u) {
      const std::string rp = bp + std::to_string(u + 2) + ".";
      add_snake(t, rp + "act1", c);
      add_conv(t, rp + "conv1.conv", c, c, 7, 0.5);
      add_snake(t, rp + "act2", c);
      add_conv(t, rp + "conv2.conv", c, c, 1, 0.5);
    }
  }
  add_snake(t, "decoder.decoder.5", c);
  add_conv(t, "decoder.decoder.6.conv", c, 1, 7, 0.1 * o.wav_gain);
}

/// The speech tokenizer's encoder (encoder.*), transformers' MimiModel layout:
/// SEANet layers (conv, then per stride 4, 5, 6, 8 a residual block, an ELU
/// and the strided conv, then an ELU and the last conv), the transformer, the
/// downsample and the split RVQ's input projections and codebooks.
void add_speech_encoder(TensorSet& t, const Shape& s) {
  const std::uint64_t f = s.e_filters, h = s.e_hidden, d = s.e_codebook_dim;
  std::size_t index = 0;
  auto layer = [&] { return "encoder.encoder.layers." + std::to_string(index++); };
  add_conv(t, layer() + ".conv", 1, f, 7);
  std::uint64_t c = f;
  for (std::uint64_t ratio : {4, 5, 6, 8}) {
    const std::string p = layer() + ".block.";
    add_conv(t, p + "1.conv", c, c / 2, 3);
    add_conv(t, p + "3.conv", c / 2, c, 1, 0.5);
    ++index;  // ELU
    add_conv(t, layer() + ".conv", c, 2 * c, 2 * ratio);
    c *= 2;
  }
  ++index;  // ELU
  add_conv(t, layer() + ".conv", c, h, 3);
  const std::uint64_t qd = std::uint64_t{s.e_heads} * s.e_head_dim;
  for (std::uint32_t l = 0; l < s.e_layers; ++l) {
    const std::string p = "encoder.encoder_transformer.layers." + std::to_string(l) + ".";
    for (const char* norm : {"input_layernorm", "post_attention_layernorm"}) {
      t.norm(p + norm + ".weight", h);
      t.bias(p + norm + ".bias", h);
    }
    t.add(p + "self_attn_layer_scale.scale", {h}, 0.1, 0.01);
    t.add(p + "mlp_layer_scale.scale", {h}, 0.1, 0.01);
    t.weight(p + "self_attn.q_proj.weight", {qd, h}, h);
    t.weight(p + "self_attn.k_proj.weight", {qd, h}, h);
    t.weight(p + "self_attn.v_proj.weight", {qd, h}, h);
    t.weight(p + "self_attn.o_proj.weight", {h, qd}, qd);
    t.weight(p + "mlp.fc1.weight", {s.e_ffn, h}, h);
    t.weight(p + "mlp.fc2.weight", {h, s.e_ffn}, s.e_ffn);
  }
  t.weight("encoder.downsample.conv.weight", {h, h, 4}, 4 * h);
  for (const char* part : {"semantic", "acoustic"}) {
    const std::string p = std::string("encoder.quantizer.") + part + "_residual_vector_quantizer.";
    t.weight(p + "input_proj.weight", {d, h, 1}, h);
    t.weight(p + "output_proj.weight", {h, d, 1}, d);  // the decoder side's; unused by encode
    const std::uint32_t layers = std::string(part) == "semantic" ? 1 : s.e_quantizers - 1;
    for (std::uint32_t q = 0; q < layers; ++q) {
      const std::string cb = p + "layers." + std::to_string(q) + ".codebook.";
      // Centroids (embed_sum / usage) about as wide as the projected frames, so codes spread.
      t.add(cb + "embed_sum", {codebook, d}, 0.0, 1.0 / (q + 1.0));
      t.uniform(cb + "cluster_usage", codebook, 0.5f, 2.0f);
      t.add(cb + "initialized", {1}, 1.0, 0.0);
    }
  }
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::string join(const std::vector<std::uint32_t>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

std::string main_config(const Shape& s, const Options& o) {
  const bool base = o.model_type == "base";
  // A Base checkpoint names no speakers; it clones them.
  const std::string speakers =
      base ? "    \"spk_id\": {},\n    \"spk_is_dialect\": {},\n"
           : "    \"spk_id\": {\"vivian\": 3065, \"ryan\": 3061, \"eric\": 3062},\n"
             "    \"spk_is_dialect\": {\"vivian\": false, \"ryan\": false, \"eric\": \"sichuan_dialect\"},\n";
  std::string encoder;
  if (base) {
    const std::uint32_t c = s.ecapa_channels;
    encoder = ",\n  \"speaker_encoder_config\": {\n    \"mel_dim\": 128,\n    \"enc_dim\": " + std::to_string(s.hidden) +
              ",\n    \"enc_channels\": [" + join({c, c, c, c, 3 * c}) +
              "],\n    \"enc_kernel_sizes\": [5, 3, 3, 3, 1],\n    \"enc_dilations\": [1, 2, 3, 4, 1],\n"
              "    \"enc_attention_channels\": " + std::to_string(s.ecapa_attention) +
              ",\n    \"enc_res2net_scale\": 8,\n    \"enc_se_channels\": " + std::to_string(s.ecapa_attention) +
              ",\n    \"sample_rate\": 24000\n  }";
  }
  char buf[8192];
  std::snprintf(
      buf, sizeof buf,
      "{\n  \"architectures\": [\"Qwen3TTSForConditionalGeneration\"],\n  \"model_type\": \"qwen3_tts\",\n"
      "  \"_izwi_note\": \"random weights (izwi-make-random-qwen3-tts, shape %s, seed %llu): an untrained model\",\n"
      "  \"tts_model_type\": \"%s\",\n  \"tts_model_size\": \"%s\",\n"
      "  \"tokenizer_type\": \"qwen3_tts_tokenizer_12hz\",\n  \"im_start_token_id\": 151644,\n"
      "  \"im_end_token_id\": 151645,\n  \"tts_pad_token_id\": 151671,\n  \"tts_bos_token_id\": 151672,\n"
      "  \"tts_eos_token_id\": 151673,\n  \"assistant_token_id\": 77091,\n  \"torch_dtype\": \"%s\",\n"
      "  \"talker_config\": {\n    \"vocab_size\": 3072,\n    \"text_vocab_size\": 151936,\n"
      "    \"hidden_size\": %u,\n    \"num_hidden_layers\": %u,\n    \"num_attention_heads\": %u,\n"
      "    \"num_key_value_heads\": %u,\n    \"head_dim\": %u,\n    \"intermediate_size\": %u,\n"
      "    \"text_hidden_size\": %u,\n    \"num_code_groups\": 16,\n    \"hidden_act\": \"silu\",\n"
      "    \"max_position_embeddings\": 32768,\n    \"rms_norm_eps\": 1e-06,\n    \"rope_theta\": 1000000,\n"
      "    \"rope_scaling\": {\"rope_type\": \"default\", \"interleaved\": true, \"mrope_section\": [%s]},\n"
      "    \"attention_bias\": false,\n    \"use_sliding_window\": false,\n"
      "    \"codec_eos_token_id\": 2150,\n    \"codec_think_id\": 2154,\n    \"codec_nothink_id\": 2155,\n"
      "    \"codec_think_bos_id\": 2156,\n    \"codec_think_eos_id\": 2157,\n    \"codec_pad_id\": 2148,\n"
      "    \"codec_bos_id\": 2149,\n"
      "    \"codec_language_id\": {\"chinese\": 2055, \"english\": 2050, \"german\": 2053, \"sichuan_dialect\": 2062},\n"
      "%s"
      "    \"code_predictor_config\": {\n      \"vocab_size\": 2048,\n      \"hidden_size\": %u,\n"
      "      \"num_hidden_layers\": %u,\n      \"num_attention_heads\": %u,\n      \"num_key_value_heads\": %u,\n"
      "      \"head_dim\": %u,\n      \"intermediate_size\": %u,\n      \"num_code_groups\": 16,\n"
      "      \"hidden_act\": \"silu\",\n      \"rms_norm_eps\": 1e-06,\n      \"rope_theta\": 1000000,\n"
      "      \"max_position_embeddings\": 65536\n    }\n  }%s\n}\n",
      o.shape.c_str(), static_cast<unsigned long long>(o.seed), o.model_type.c_str(), o.shape.c_str(),
      o.dtype == "bf16" ? "bfloat16" : "float32", s.hidden, s.layers, s.heads, s.kv_heads, s.head_dim, s.ffn,
      s.text_hidden, join(s.mrope).c_str(), speakers.c_str(), s.p_hidden, s.p_layers, s.p_heads, s.p_kv_heads,
      s.p_head_dim, s.p_ffn, encoder.c_str());
  return buf;
}

std::string codec_config(const Shape& s, const Options& o) {
  std::string encoder;
  if (o.model_type == "base") {
    char e[1536];
    std::snprintf(e, sizeof e,
                  "  \"encoder_config\": {\n    \"_frame_rate\": 12.5,\n    \"audio_channels\": 1,\n"
                  "    \"sampling_rate\": 24000,\n    \"num_filters\": %u,\n    \"kernel_size\": 7,\n"
                  "    \"residual_kernel_size\": 3,\n    \"last_kernel_size\": 3,\n    \"num_residual_layers\": 1,\n"
                  "    \"dilation_growth_rate\": 2,\n    \"compress\": 2,\n    \"upsampling_ratios\": [8, 6, 5, 4],\n"
                  "    \"hidden_size\": %u,\n    \"num_hidden_layers\": %u,\n    \"num_attention_heads\": %u,\n"
                  "    \"num_key_value_heads\": %u,\n    \"head_dim\": %u,\n    \"intermediate_size\": %u,\n"
                  "    \"hidden_act\": \"gelu\",\n    \"norm_eps\": 1e-05,\n    \"layer_scale_initial_scale\": 0.01,\n"
                  "    \"rope_theta\": 10000.0,\n    \"max_position_embeddings\": 8000,\n    \"sliding_window\": 250,\n"
                  "    \"use_causal_conv\": true,\n    \"pad_mode\": \"constant\",\n    \"use_conv_shortcut\": false,\n"
                  "    \"codebook_size\": 2048,\n    \"codebook_dim\": %u,\n"
                  "    \"vector_quantization_hidden_dimension\": %u,\n    \"num_quantizers\": %u,\n"
                  "    \"num_semantic_quantizers\": 1,\n    \"frame_rate\": 12.5\n  },\n",
                  s.e_filters, s.e_hidden, s.e_layers, s.e_heads, s.e_heads, s.e_head_dim, s.e_ffn, s.e_codebook_dim,
                  s.e_codebook_dim, s.e_quantizers);
    encoder = e;
  }
  char buf[4096];
  std::snprintf(buf, sizeof buf,
                "{\n  \"architectures\": [\"Qwen3TTSTokenizerV2Model\"],\n  \"model_type\": \"qwen3_tts_tokenizer_12hz\",\n"
                "  \"input_sample_rate\": 24000,\n  \"output_sample_rate\": 24000,\n"
                "  \"decode_upsample_rate\": 1920,\n  \"encode_downsample_rate\": 1920,\n"
                "  \"encoder_valid_num_quantizers\": 16,\n%s  \"decoder_config\": {\n"
                "    \"codebook_size\": 2048,\n    \"codebook_dim\": %u,\n    \"latent_dim\": %u,\n"
                "    \"hidden_size\": %u,\n    \"intermediate_size\": %u,\n    \"num_hidden_layers\": 8,\n"
                "    \"num_attention_heads\": %u,\n    \"num_key_value_heads\": %u,\n    \"head_dim\": %u,\n"
                "    \"sliding_window\": 72,\n    \"rope_theta\": 10000,\n    \"rms_norm_eps\": 1e-05,\n"
                "    \"hidden_act\": \"silu\",\n    \"attention_bias\": false,\n    \"layer_scale_initial_scale\": 0.01,\n"
                "    \"max_position_embeddings\": 8000,\n    \"num_quantizers\": 16,\n    \"decoder_dim\": %u,\n"
                "    \"upsample_rates\": [8, 5, 4, 3],\n    \"upsampling_ratios\": [2, 2]\n  }\n}\n",
                encoder.c_str(), s.codebook_dim, s.latent, s.c_hidden, s.c_ffn, s.c_heads, s.c_heads, s.c_head_dim,
                s.decoder_dim);
  return buf;
}

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  const Shape s = shape_of(o.shape);
  fs::create_directories(o.out / "speech_tokenizer");
  write_text(o.out / "config.json", main_config(s, o));
  write_text(o.out / "generation_config.json",
             "{\n  \"do_sample\": true,\n  \"top_k\": 50,\n  \"top_p\": 1.0,\n  \"temperature\": 0.9,\n"
             "  \"repetition_penalty\": 1.05,\n  \"subtalker_dosample\": true,\n  \"subtalker_top_k\": 50,\n"
             "  \"subtalker_top_p\": 1.0,\n  \"subtalker_temperature\": 0.9,\n  \"max_new_tokens\": 8192\n}\n");
  write_text(o.out / "speech_tokenizer/config.json", codec_config(s, o));
  if (!o.tokenizer.empty())
    fs::copy_file(o.tokenizer, o.out / "tokenizer.json", fs::copy_options::overwrite_existing);

  std::mt19937_64 rng(o.seed);
  {
    TensorSet talker(rng);
    add_talker(talker, s, o);
    if (o.model_type == "base") {
      std::mt19937_64 speaker_rng(o.seed ^ 0x73706b656e63ULL);  // "spkenc": its own stream, see the top
      TensorSet encoder(speaker_rng);
      add_speaker_encoder(encoder, s);
      talker.merge(std::move(encoder));
    }
    talker.write(o.out / "model.safetensors", o.dtype == "bf16");
  }
  {
    TensorSet codec(rng);
    add_codec(codec, s, o);
    if (o.model_type == "base") {
      std::mt19937_64 encoder_rng(o.seed ^ 0x6d696d69656e63ULL);  // "mimienc": its own stream, see the top
      TensorSet encoder(encoder_rng);
      add_speech_encoder(encoder, s);
      codec.merge(std::move(encoder));
    }
    codec.write(o.out / "speech_tokenizer/model.safetensors", o.dtype == "bf16");
  }
  std::cout << "wrote a random-weight Qwen3-TTS (" << o.shape << " shape, seed " << o.seed << ") to " << o.out
            << "\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << program << ": " << e.what() << "\n";
  return 1;
}
