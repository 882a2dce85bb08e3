#pragma once
// Qwen3TtsSpeechEncoder: config, loading (encoder.* of speech_tokenizer/) and
// the forward pass (SEANet, transformer, downsample, split RVQ).
// Inline in header-only builds; compiled once, in <izwi/src.hpp>, under
// IZWI_SEPARATE_COMPILATION (see izwi/config.hpp).

#include "izwi/config.hpp"
#include "izwi/models/qwen3_tts_speech_encoder.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "izwi/audio/resample.hpp"
#include "izwi/core/error.hpp"
#include "izwi/io/json.hpp"
#include "izwi/io/model_directory.hpp"
#include "izwi/kernels/cpu/elementwise.hpp"
#include "izwi/kernels/cpu/matmul.hpp"

namespace izwi {

IZWI_DECL std::size_t Qwen3TtsSpeechEncoderConfig::hop() const noexcept {
  std::size_t h = 1;
  for (std::uint32_t r : upsampling_ratios) h *= r;
  return h;
}

IZWI_DECL std::uint32_t Qwen3TtsSpeechEncoderConfig::downsample_stride() const noexcept {
  // MimiModel: a downsample exists when frame_rate differs from the SEANet's rate; stride 2.
  const double seanet_rate = static_cast<double>(sample_rate) / static_cast<double>(hop());
  return std::abs(seanet_rate - frame_rate) > 1e-9 ? 2u : 1u;
}

IZWI_DECL Qwen3TtsSpeechEncoderConfig Qwen3TtsSpeechEncoderConfig::from(const io::ConfigView& root) {
  const io::ConfigView e = root.object("encoder_config");
  Qwen3TtsSpeechEncoderConfig c;
  c.sample_rate = e.optional<std::uint32_t>("sampling_rate", root.optional<std::uint32_t>("input_sample_rate", c.sample_rate));
  c.num_filters = e.optional<std::uint32_t>("num_filters", c.num_filters);
  c.kernel_size = e.optional<std::uint32_t>("kernel_size", c.kernel_size);
  c.residual_kernel_size = e.optional<std::uint32_t>("residual_kernel_size", c.residual_kernel_size);
  c.last_kernel_size = e.optional<std::uint32_t>("last_kernel_size", c.last_kernel_size);
  c.num_residual_layers = e.optional<std::uint32_t>("num_residual_layers", c.num_residual_layers);
  c.dilation_growth_rate = e.optional<std::uint32_t>("dilation_growth_rate", c.dilation_growth_rate);
  c.compress = e.optional<std::uint32_t>("compress", c.compress);
  c.upsampling_ratios = e.optional<std::vector<std::uint32_t>>("upsampling_ratios", c.upsampling_ratios);
  c.hidden_size = e.optional<std::uint32_t>("hidden_size", c.hidden_size);
  c.num_layers = e.optional<std::uint32_t>("num_hidden_layers", c.num_layers);
  c.num_heads = e.optional<std::uint32_t>("num_attention_heads", c.num_heads);
  c.num_kv_heads = e.optional<std::uint32_t>("num_key_value_heads", c.num_heads);
  c.head_dim = e.optional<std::uint32_t>("head_dim", c.num_heads ? c.hidden_size / c.num_heads : 0);
  c.intermediate_size = e.optional<std::uint32_t>("intermediate_size", c.intermediate_size);
  c.norm_eps = e.optional<double>("norm_eps", c.norm_eps);
  c.rope_theta = e.optional<double>("rope_theta", c.rope_theta);
  c.frame_rate = e.optional<double>("frame_rate", e.optional<double>("_frame_rate", c.frame_rate));
  c.codebook_size = e.optional<std::uint32_t>("codebook_size", c.codebook_size);
  c.codebook_dim = e.optional<std::uint32_t>("codebook_dim", c.hidden_size);
  c.quantizer_dim = e.optional<std::uint32_t>("vector_quantization_hidden_dimension", c.hidden_size);
  c.num_quantizers = e.optional<std::uint32_t>("num_quantizers", c.num_quantizers);
  c.num_semantic_quantizers = e.optional<std::uint32_t>("num_semantic_quantizers", c.num_semantic_quantizers);
  c.valid_quantizers = root.optional<std::uint32_t>("encoder_valid_num_quantizers", c.valid_quantizers);
  // What izwi implements of MimiConfig; anything else is refused by name.
  if (e.optional<std::uint32_t>("audio_channels", 1) != 1)
    throw e.make_error("audio_channels", "the speech encoder reads mono audio only");
  if (!e.optional<bool>("use_causal_conv", true))
    throw e.make_error("use_causal_conv", "only causal convolutions are implemented");
  if (const std::string pad = e.optional<std::string>("pad_mode", "constant"); pad != "constant")
    throw e.make_error("pad_mode", "only constant (zero) padding is implemented, not '" + pad + "'");
  if (e.optional<bool>("use_conv_shortcut", false))
    throw e.make_error("use_conv_shortcut", "residual blocks with a conv shortcut are not implemented");
  if (const std::string act = e.optional<std::string>("hidden_act", "gelu"); act != "gelu")
    throw e.make_error("hidden_act", "the encoder transformer uses gelu; this checkpoint says '" + act + "'");
  if (e.optional<bool>("attention_bias", false))
    throw e.make_error("attention_bias", "the encoder transformer has no attention bias; this checkpoint does");
  if (const auto rate = root.optional<std::uint32_t>("encode_downsample_rate");
      rate && *rate != c.samples_per_frame())
    throw root.make_error("encode_downsample_rate", "is " + std::to_string(*rate) + " but the encoder's strides give " +
                                                        std::to_string(c.samples_per_frame()) + " samples per frame");
  c.validate();
  return c;
}

IZWI_DECL void Qwen3TtsSpeechEncoderConfig::validate() const {
  auto positive = [](std::uint64_t v, const char* field) {
    if (v == 0) throw invalid_argument(field, std::string("Qwen3-TTS speech encoder: ") + field + " must be positive");
  };
  positive(sample_rate, "sampling_rate"), positive(num_filters, "num_filters"), positive(kernel_size, "kernel_size");
  positive(residual_kernel_size, "residual_kernel_size"), positive(last_kernel_size, "last_kernel_size");
  positive(compress, "compress"), positive(hidden_size, "hidden_size"), positive(num_heads, "num_attention_heads");
  positive(num_kv_heads, "num_key_value_heads"), positive(head_dim, "head_dim");
  positive(intermediate_size, "intermediate_size"), positive(codebook_size, "codebook_size");
  positive(codebook_dim, "codebook_dim"), positive(num_semantic_quantizers, "num_semantic_quantizers");
  positive(upsampling_ratios.size(), "upsampling_ratios");
  for (std::uint32_t r : upsampling_ratios) positive(r, "upsampling_ratios");
  if (num_heads % num_kv_heads != 0)
    throw invalid_argument("num_key_value_heads", "Qwen3-TTS speech encoder: num_attention_heads must be a multiple of it");
  if (head_dim % 2 != 0) throw invalid_argument("head_dim", "Qwen3-TTS speech encoder: RoPE needs an even head_dim");
  if (codebook_dim != quantizer_dim)
    throw invalid_argument("codebook_dim", "Qwen3-TTS speech encoder: codebook_dim must equal "
                                           "vector_quantization_hidden_dimension");
  if (valid_quantizers < num_semantic_quantizers || valid_quantizers > num_quantizers)
    throw invalid_argument("encoder_valid_num_quantizers",
                           "Qwen3-TTS speech encoder: must lie between num_semantic_quantizers and num_quantizers");
  if ((num_filters << upsampling_ratios.size()) % compress != 0 || num_filters % compress != 0)
    throw invalid_argument("compress", "Qwen3-TTS speech encoder: the channels must divide by compress");
}

namespace detail {

/// One causal MimiConv1d, kernel reordered tap-major ([out][kernel][in]) so an
/// unfolded row is the taps' input rows one after another.
struct Qwen3TtsEncoderConv {
  std::uint32_t in = 0, out = 0, kernel = 1, stride = 1, dilation = 1;
  bool replicate = false;  ///< pad with the edge frames (the downsample) instead of zeros
  std::vector<float> weight;
  std::vector<float> bias;  ///< empty: none
};

struct Qwen3TtsEncoderResidual {
  Qwen3TtsEncoderConv conv1, conv2;  ///< k3 → C / compress, k1 → C
};

/// The SEANet in model order: a stage is its residual blocks then its strided conv.
struct Qwen3TtsEncoderStage {
  std::vector<Qwen3TtsEncoderResidual> residuals;
  Qwen3TtsEncoderConv down;
};

struct Qwen3TtsEncoderLayer {
  std::vector<float> norm1_w, norm1_b, norm2_w, norm2_b, attn_scale, mlp_scale;
  std::vector<float> q, k, v, o, fc1, fc2;  ///< [out][in] each
};

struct Qwen3TtsSpeechEncoderWeights {
  Qwen3TtsEncoderConv first, last, downsample;
  std::vector<Qwen3TtsEncoderStage> stages;
  std::vector<Qwen3TtsEncoderLayer> layers;
  /// input_proj [quantizer_dim][hidden] of the semantic and acoustic RVQs.
  std::vector<float> semantic_proj, acoustic_proj;
  /// Centroids [valid_quantizers][codebook_size][codebook_dim] and their squared norms.
  std::vector<float> centroids, centroid_norms;
};

IZWI_DECL kernels::cpu::WeightMatrix f32_matrix(const std::vector<float>& w, std::size_t rows, std::size_t cols) {
  return {DType::f32, rows, cols, w.data()};
}

/// y[ceil(frames / stride)][out] = the causal conv of x[frames][in], padded as
/// MimiConv1d pads: (k−1)·d+1 − stride rows on the left, and on the right
/// what completes the last stride. Unfolds at most ~4M floats at a time.
IZWI_DECL void encoder_conv(const Qwen3TtsEncoderConv& c, const float* x, std::size_t frames, std::vector<float>& y,
                         ThreadPool& pool, std::vector<float>& unfolded) {
  const std::size_t k = c.kernel, in = c.in, s = c.stride, out_frames = (frames + s - 1) / s;
  const auto left = static_cast<std::ptrdiff_t>((k - 1) * c.dilation + 1) - static_cast<std::ptrdiff_t>(s);
  const std::size_t row = k * in, chunk = std::max<std::size_t>(1, (std::size_t{1} << 22) / row);
  y.resize(out_frames * c.out);
  const kernels::cpu::WeightMatrix w = f32_matrix(c.weight, c.out, row);
  for (std::size_t t0 = 0; t0 < out_frames; t0 += chunk) {
    const std::size_t n = std::min(chunk, out_frames - t0);
    unfolded.resize(n * row);
    for (std::size_t t = 0; t < n; ++t)
      for (std::size_t j = 0; j < k; ++j) {
        std::ptrdiff_t at = static_cast<std::ptrdiff_t>((t0 + t) * s + j * c.dilation) - left;
        float* dst = unfolded.data() + t * row + j * in;
        if (c.replicate) at = std::clamp<std::ptrdiff_t>(at, 0, static_cast<std::ptrdiff_t>(frames) - 1);
        if (at < 0 || at >= static_cast<std::ptrdiff_t>(frames)) std::fill_n(dst, in, 0.0f);
        else std::memcpy(dst, x + static_cast<std::size_t>(at) * in, in * sizeof(float));
      }
    kernels::cpu::matmul_batch_invariant(unfolded.data(), n, row, w, y.data() + t0 * c.out, pool);
  }
  if (!c.bias.empty())
    for (std::size_t t = 0; t < out_frames; ++t)
      for (std::size_t o = 0; o < c.out; ++o) y[t * c.out + o] += c.bias[o];
}

IZWI_DECL void elu(const float* x, float* y, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : std::expm1(x[i]);
}

/// The transformer's attention on x[T][hidden] (already normed), causal over
/// all earlier frames, RoPE (rotate-half) at positions 0..T-1; result in `out`.
IZWI_DECL void encoder_attention(const Qwen3TtsSpeechEncoderConfig& c, const Qwen3TtsEncoderLayer& l, const float* x,
                              std::size_t T, float* out, ThreadPool& pool, std::vector<float>& scratch) {
  const std::size_t h = c.hidden_size, hd = c.head_dim, q_w = std::size_t{c.num_heads} * hd,
                    kv_w = std::size_t{c.num_kv_heads} * hd, half = hd / 2, group = c.num_heads / c.num_kv_heads;
  scratch.resize(T * (q_w + 2 * kv_w + q_w) + T);
  float *q = scratch.data(), *k = q + T * q_w, *v = k + T * kv_w, *ctx = v + T * kv_w, *p = ctx + T * q_w;
  kernels::cpu::matmul_batch_invariant(x, T, h, f32_matrix(l.q, q_w, h), q, pool);
  kernels::cpu::matmul_batch_invariant(x, T, h, f32_matrix(l.k, kv_w, h), k, pool);
  kernels::cpu::matmul_batch_invariant(x, T, h, f32_matrix(l.v, kv_w, h), v, pool);
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t i = 0; i < half; ++i) {
      const double inv_freq = std::pow(c.rope_theta, -2.0 * static_cast<double>(i) / static_cast<double>(hd));
      const float angle = static_cast<float>(static_cast<float>(t) * static_cast<float>(inv_freq));
      const float cs = std::cos(angle), sn = std::sin(angle);
      auto rotate = [&](float* head) {
        const float a = head[i], b = head[i + half];
        head[i] = a * cs - b * sn, head[i + half] = b * cs + a * sn;
      };
      for (std::size_t hh = 0; hh < c.num_heads; ++hh) rotate(q + t * q_w + hh * hd);
      for (std::size_t hh = 0; hh < c.num_kv_heads; ++hh) rotate(k + t * kv_w + hh * hd);
    }
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (std::size_t hh = 0; hh < c.num_heads; ++hh) {
    const std::size_t kvh = hh / group;
    for (std::size_t t = 0; t < T; ++t) {
      const float* qr = q + t * q_w + hh * hd;
      float best = -std::numeric_limits<float>::infinity();
      for (std::size_t u = 0; u <= t; ++u) {
        const float* kr = k + u * kv_w + kvh * hd;
        float dot = 0.0f;
        for (std::size_t d = 0; d < hd; ++d) dot += qr[d] * kr[d];
        p[u] = dot * scale;
        best = std::max(best, p[u]);
      }
      double sum = 0.0;
      for (std::size_t u = 0; u <= t; ++u) sum += (p[u] = std::exp(p[u] - best));
      float* o = ctx + t * q_w + hh * hd;
      std::fill_n(o, hd, 0.0f);
      for (std::size_t u = 0; u <= t; ++u) {
        const float wgt = static_cast<float>(p[u] / sum);
        const float* vr = v + u * kv_w + kvh * hd;
        for (std::size_t d = 0; d < hd; ++d) o[d] += wgt * vr[d];
      }
    }
  }
  kernels::cpu::matmul_batch_invariant(ctx, T, q_w, f32_matrix(l.o, h, q_w), out, pool);
}

IZWI_DECL void encoder_layer(const Qwen3TtsSpeechEncoderConfig& c, const Qwen3TtsEncoderLayer& l, std::vector<float>& x,
                          std::size_t T, ThreadPool& pool, std::vector<float>& scratch) {
  const std::size_t h = c.hidden_size, f = c.intermediate_size;
  const auto eps = static_cast<float>(c.norm_eps);
  std::vector<float> normed(T * h), branch(T * std::max(h, f)), wide(T * f);
  kernels::cpu::layer_norm(x.data(), h, T, h, l.norm1_w.data(), l.norm1_b.data(), eps, normed.data(), h);
  encoder_attention(c, l, normed.data(), T, branch.data(), pool, scratch);
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t i = 0; i < h; ++i) x[t * h + i] += l.attn_scale[i] * branch[t * h + i];
  kernels::cpu::layer_norm(x.data(), h, T, h, l.norm2_w.data(), l.norm2_b.data(), eps, normed.data(), h);
  kernels::cpu::matmul_batch_invariant(normed.data(), T, h, f32_matrix(l.fc1, f, h), wide.data(), pool);
  for (float& g : wide) g = 0.5f * g * (1.0f + std::erf(g * 0.70710678118654752f));  // exact GELU, per element
  kernels::cpu::matmul_batch_invariant(wide.data(), T, f, f32_matrix(l.fc2, h, f), branch.data(), pool);
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t i = 0; i < h; ++i) x[t * h + i] += l.mlp_scale[i] * branch[t * h + i];
}

