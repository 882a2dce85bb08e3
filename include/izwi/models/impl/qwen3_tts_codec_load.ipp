#pragma once
// Loading the codec decoder's weights from speech_tokenizer/model.safetensors
// (tensor names as transformers' Qwen3TTSTokenizerV2Model writes them).
// Inline in header-only builds; compiled once, in <izwi/src.hpp>, under
// IZWI_SEPARATE_COMPILATION (see izwi/config.hpp).

#include "izwi/config.hpp"
#include "izwi/models/qwen3_tts_codec.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "izwi/core/error.hpp"
#include "izwi/io/model_directory.hpp"
#include "izwi/models/detail/qwen3_tts_codec_ops.hpp"

namespace izwi::detail {

/// Where the codec decoder's tensors come from, asked for under transformers'
/// names and shapes. Loading is not the hot path: a virtual call per tensor is fine.
class Qwen3TtsCodecSource {
 public:
  virtual ~Qwen3TtsCodecSource() = default;
  /// The tensor as f32 after checking its shape (format_error naming file and tensor).
  virtual std::vector<float> tensor(const std::string& name, std::initializer_list<std::uint64_t> shape) const = 0;
  /// The file or directory, for messages.
  virtual std::string origin() const = 0;
  /// SnakeBeta stored folded, as e^α and 1 / (e^β + 1e-9) (llama.cpp's GGUF).
  virtual bool folded_snake() const { return false; }
  /// Codebook q ([size][dim]) when stored dequantised; empty when the source
  /// holds transformers' embedding_sum and cluster_usage instead.
  virtual std::vector<float> dequantised_codebook(std::size_t, std::size_t, std::size_t) const { return {}; }
};

/// A Hugging Face speech_tokenizer/ directory.
class Qwen3TtsCodecDirectorySource final : public Qwen3TtsCodecSource {
 public:
  explicit Qwen3TtsCodecDirectorySource(const io::ModelDirectory& dir) : dir_(&dir) {}
  std::vector<float> tensor(const std::string& name, std::initializer_list<std::uint64_t> shape) const override {
    return dir_->to_f32(name, shape);
  }
  std::string origin() const override { return dir_->path().string(); }

 private:
  const io::ModelDirectory* dir_;
};

/// Reads tensors as f32 into an arena that the WeightMatrix views point into.
/// Shape mismatches and missing tensors throw io::format_error naming the file and tensor.
class Qwen3TtsCodecLoader {
 public:
  Qwen3TtsCodecLoader(const Qwen3TtsCodecSource& source, std::vector<std::vector<float>>& arena)
      : src_(&source), arena_(&arena) {}

  std::vector<float> vector(const std::string& name, std::size_t n) const {
    std::vector<float> v = src_->tensor(name, {n});
    for (std::size_t i = 0; i < v.size(); ++i)
      if (!std::isfinite(v[i]))
        throw error(src_->origin() + ": tensor '" + name + "' holds a non-finite value at index " +
                    std::to_string(i) + "; the checkpoint is corrupt");
    return v;
  }

  std::vector<float> values(const std::string& name, std::initializer_list<std::uint64_t> shape) const {
    return src_->tensor(name, shape);
  }

  kernels::cpu::WeightMatrix matrix(const std::string& name, std::size_t rows, std::size_t cols) const {
    return keep(src_->tensor(name, {rows, cols}), rows, cols);
  }

  /// A 1x1 Conv1d stored [out][in][1], as a matrix.
  kernels::cpu::WeightMatrix pointwise(const std::string& name, std::size_t out, std::size_t in) const {
    return keep(src_->tensor(name, {out, in, 1}), out, in);
  }

