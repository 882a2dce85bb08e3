#pragma once
// The codec decoder from llama.cpp's mmproj GGUF (a.gen.wav.*, as its
// converter conversion/qwen3tts.py writes them): tensor names translated from
// transformers', the shape read from the tensors.
// Inline in header-only builds; compiled once, in <izwi/src.hpp>, under
// IZWI_SEPARATE_COMPILATION (see izwi/config.hpp).

#include "izwi/config.hpp"
#include "izwi/models/qwen3_tts_codec.hpp"

#include <string>
#include <vector>

#include "izwi/core/error.hpp"
#include "izwi/io/gguf.hpp"

namespace izwi::detail {

IZWI_DECL std::vector<std::string> split_name(const std::string& name) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t dot; (dot = name.find('.', start)) != std::string::npos; start = dot + 1)
    parts.push_back(name.substr(start, dot - start));
  parts.push_back(name.substr(start));
  return parts;
}

/// transformers' decoder.* name → llama.cpp's a.gen.wav.* name ("" when it has none).
IZWI_DECL std::string qwen3_tts_codec_gguf_name(const std::string& hf, std::size_t blocks) {
  const std::vector<std::string> t = split_name(hf);
  auto at = [&](std::size_t i) -> const std::string& {
    static const std::string none;
    return i < t.size() ? t[i] : none;
  };
  const std::string w = "a.gen.wav.";
  if (at(0) != "decoder") return "";
  if (at(1) == "quantizer") return w + "quant." + (at(2) == "rvq_first" ? "first" : "rest") + ".out_proj.weight";
  if (at(1) == "pre_conv") return w + "pre_conv." + at(3);
  if (at(1) == "pre_transformer") {
    if (at(2) == "input_proj") return w + "tfm.in_proj." + at(3);
    if (at(2) == "output_proj") return w + "tfm.out_proj." + at(3);
    if (at(2) == "norm") return w + "tfm.output_norm.weight";
    std::string rest;
    for (std::size_t i = 4; i < t.size(); ++i) rest += (rest.empty() ? "" : ".") + t[i];
    static const std::pair<const char*, const char*> layer[] = {
        {"input_layernorm.weight", "ln1.weight"},         {"post_attention_layernorm.weight", "ln2.weight"},
        {"self_attn.q_proj.weight", "attn_q.weight"},     {"self_attn.k_proj.weight", "attn_k.weight"},
        {"self_attn.v_proj.weight", "attn_v.weight"},     {"self_attn.o_proj.weight", "attn_out.weight"},
        {"self_attn_layer_scale.scale", "ls1.weight"},    {"mlp_layer_scale.scale", "ls2.weight"},
        {"mlp.gate_proj.weight", "ffn_gate.weight"},      {"mlp.up_proj.weight", "ffn_up.weight"},
        {"mlp.down_proj.weight", "ffn_down.weight"}};
    for (const auto& [from, to] : layer)
      if (rest == from) return w + "tfm.blk." + at(3) + "." + to;
    return "";
  }
  if (at(1) == "upsample") {
    const std::string b = w + "up.blk." + at(2) + ".";
    if (at(3) == "0") return b + "conv." + at(5);
    if (at(4) == "dwconv") return b + "dwconv." + at(6);
    if (at(4) == "norm") return b + "norm." + at(5);
    if (at(4) == "pwconv1") return b + "pw1." + at(5);
    if (at(4) == "pwconv2") return b + "pw2." + at(5);
    if (at(4) == "gamma") return b + "gamma";
    return "";
  }
  if (at(1) != "decoder" || at(2).empty()) return "";
  const std::size_t i = std::stoul(at(2));
  if (i == 0) return w + "dac.entry." + at(4);
  if (i == blocks + 1) return w + "dac.post_snake." + at(3);
  if (i == blocks + 2) return w + "dac.post_conv." + at(4);
  const std::string b = w + "dac.blk." + std::to_string(i - 1) + ".";
  const std::size_t j = std::stoul(at(4));
  if (j == 0) return b + "snake." + at(5);
  if (j == 1) return b + "conv." + at(6);
  const std::string r = b + "res." + std::to_string(j - 2) + ".";
  if (at(5) == "act1" || at(5) == "act2") return r + at(5) + "." + at(6);
  return r + at(5) + "." + at(7);  // conv1.conv.weight → conv1.weight
}

class Qwen3TtsCodecGgufSource final : public Qwen3TtsCodecSource {
 public:
  Qwen3TtsCodecGgufSource(const io::GgufFile& file, std::size_t blocks) : file_(&file), blocks_(blocks) {}