/// Codes of one RVQ (its input projection applied to x[T][hidden]): codebooks
/// [first, first + count) of the centroids, each the nearest to the residual.
IZWI_DECL void encoder_rvq(const Qwen3TtsSpeechEncoderConfig& c, const Qwen3TtsSpeechEncoderWeights& w,
                        const std::vector<float>& proj, const float* x, std::size_t T, std::size_t first,
                        std::size_t count, std::int32_t* codes, ThreadPool& pool) {
  const std::size_t d = c.codebook_dim, n = c.codebook_size, groups = c.valid_quantizers;
  std::vector<float> residual(T * d), dots(T * n);
  kernels::cpu::matmul_batch_invariant(x, T, c.hidden_size, f32_matrix(proj, d, c.hidden_size), residual.data(), pool);
  for (std::size_t q = first; q < first + count; ++q) {
    const float* centroids = w.centroids.data() + q * n * d;
    const float* norms = w.centroid_norms.data() + q * n;
    // argmin ‖r − e‖² = argmin ‖e‖² − 2 r·e (torch.cdist takes the same matmul route).
    const kernels::cpu::WeightMatrix codebook{DType::f32, n, d, centroids};
    kernels::cpu::matmul_batch_invariant(residual.data(), T, d, codebook, dots.data(), pool);
    for (std::size_t t = 0; t < T; ++t) {
      std::size_t best = 0;
      float best_d = std::numeric_limits<float>::infinity();
      for (std::size_t i = 0; i < n; ++i)
        if (const float dist = norms[i] - 2.0f * dots[t * n + i]; dist < best_d) best_d = dist, best = i;
      codes[t * groups + q] = static_cast<std::int32_t>(best);
      float* r = residual.data() + t * d;
      for (std::size_t j = 0; j < d; ++j) r[j] -= centroids[best * d + j];
    }
  }
}

}  // namespace detail