  Qwen3TtsConv conv(const std::string& prefix, std::uint32_t in, std::uint32_t out, std::uint32_t kernel,
                    std::uint32_t dilation = 1) const {
    Qwen3TtsConv c;
    c.in = in, c.out = out, c.kernel = kernel, c.dilation = dilation;
    // torch's [out][in][kernel] to tap-major [out][kernel][in]: an im2col row
    // is then the kernel's input rows one after another (whole-row copies).
    const std::vector<float> w = src_->tensor(prefix + ".weight", {out, in, kernel});
    std::vector<float> t(w.size());
    for (std::size_t o = 0; o < out; ++o)
      for (std::size_t i = 0; i < in; ++i)
        for (std::size_t j = 0; j < kernel; ++j) t[(o * kernel + j) * in + i] = w[(o * in + i) * kernel + j];
    c.weight = keep(std::move(t), out, std::size_t{in} * kernel);
    c.bias = vector(prefix + ".bias", out);
    return c;
  }

  /// torch's ConvTranspose1d weight [in][out][kernel], transposed to tap-major
  /// [kernel × out][in]: one matmul row of products holds each tap's output
  /// row contiguously, so the overlap-add adds whole rows.
  Qwen3TtsTransposedConv transposed_conv(const std::string& prefix, std::uint32_t in, std::uint32_t out,
                                         std::uint32_t kernel, std::uint32_t stride) const {
    Qwen3TtsTransposedConv c;
    c.in = in, c.out = out, c.kernel = kernel, c.stride = stride;
    const std::vector<float> w = src_->tensor(prefix + ".weight", {in, out, kernel});
    std::vector<float> t(w.size());
    for (std::size_t i = 0; i < in; ++i)
      for (std::size_t o = 0; o < out; ++o)
        for (std::size_t j = 0; j < kernel; ++j) t[(j * out + o) * in + i] = w[(i * out + o) * kernel + j];
    c.weight = keep(std::move(t), std::size_t{out} * kernel, in);
    c.bias = vector(prefix + ".bias", out);
    return c;
  }

  Qwen3TtsSnake snake(const std::string& prefix, std::size_t channels) const {
    Qwen3TtsSnake s;
    s.alpha_exp = vector(prefix + ".alpha", channels);
    s.inv_beta = vector(prefix + ".beta", channels);
    if (src_->folded_snake()) return s;
    for (float& a : s.alpha_exp) a = std::exp(a);
    for (float& b : s.inv_beta) b = 1.0f / (std::exp(b) + 1e-9f);
    return s;
  }

  /// embedding_sum / max(cluster_usage, 1e-5), appended to `out`.
  void codebook(const std::string& prefix, std::size_t q, std::size_t size, std::size_t dim, std::vector<float>& out) const {
    if (std::vector<float> stored = src_->dequantised_codebook(q, size, dim); !stored.empty()) {
      out.insert(out.end(), stored.begin(), stored.end());
      return;
    }
    const std::vector<float> sum = src_->tensor(prefix + "._codebook.embedding_sum", {size, dim});
    const std::vector<float> usage = vector(prefix + "._codebook.cluster_usage", size);
    for (std::size_t r = 0; r < size; ++r) {
      const float u = std::max(usage[r], 1e-5f);
      for (std::size_t i = 0; i < dim; ++i) out.push_back(sum[r * dim + i] / u);
    }
  }