  std::vector<float> tensor(const std::string& name, std::initializer_list<std::uint64_t> shape) const override {
    const std::string gguf = qwen3_tts_codec_gguf_name(name, blocks_);
    if (gguf.empty()) throw error(file_->name() + ": no llama.cpp tensor holds '" + name + "'");
    std::vector<std::uint64_t> s(shape);
    if (name.find("quantizer") != std::string::npos && s.size() == 3 && s.back() == 1) s.pop_back();  // squeezed 1x1 convs
    return file_->to_f32(gguf, s);
  }
  std::string origin() const override { return file_->name(); }
  bool folded_snake() const override { return true; }
  std::vector<float> dequantised_codebook(std::size_t q, std::size_t size, std::size_t dim) const override {
    if (q == 0) return file_->to_f32("a.gen.wav.quant.first.codebook.weight", {size, dim});
    const io::GgufTensorInfo& rest = file_->tensor("a.gen.wav.quant.rest.codebook.weight");
    const std::vector<float> all = file_->to_f32(rest.name, rest.shape());
    if (all.size() < q * size * dim) throw error(file_->name() + ": a.gen.wav.quant.rest.codebook.weight is too small");
    return {all.begin() + static_cast<std::ptrdiff_t>((q - 1) * size * dim),
            all.begin() + static_cast<std::ptrdiff_t>(q * size * dim)};
  }

 private:
  const io::GgufFile* file_;
  std::size_t blocks_;
};

/// The codec's shape from the mmproj's tensors; what llama.cpp fixes
/// (16 heads, window 72, θ 1e4, ε 1e-5) as it fixes it.
IZWI_DECL Qwen3TtsCodecConfig qwen3_tts_codec_config_from_gguf(const io::GgufFile& f) {
  auto shape = [&](const std::string& name) { return f.tensor(name).shape(); };
  Qwen3TtsCodecConfig c;
  const auto first = shape("a.gen.wav.quant.first.codebook.weight");  // [size][dim / 2]
  c.codebook_size = static_cast<std::uint32_t>(first.at(0));
  c.codebook_dim = static_cast<std::uint32_t>(shape("a.gen.wav.quant.first.out_proj.weight").at(0));
  c.num_quantizers = static_cast<std::uint32_t>(shape("a.gen.wav.quant.rest.codebook.weight").at(0) + 1);
  c.latent_dim = static_cast<std::uint32_t>(shape("a.gen.wav.pre_conv.weight").at(0));
  c.hidden_size = static_cast<std::uint32_t>(shape("a.gen.wav.tfm.in_proj.weight").at(0));
  c.intermediate_size = static_cast<std::uint32_t>(shape("a.gen.wav.tfm.blk.0.ffn_gate.weight").at(0));
  c.num_heads = c.num_kv_heads = 16;
  c.head_dim = static_cast<std::uint32_t>(shape("a.gen.wav.tfm.blk.0.attn_q.weight").at(0) / 16);
  c.num_layers = 0;
  while (f.find_tensor("a.gen.wav.tfm.blk." + std::to_string(c.num_layers) + ".attn_q.weight")) ++c.num_layers;
  c.decoder_dim = static_cast<std::uint32_t>(shape("a.gen.wav.dac.entry.weight").at(0));
  c.upsample_rates.clear();
  for (std::size_t b = 0; f.find_tensor("a.gen.wav.dac.blk." + std::to_string(b) + ".conv.weight"); ++b)
    c.upsample_rates.push_back(static_cast<std::uint32_t>(shape("a.gen.wav.dac.blk." + std::to_string(b) + ".conv.weight").at(2) / 2));
  c.upsampling_ratios.clear();
  for (std::size_t b = 0; f.find_tensor("a.gen.wav.up.blk." + std::to_string(b) + ".conv.weight"); ++b)
    c.upsampling_ratios.push_back(static_cast<std::uint32_t>(shape("a.gen.wav.up.blk." + std::to_string(b) + ".conv.weight").at(2)));
  c.validate();
  return c;
}

}  // namespace izwi::detail

namespace izwi {

IZWI_DECL Qwen3TtsCodecDecoder Qwen3TtsCodecDecoder::load_gguf(const std::filesystem::path& mmproj_gguf,
                                                            Qwen3TtsCodecPrecision precision) {
  const io::GgufFile file = io::GgufFile::open(mmproj_gguf);
  const Qwen3TtsCodecConfig config = detail::qwen3_tts_codec_config_from_gguf(file);
  return from_source(detail::Qwen3TtsCodecGgufSource(file, config.upsample_rates.size()), config, precision);
}

}  // namespace izwi