IZWI_DECL std::size_t Qwen3TtsSpeechEncoder::frames(std::size_t n) const noexcept {
  const std::size_t s = config_.samples_per_frame();
  return (n + s - 1) / s;
}

IZWI_DECL std::vector<float> Qwen3TtsSpeechEncoder::latent(std::span<const float> pcm, detail::ThreadPool& pool) const {
  const Qwen3TtsSpeechEncoderConfig& c = config_;
  const detail::Qwen3TtsSpeechEncoderWeights& w = *weights_;
  if (pcm.empty()) throw invalid_argument("reference_audio", "the reference audio is empty");
  std::vector<float> x(pcm.begin(), pcm.end()), y, unfolded;
  std::size_t T = pcm.size();
  auto conv = [&](const detail::Qwen3TtsEncoderConv& cv, const std::vector<float>& in) {
    detail::encoder_conv(cv, in.data(), T, y, pool, unfolded);
    T = (T + cv.stride - 1) / cv.stride;
  };
  conv(w.first, x), x.swap(y);
  std::vector<float> act, hidden;
  for (const detail::Qwen3TtsEncoderStage& stage : w.stages) {
    for (const detail::Qwen3TtsEncoderResidual& r : stage.residuals) {
      act.resize(x.size());
      detail::elu(x.data(), act.data(), x.size());
      conv(r.conv1, act);
      act.resize(y.size());
      detail::elu(y.data(), act.data(), y.size());
      conv(r.conv2, act);
      for (std::size_t i = 0; i < x.size(); ++i) x[i] += y[i];
    }
    act.resize(x.size());
    detail::elu(x.data(), act.data(), x.size());
    conv(stage.down, act), x.swap(y);
  }
  act.resize(x.size());
  detail::elu(x.data(), act.data(), x.size());
  conv(w.last, act), x.swap(y);
  std::vector<float> scratch;
  for (const detail::Qwen3TtsEncoderLayer& l : w.layers) detail::encoder_layer(c, l, x, T, pool, scratch);
  if (c.downsample_stride() > 1) conv(w.downsample, x), x.swap(y);
  x.resize(T * c.hidden_size);
  return x;
}