 private:
  kernels::cpu::WeightMatrix keep(std::vector<float> values, std::size_t rows, std::size_t cols) const {
    arena_->push_back(std::move(values));
    return {DType::f32, rows, cols, arena_->back().data()};
  }
  const Qwen3TtsCodecSource* src_;
  std::vector<std::vector<float>>* arena_;
};

IZWI_DECL void load_qwen3_tts_codec_transformer(const Qwen3TtsCodecLoader& l, const Qwen3TtsCodecConfig& c,
                                             Qwen3TtsCodecWeights& w) {
  const std::string p = "decoder.pre_transformer.";
  const std::size_t q = std::size_t{c.num_heads} * c.head_dim, kv = std::size_t{c.num_kv_heads} * c.head_dim;
  w.input_proj = l.matrix(p + "input_proj.weight", c.hidden_size, c.latent_dim);
  w.input_proj_bias = l.vector(p + "input_proj.bias", c.hidden_size);
  w.output_proj = l.matrix(p + "output_proj.weight", c.latent_dim, c.hidden_size);
  w.output_proj_bias = l.vector(p + "output_proj.bias", c.latent_dim);
  w.final_norm = l.vector(p + "norm.weight", c.hidden_size);
  for (std::uint32_t i = 0; i < c.num_layers; ++i) {
    const std::string lp = p + "layers." + std::to_string(i) + ".";
    Qwen3TtsCodecLayerWeights layer;
    layer.attn_norm = l.vector(lp + "input_layernorm.weight", c.hidden_size);
    layer.mlp_norm = l.vector(lp + "post_attention_layernorm.weight", c.hidden_size);
    layer.attn_scale = l.vector(lp + "self_attn_layer_scale.scale", c.hidden_size);
    layer.mlp_scale = l.vector(lp + "mlp_layer_scale.scale", c.hidden_size);
    layer.q_proj = l.matrix(lp + "self_attn.q_proj.weight", q, c.hidden_size);
    layer.k_proj = l.matrix(lp + "self_attn.k_proj.weight", kv, c.hidden_size);
    layer.v_proj = l.matrix(lp + "self_attn.v_proj.weight", kv, c.hidden_size);
    layer.o_proj = l.matrix(lp + "self_attn.o_proj.weight", c.hidden_size, q);
    layer.gate_proj = l.matrix(lp + "mlp.gate_proj.weight", c.intermediate_size, c.hidden_size);
    layer.up_proj = l.matrix(lp + "mlp.up_proj.weight", c.intermediate_size, c.hidden_size);
    layer.down_proj = l.matrix(lp + "mlp.down_proj.weight", c.hidden_size, c.intermediate_size);
    w.layers.push_back(std::move(layer));
  }
}

IZWI_DECL void load_qwen3_tts_codec_upsampling(const Qwen3TtsCodecLoader& l, const Qwen3TtsCodecConfig& c,
                                            Qwen3TtsCodecWeights& w) {
  const std::uint32_t d = c.latent_dim;
  for (std::size_t b = 0; b < c.upsampling_ratios.size(); ++b) {
    const std::string p = "decoder.upsample." + std::to_string(b) + ".";
    const std::uint32_t r = c.upsampling_ratios[b];
    Qwen3TtsUpsampleStage s;
    s.upsample = l.transposed_conv(p + "0.conv", d, d, r, r);
    const std::vector<float> dw = l.values(p + "1.dwconv.conv.weight", {d, 1, 7});
    s.dwconv_weight.resize(dw.size());  // [channels][7] -> [7][channels]: each tap a contiguous row
    for (std::size_t ch = 0; ch < d; ++ch)
      for (std::size_t j = 0; j < 7; ++j) s.dwconv_weight[j * d + ch] = dw[ch * 7 + j];
    s.dwconv_bias = l.vector(p + "1.dwconv.conv.bias", d);
    s.norm_weight = l.vector(p + "1.norm.weight", d);
    s.norm_bias = l.vector(p + "1.norm.bias", d);
    s.pwconv1 = l.matrix(p + "1.pwconv1.weight", std::size_t{4} * d, d);
    s.pwconv1_bias = l.vector(p + "1.pwconv1.bias", std::size_t{4} * d);
    s.pwconv2 = l.matrix(p + "1.pwconv2.weight", d, std::size_t{4} * d);
    s.pwconv2_bias = l.vector(p + "1.pwconv2.bias", d);
    s.gamma = l.vector(p + "1.gamma", d);
    w.upsample.push_back(std::move(s));
  }
}

IZWI_DECL void load_qwen3_tts_codec_blocks(const Qwen3TtsCodecLoader& l, const Qwen3TtsCodecConfig& c,
                                        Qwen3TtsCodecWeights& w) {
  w.decoder_entry = l.conv("decoder.decoder.0.conv", c.latent_dim, c.decoder_dim, 7);
  constexpr std::uint32_t dilations[3] = {1, 3, 9};
  std::uint32_t channels = c.decoder_dim;
  for (std::size_t b = 0; b < c.upsample_rates.size(); ++b) {
    const std::string p = "decoder.decoder." + std::to_string(b + 1) + ".block.";
    const std::uint32_t r = c.upsample_rates[b], out = channels / 2;
    Qwen3TtsDecoderBlock block;
    block.snake = l.snake(p + "0", channels);
    block.upsample = l.transposed_conv(p + "1.conv", channels, out, 2 * r, r);
    for (std::size_t u = 0; u < 3; ++u) {
      const std::string up = p + std::to_string(u + 2) + ".";
      block.residual[u].act1 = l.snake(up + "act1", out);
      block.residual[u].conv1 = l.conv(up + "conv1.conv", out, out, 7, dilations[u]);
      block.residual[u].act2 = l.snake(up + "act2", out);
      block.residual[u].conv2 = l.conv(up + "conv2.conv", out, out, 1);
    }
    w.blocks.push_back(std::move(block));
    channels = out;
  }
  const std::string last = "decoder.decoder." + std::to_string(c.upsample_rates.size() + 1);
  const std::string conv = "decoder.decoder." + std::to_string(c.upsample_rates.size() + 2) + ".conv";
  w.final_snake = l.snake(last, channels);
  w.final_conv = l.conv(conv, channels, 1, 7);
}

IZWI_DECL void load_qwen3_tts_codec_quantizer(const Qwen3TtsCodecLoader& l, const Qwen3TtsCodecConfig& c,
                                           Qwen3TtsCodecWeights& w) {
  const std::size_t half = c.codebook_dim / 2;
  w.codebooks.reserve(std::size_t{c.num_quantizers} * c.codebook_size * half);
  l.codebook("decoder.quantizer.rvq_first.vq.layers.0", 0, c.codebook_size, half, w.codebooks);
  for (std::uint32_t q = 0; q + 1 < c.num_quantizers; ++q)
    l.codebook("decoder.quantizer.rvq_rest.vq.layers." + std::to_string(q), q + 1, c.codebook_size, half, w.codebooks);
  w.first_output_proj = l.pointwise("decoder.quantizer.rvq_first.output_proj.weight", c.codebook_dim, half);
  w.rest_output_proj = l.pointwise("decoder.quantizer.rvq_rest.output_proj.weight", c.codebook_dim, half);
  w.pre_conv = l.conv("decoder.pre_conv.conv", c.codebook_dim, c.latent_dim, 3);
}

}  // namespace izwi::detail