IZWI_DECL std::vector<std::int32_t> Qwen3TtsSpeechEncoder::quantize(std::span<const float> latent,
                                                                 detail::ThreadPool& pool) const {
  const Qwen3TtsSpeechEncoderConfig& c = config_;
  const detail::Qwen3TtsSpeechEncoderWeights& w = *weights_;
  if (latent.size() % c.hidden_size != 0)
    throw invalid_argument("latent", "the latent frames are not whole rows of " + std::to_string(c.hidden_size));
  const std::size_t T = latent.size() / c.hidden_size;
  std::vector<std::int32_t> codes(T * c.valid_quantizers);
  detail::encoder_rvq(c, w, w.semantic_proj, latent.data(), T, 0, c.num_semantic_quantizers, codes.data(), pool);
  detail::encoder_rvq(c, w, w.acoustic_proj, latent.data(), T, c.num_semantic_quantizers,
                      c.valid_quantizers - c.num_semantic_quantizers, codes.data(), pool);
  return codes;
}

IZWI_DECL std::vector<std::int32_t> Qwen3TtsSpeechEncoder::encode(std::span<const float> pcm, detail::ThreadPool& pool) const {
  return quantize(latent(pcm, pool), pool);
}

IZWI_DECL std::vector<std::int32_t> Qwen3TtsSpeechEncoder::encode(std::span<const float> pcm, std::uint32_t sample_rate,
                                                               detail::ThreadPool& pool) const {
  for (std::size_t i = 0; i < pcm.size(); ++i)
    if (!std::isfinite(pcm[i]))
      throw invalid_argument("reference_audio", "sample " + std::to_string(i) + " of the reference audio is not finite");
  if (pcm.empty()) throw invalid_argument("reference_audio", "the reference audio is empty");
  if (sample_rate == config_.sample_rate) return encode(pcm, pool);
  const std::vector<float> resampled = audio::resample(pcm, sample_rate, config_.sample_rate);
  return encode(resampled, pool);
}