namespace izwi {

IZWI_DECL Qwen3TtsCodecDecoder Qwen3TtsCodecDecoder::load(const std::filesystem::path& speech_tokenizer_dir,
                                                       Qwen3TtsCodecPrecision precision) {
  const io::ModelDirectory dir = io::ModelDirectory::open(speech_tokenizer_dir);
  return from_source(detail::Qwen3TtsCodecDirectorySource(dir),
                     Qwen3TtsCodecConfig::read(speech_tokenizer_dir / "config.json"), precision);
}

namespace detail {

/// Packs every matrix the decoder multiplies with the GEMM into
/// kernels::cpu::GemmPanels (all but the 1-channel final convolution's,
/// which takes the dot-product path): once here instead of on every decode
/// call. The panels replace the row-major f32 copies, each freed from the
/// arena as soon as it is packed (its view's data set to null), so the
/// decoder's memory stays that of its f32 weights, at load too. With
/// `decoder_bf16`, the convolutional decoder's matrices (entry and blocks)
/// are packed as bf16 tiles (AMX's layout, which the vdpbf16ps kernel reads
/// too) instead.
IZWI_DECL void pack_qwen3_tts_codec_panels(Qwen3TtsCodecWeights& w, std::vector<std::vector<float>>& arena,
                                        bool decoder_bf16) {
  using Owner = std::pair<const void*, std::vector<float>*>;  // a view's address and its arena entry
  std::vector<Owner> owners;
  for (std::vector<float>& values : arena) owners.emplace_back(values.data(), &values);
  std::sort(owners.begin(), owners.end());
  auto pack = [&](kernels::cpu::WeightMatrix& m, kernels::cpu::GemmPanels& panels, bool bf16 = false) {
    panels = bf16 ? kernels::cpu::pack_gemm_panels_bf16(m) : kernels::cpu::pack_gemm_panels(m);
    const auto it = std::lower_bound(owners.begin(), owners.end(), Owner{m.data, nullptr});
    if (it != owners.end() && it->first == m.data) std::vector<float>().swap(*it->second);
    m.data = nullptr;
  };
  pack(w.first_output_proj, w.first_output_proj_panels);
  pack(w.rest_output_proj, w.rest_output_proj_panels);
  pack(w.pre_conv.weight, w.pre_conv.panels);
  pack(w.input_proj, w.input_proj_panels);
  pack(w.output_proj, w.output_proj_panels);
  for (Qwen3TtsCodecLayerWeights& l : w.layers) {
    pack(l.q_proj, l.q_panels);
    pack(l.k_proj, l.k_panels);
    pack(l.v_proj, l.v_panels);
    pack(l.o_proj, l.o_panels);
    pack(l.gate_proj, l.gate_panels);
    pack(l.up_proj, l.up_panels);
    pack(l.down_proj, l.down_panels);
  }
  for (Qwen3TtsUpsampleStage& u : w.upsample) {
    pack(u.upsample.weight, u.upsample.panels);
    pack(u.pwconv1, u.pwconv1_panels);
    pack(u.pwconv2, u.pwconv2_panels);
  }
  pack(w.decoder_entry.weight, w.decoder_entry.panels, decoder_bf16);
  for (Qwen3TtsDecoderBlock& b : w.blocks) {
    pack(b.upsample.weight, b.upsample.panels, decoder_bf16);
    for (Qwen3TtsResidualUnit& u : b.residual) {
      pack(u.conv1.weight, u.conv1.panels, decoder_bf16);
      pack(u.conv2.weight, u.conv2.panels, decoder_bf16);
    }
  }
}

}  // namespace detail

IZWI_DECL Qwen3TtsCodecDecoder Qwen3TtsCodecDecoder::from_source(const detail::Qwen3TtsCodecSource& source,
                                                              const Qwen3TtsCodecConfig& config,
                                                              Qwen3TtsCodecPrecision precision) {
  Qwen3TtsCodecDecoder d;
  d.config_ = config;
  const bool bf16 = precision == Qwen3TtsCodecPrecision::bf16 && kernels::cpu::conv1d_bf16_available();
  d.precision_ = bf16 ? Qwen3TtsCodecPrecision::bf16 : Qwen3TtsCodecPrecision::f32;
  auto storage = std::make_shared<std::vector<std::vector<float>>>();
  auto weights = std::make_shared<Qwen3TtsCodecWeights>();
  const detail::Qwen3TtsCodecLoader loader(source, *storage);
  detail::load_qwen3_tts_codec_quantizer(loader, d.config_, *weights);
  detail::load_qwen3_tts_codec_transformer(loader, d.config_, *weights);
  detail::load_qwen3_tts_codec_upsampling(loader, d.config_, *weights);
  detail::load_qwen3_tts_codec_blocks(loader, d.config_, *weights);
  detail::pack_qwen3_tts_codec_panels(*weights, *storage, bf16);
  d.weights_ = std::move(weights);
  d.storage_ = std::move(storage);
  d.scratch_ = std::make_shared<detail::Qwen3TtsCodecScratchCache>();
  return d;
}

}  // namespace izwi