namespace detail {

/// Reads the speech tokenizer's tensors as f32, refusing non-finite values,
/// and lays convolutions out as the encoder's kernels read them.
class Qwen3TtsSpeechEncoderReader {
 public:
  explicit Qwen3TtsSpeechEncoderReader(const io::ModelDirectory& dir) : dir_(dir) {}

  std::vector<float> tensor(const std::string& name, std::initializer_list<std::uint64_t> shape) const {
    std::vector<float> v = dir_.to_f32(name, shape);
    for (std::size_t i = 0; i < v.size(); ++i)
      if (!std::isfinite(v[i]))
        throw error(dir_.path().string() + ": tensor '" + name + "' holds a non-finite value at index " +
                    std::to_string(i) + "; the checkpoint is corrupt");
    return v;
  }

  /// `prefix`.conv.weight [out, in, k] stored as [out][k][in] (one GEMM row per output channel).
  Qwen3TtsEncoderConv conv(const std::string& prefix, std::uint32_t in, std::uint32_t out, std::uint32_t k,
                           std::uint32_t stride, std::uint32_t dilation, bool bias) const {
    Qwen3TtsEncoderConv cv;
    cv.in = in, cv.out = out, cv.kernel = k, cv.stride = stride, cv.dilation = dilation;
    const std::vector<float> t = tensor(prefix + ".conv.weight", {out, in, k});
    cv.weight.resize(t.size());
    for (std::size_t o = 0; o < out; ++o)
      for (std::size_t i = 0; i < in; ++i)
        for (std::size_t j = 0; j < k; ++j) cv.weight[(o * k + j) * in + i] = t[(o * in + i) * k + j];
    if (bias) cv.bias = tensor(prefix + ".conv.bias", {out});
    return cv;
  }

 private:
  const io::ModelDirectory& dir_;
};

// encoder.encoder.layers.i follows MimiEncoder's module list: conv, then per
// ratio (reversed) its residual blocks, an ELU and the strided conv, then an
// ELU and the last conv (ELUs hold no weights but take an index).
IZWI_DECL void load_encoder_convs(const Qwen3TtsSpeechEncoderReader& read, const Qwen3TtsSpeechEncoderConfig& c,
                               Qwen3TtsSpeechEncoderWeights& w) {
  std::size_t index = 0;
  auto layer = [&] { return "encoder.encoder.layers." + std::to_string(index++); };
  w.first = read.conv(layer(), 1, c.num_filters, c.kernel_size, 1, 1, true);
  std::uint32_t channels = c.num_filters;
  for (auto ratio = c.upsampling_ratios.rbegin(); ratio != c.upsampling_ratios.rend(); ++ratio) {
    Qwen3TtsEncoderStage stage;
    std::uint32_t dilation = 1;
    for (std::uint32_t j = 0; j < c.num_residual_layers; ++j, dilation *= c.dilation_growth_rate) {
      const std::string p = layer() + ".block.";
      stage.residuals.push_back(
          {read.conv(p + "1", channels, channels / c.compress, c.residual_kernel_size, 1, dilation, true),
           read.conv(p + "3", channels / c.compress, channels, 1, 1, 1, true)});
    }
    ++index;  // ELU
    stage.down = read.conv(layer(), channels, channels * 2, 2 * *ratio, *ratio, 1, true);
    channels *= 2;
    w.stages.push_back(std::move(stage));
  }
  ++index;  // ELU
  w.last = read.conv(layer(), channels, c.hidden_size, c.last_kernel_size, 1, 1, true);
  const std::uint32_t stride = c.downsample_stride();
  if (stride > 1) {
    w.downsample = read.conv("encoder.downsample", c.hidden_size, c.hidden_size, 2 * stride, stride, 1, false);
    w.downsample.replicate = true;
  }
}

IZWI_DECL void load_encoder_transformer(const Qwen3TtsSpeechEncoderReader& read, const Qwen3TtsSpeechEncoderConfig& c,
                                     Qwen3TtsSpeechEncoderWeights& w) {
  const std::uint64_t h = c.hidden_size, f = c.intermediate_size, q = std::uint64_t{c.num_heads} * c.head_dim,
                      kv = std::uint64_t{c.num_kv_heads} * c.head_dim;
  for (std::uint32_t l = 0; l < c.num_layers; ++l) {
    const std::string p = "encoder.encoder_transformer.layers." + std::to_string(l) + ".";
    Qwen3TtsEncoderLayer L;
    L.norm1_w = read.tensor(p + "input_layernorm.weight", {h}), L.norm1_b = read.tensor(p + "input_layernorm.bias", {h});
    L.norm2_w = read.tensor(p + "post_attention_layernorm.weight", {h});
    L.norm2_b = read.tensor(p + "post_attention_layernorm.bias", {h});
    L.attn_scale = read.tensor(p + "self_attn_layer_scale.scale", {h});
    L.mlp_scale = read.tensor(p + "mlp_layer_scale.scale", {h});
    L.q = read.tensor(p + "self_attn.q_proj.weight", {q, h}), L.k = read.tensor(p + "self_attn.k_proj.weight", {kv, h});
    L.v = read.tensor(p + "self_attn.v_proj.weight", {kv, h}), L.o = read.tensor(p + "self_attn.o_proj.weight", {h, q});
    L.fc1 = read.tensor(p + "mlp.fc1.weight", {f, h}), L.fc2 = read.tensor(p + "mlp.fc2.weight", {h, f});
    w.layers.push_back(std::move(L));
  }
}

// Codebook entries are embed_sum / max(cluster_usage, 1e-5), as Mimi's
// EuclideanCodebook computes them; their squared norms are kept for the
// nearest-centroid search.
IZWI_DECL void load_encoder_codebooks(const Qwen3TtsSpeechEncoderReader& read, const Qwen3TtsSpeechEncoderConfig& c,
                                   Qwen3TtsSpeechEncoderWeights& w) {
  const std::uint64_t h = c.hidden_size, d = c.codebook_dim, n = c.codebook_size;
  const std::string semantic = "encoder.quantizer.semantic_residual_vector_quantizer.",
                    acoustic = "encoder.quantizer.acoustic_residual_vector_quantizer.";
  if (c.quantizer_dim != c.hidden_size) {
    w.semantic_proj = read.tensor(semantic + "input_proj.weight", {d, h, 1});
    w.acoustic_proj = read.tensor(acoustic + "input_proj.weight", {d, h, 1});
  } else {  // no projection: the identity
    w.semantic_proj.assign(h * h, 0.0f);
    for (std::size_t i = 0; i < h; ++i) w.semantic_proj[i * h + i] = 1.0f;
    w.acoustic_proj = w.semantic_proj;
  }
  for (std::uint32_t qi = 0; qi < c.valid_quantizers; ++qi) {
    const bool sem = qi < c.num_semantic_quantizers;
    const std::string p = (sem ? semantic : acoustic) + "layers." +
                          std::to_string(sem ? qi : qi - c.num_semantic_quantizers) + ".codebook.";
    const std::vector<float> sum = read.tensor(p + "embed_sum", {n, d}), usage = read.tensor(p + "cluster_usage", {n});
    for (std::size_t i = 0; i < n; ++i) {
      const float u = std::max(usage[i], 1e-5f);
      double norm = 0.0;
      for (std::size_t j = 0; j < d; ++j) {
        const float e = sum[i * d + j] / u;
        w.centroids.push_back(e);
        norm += double(e) * e;
      }
      w.centroid_norms.push_back(static_cast<float>(norm));
    }
  }
}

}  // namespace detail

IZWI_DECL Qwen3TtsSpeechEncoder Qwen3TtsSpeechEncoder::load(const std::filesystem::path& speech_tokenizer_dir) {
  const std::filesystem::path config_json = speech_tokenizer_dir / "config.json";
  const io::JsonValue doc = io::read_json_file(config_json);
  const io::ConfigView root(doc, config_json.string());
  Qwen3TtsSpeechEncoder enc;
  enc.config_ = Qwen3TtsSpeechEncoderConfig::from(root);
  const io::ModelDirectory dir = io::ModelDirectory::open(speech_tokenizer_dir);
  const detail::Qwen3TtsSpeechEncoderReader read(dir);
  auto w = std::make_shared<detail::Qwen3TtsSpeechEncoderWeights>();
  detail::load_encoder_convs(read, enc.config_, *w);
  detail::load_encoder_transformer(read, enc.config_, *w);
  detail::load_encoder_codebooks(read, enc.config_, *w);
  enc.weights_ = std::move(w);
  return enc;
}

}  // namespace izwi
