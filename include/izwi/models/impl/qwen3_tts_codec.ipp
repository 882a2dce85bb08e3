#pragma once
// Qwen3TtsCodecDecoder's passes: the layers of qwen3_tts_codec.hpp's diagram
// over a batch of streams, each continuing from its carried state.
// Inline in header-only builds; compiled once, in <izwi/src.hpp>, under
// IZWI_SEPARATE_COMPILATION (see izwi/config.hpp).

#include "izwi/config.hpp"
#include "izwi/models/qwen3_tts_codec.hpp"

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "izwi/core/error.hpp"
#include "izwi/kernels/cpu/elementwise.hpp"
#include "izwi/models/detail/qwen3_tts_codec_ops.hpp"
#include "izwi/models/detail/whisper_cpu_math.hpp"

namespace izwi {

IZWI_DECL Qwen3TtsCodecState Qwen3TtsCodecDecoder::new_stream() const {
  const Qwen3TtsCodecWeights& w = *weights_;
  Qwen3TtsCodecState s;
  // Causal convolutions in the order a pass uses them (see detail::Qwen3TtsCodecPass).
  auto conv = [&](const Qwen3TtsConv& c) { s.conv_context.emplace_back(c.context_rows() * c.in, 0.0f); };
  conv(w.pre_conv);
  for (std::size_t i = 0; i < w.upsample.size(); ++i) s.conv_context.emplace_back(std::size_t{6} * config_.latent_dim, 0.0f);
  conv(w.decoder_entry);
  for (const Qwen3TtsDecoderBlock& b : w.blocks)
    for (const Qwen3TtsResidualUnit& u : b.residual) {
      conv(u.conv1);
      conv(u.conv2);
    }
  conv(w.final_conv);
  for (const Qwen3TtsUpsampleStage& u : w.upsample) s.overlap.emplace_back(u.upsample.overlap_rows() * u.upsample.out, 0.0f);
  for (const Qwen3TtsDecoderBlock& b : w.blocks) s.overlap.emplace_back(b.upsample.overlap_rows() * b.upsample.out, 0.0f);
  s.keys.resize(config_.num_layers);
  s.values.resize(config_.num_layers);
  return s;
}

namespace detail {

/// One decode call over a batch of streams, on a scratch set of the decoder's.
class Qwen3TtsCodecPass {
 public:
  Qwen3TtsCodecPass(const Qwen3TtsCodecConfig& c, const Qwen3TtsCodecWeights& w, ThreadPool& pool,
                    std::span<const Qwen3TtsCodecStream> streams, Qwen3TtsCodecScratch& scratch)
      : c_(c), w_(w), pool_(pool), streams_(streams), m_(scratch) {
    for (const Qwen3TtsCodecStream& s : streams) runs_.begin.push_back(runs_.rows() + s.codes.size() / c.num_quantizers);
  }

  void run() {
    if (runs_.rows() == 0) return;  // nothing to decode: every state stays as it is
    std::vector<float> latent(runs_.rows() * c_.latent_dim);
    {
      const std::vector<float> x = dequantise();
      conv(w_.pre_conv, x.data(), runs_, latent.data());
    }
    transformer(latent);
    // From here on the rows run at 2x, 4x, ... 1920x the frame rate: ping-pong
    // between the scratch's x and y (x holds the current activation).
    std::copy(latent.begin(), latent.end(), qwen3_tts_codec::grow(m_.x, latent.size()));
    qwen3_tts_codec::RowRuns runs = runs_;
    for (const Qwen3TtsUpsampleStage& stage : w_.upsample) {
      float* out = qwen3_tts_codec::grow(m_.y, runs.rows() * stage.upsample.stride * c_.latent_dim);
      transpose(stage.upsample, m_.x.data(), runs, out);
      runs = runs.scaled(stage.upsample.stride);
      convnext(stage, out, runs);
      m_.x.swap(m_.y);
    }
    // The entry convolution's bias is added by the first SnakeBeta's pass.
    conv(w_.decoder_entry, m_.x.data(), runs, qwen3_tts_codec::grow(m_.y, runs.rows() * c_.decoder_dim), false);
    m_.x.swap(m_.y);
    const float* pending_bias = w_.decoder_entry.bias.data();
    std::size_t channels = c_.decoder_dim;
    for (const Qwen3TtsDecoderBlock& block : w_.blocks) {
      qwen3_tts_codec::snake(block.snake, m_.x.data(), m_.x.data(), runs.rows(), channels, pending_bias, pool_);
      pending_bias = nullptr;
      float* out = qwen3_tts_codec::grow(m_.y, runs.rows() * block.upsample.stride * block.upsample.out);
      transpose(block.upsample, m_.x.data(), runs, out);
      runs = runs.scaled(block.upsample.stride);
      channels = block.upsample.out;
      m_.x.swap(m_.y);
      for (const Qwen3TtsResidualUnit& unit : block.residual) residual(unit, m_.x.data(), runs, channels);
    }
    qwen3_tts_codec::snake(w_.final_snake, m_.x.data(), m_.x.data(), runs.rows(), channels, pending_bias, pool_);
    const float* y = qwen3_tts_codec::grow(m_.y, runs.rows());
    conv(w_.final_conv, m_.x.data(), runs, m_.y.data());
    for (std::size_t s = 0; s < streams_.size(); ++s) {
      std::vector<float>& pcm = *streams_[s].pcm;
      for (std::size_t i = runs.begin[s]; i < runs.begin[s + 1]; ++i) pcm.push_back(std::clamp(y[i], -1.0f, 1.0f));
      streams_[s].state->frames += static_cast<std::int64_t>(runs_.rows(s));
    }
  }

 private:
  /// x[row] = P₀·cb₀[c₀] + P₁·Σ_{q≥1} cb_q[c_q]   ([rows][codebook_dim])
  std::vector<float> dequantise() {
    const std::size_t rows = runs_.rows(), half = c_.codebook_dim / 2, nq = c_.num_quantizers;
    std::vector<float> first(rows * half), rest(rows * half, 0.0f);
    std::size_t row = 0;
    for (const Qwen3TtsCodecStream& s : streams_)
      for (std::size_t f = 0; f < s.codes.size() / nq; ++f, ++row) {
        const std::int32_t* codes = s.codes.data() + f * nq;
        const float* cb0 = w_.codebooks.data() + static_cast<std::size_t>(codes[0]) * half;
        std::copy(cb0, cb0 + half, first.data() + row * half);
        float* r = rest.data() + row * half;
        for (std::size_t q = 1; q < nq; ++q) {
          const float* cb = w_.codebooks.data() + (q * c_.codebook_size + static_cast<std::size_t>(codes[q])) * half;
          for (std::size_t i = 0; i < half; ++i) r[i] += cb[i];
        }
      }
    std::vector<float> x(rows * c_.codebook_dim), projected(rows * c_.codebook_dim);
    matmul(first.data(), rows, w_.first_output_proj, w_.first_output_proj_panels, x.data());
    matmul(rest.data(), rows, w_.rest_output_proj, w_.rest_output_proj_panels, projected.data());
    kernels::cpu::add_inplace(x.data(), projected.data(), x.size());
    return x;
  }

  std::vector<std::vector<float>*> contexts() {
    std::vector<std::vector<float>*> out;
    for (const Qwen3TtsCodecStream& s : streams_) out.push_back(&s.state->conv_context[next_conv_]);
    ++next_conv_;
    return out;
  }
  std::vector<std::vector<float>*> overlaps() {
    std::vector<std::vector<float>*> out;
    for (const Qwen3TtsCodecStream& s : streams_) out.push_back(&s.state->overlap[next_overlap_]);
    ++next_overlap_;
    return out;
  }

  /// y = x · wᵀ on w's panels packed at load (qwen3_tts_codec::packed_matmul).
  void matmul(const float* x, std::size_t rows, const kernels::cpu::WeightMatrix& w,
              const kernels::cpu::GemmPanels& panels, float* y) {
    qwen3_tts_codec::packed_matmul(x, rows, w, panels, y, m_.taps, pool_);
  }
  void conv(const Qwen3TtsConv& conv, const float* x, const qwen3_tts_codec::RowRuns& runs, float* out,
            bool with_bias = true) {
    const auto ctx = contexts();
    qwen3_tts_codec::causal_conv(conv, x, runs, ctx, m_.taps, out, pool_, with_bias);
  }
  void transpose(const Qwen3TtsTransposedConv& conv, const float* x, const qwen3_tts_codec::RowRuns& runs,
                 float* out) {
    const auto ov = overlaps();
    qwen3_tts_codec::transposed_conv(conv, x, runs, ov, m_, out, pool_);
  }

  /// ConvNeXt: x += γ ⊙ Linear(GELU(Linear(LayerNorm(dwconv(x))))), in place.
  void convnext(const Qwen3TtsUpsampleStage& s, float* x, const qwen3_tts_codec::RowRuns& runs) {
    const std::size_t rows = runs.rows(), d = c_.latent_dim;
    float* h = qwen3_tts_codec::grow(m_.a, rows * d);
    float* wide = qwen3_tts_codec::grow(m_.b, rows * 4 * d);
    const auto ctx = contexts();
    qwen3_tts_codec::depthwise_causal_conv(s.dwconv_weight, s.dwconv_bias, d, 7, x, runs, ctx, h, pool_);
    whisper_cpu::layer_norm(h, rows, d, s.norm_weight.data(), s.norm_bias.data(), 1e-6f, h, pool_);
    matmul(h, rows, s.pwconv1, s.pwconv1_panels, wide);
    qwen3_tts_codec::add_bias(wide, rows, 4 * d, s.pwconv1_bias, pool_);
    whisper_cpu::gelu(wide, rows * 4 * d, pool_);
    matmul(wide, rows, s.pwconv2, s.pwconv2_panels, h);
    qwen3_tts_codec::add_bias(h, rows, d, s.pwconv2_bias, pool_);
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t i = 0; i < d; ++i) x[r * d + i] += s.gamma[i] * h[r * d + i];
  }

  /// x += Conv1d_k1(Snake(Conv1d_k7,dilated(Snake(x)))), in place; each
  /// convolution's bias joins the pass after it (the second SnakeBeta, the sum).
  void residual(const Qwen3TtsResidualUnit& u, float* x, const qwen3_tts_codec::RowRuns& runs, std::size_t channels) {
    const std::size_t rows = runs.rows();
    float* a = qwen3_tts_codec::grow(m_.a, rows * channels);
    float* b = qwen3_tts_codec::grow(m_.b, rows * channels);
    qwen3_tts_codec::snake(u.act1, x, a, rows, channels, nullptr, pool_);
    conv(u.conv1, a, runs, b, false);
    qwen3_tts_codec::snake(u.act2, b, b, rows, channels, u.conv1.bias.data(), pool_);
    conv(u.conv2, b, runs, a, false);
    qwen3_tts_codec::add_with_bias(x, a, rows, channels, u.conv2.bias, pool_);
  }

  void transformer(std::vector<float>& latent);
  void attention(std::size_t layer, const float* q, const float* k, const float* v, float* out);

  const Qwen3TtsCodecConfig& c_;
  const Qwen3TtsCodecWeights& w_;
  ThreadPool& pool_;
  std::span<const Qwen3TtsCodecStream> streams_;
  qwen3_tts_codec::RowRuns runs_;
  Qwen3TtsCodecScratch& m_;
  std::vector<std::int64_t> positions_;
  std::size_t next_conv_ = 0, next_overlap_ = 0;
};

/// The sliding-window transformer, in place on latent [rows][latent_dim].
IZWI_DECL void Qwen3TtsCodecPass::transformer(std::vector<float>& latent) {
  const std::size_t rows = runs_.rows(), hidden = c_.hidden_size, ffn = c_.intermediate_size;
  const std::size_t q_dim = std::size_t{c_.num_heads} * c_.head_dim, kv_dim = std::size_t{c_.num_kv_heads} * c_.head_dim;
  const float eps = static_cast<float>(c_.rms_norm_eps);
  for (std::size_t s = 0; s < streams_.size(); ++s)
    for (std::size_t t = 0; t < runs_.rows(s); ++t)
      positions_.push_back(streams_[s].state->frames + static_cast<std::int64_t>(t));
  std::vector<float> x(rows * hidden), h(rows * hidden), q(rows * q_dim), k(rows * kv_dim), v(rows * kv_dim),
      attn(rows * q_dim), gate(rows * ffn), up(rows * ffn);
  matmul(latent.data(), rows, w_.input_proj, w_.input_proj_panels, x.data());
  qwen3_tts_codec::add_bias(x.data(), rows, hidden, w_.input_proj_bias, pool_);
  for (std::size_t l = 0; l < w_.layers.size(); ++l) {
    const Qwen3TtsCodecLayerWeights& w = w_.layers[l];
    kernels::cpu::rms_norm(x.data(), hidden, rows, hidden, w.attn_norm.data(), eps, h.data(), hidden);
    matmul(h.data(), rows, w.q_proj, w.q_panels, q.data());
    matmul(h.data(), rows, w.k_proj, w.k_panels, k.data());
    matmul(h.data(), rows, w.v_proj, w.v_panels, v.data());
    qwen3_tts_codec::rotate(q.data(), rows, c_.num_heads, c_.head_dim, positions_, c_.rope_theta);
    qwen3_tts_codec::rotate(k.data(), rows, c_.num_kv_heads, c_.head_dim, positions_, c_.rope_theta);
    attention(l, q.data(), k.data(), v.data(), attn.data());
    matmul(attn.data(), rows, w.o_proj, w.o_panels, h.data());
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t i = 0; i < hidden; ++i) x[r * hidden + i] += w.attn_scale[i] * h[r * hidden + i];
    kernels::cpu::rms_norm(x.data(), hidden, rows, hidden, w.mlp_norm.data(), eps, h.data(), hidden);
    matmul(h.data(), rows, w.gate_proj, w.gate_panels, gate.data());
    matmul(h.data(), rows, w.up_proj, w.up_panels, up.data());
    kernels::cpu::silu_mul(gate.data(), up.data(), gate.data(), gate.size());
    matmul(gate.data(), rows, w.down_proj, w.down_panels, h.data());
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t i = 0; i < hidden; ++i) x[r * hidden + i] += w.mlp_scale[i] * h[r * hidden + i];
  }
  kernels::cpu::rms_norm(x.data(), hidden, rows, hidden, w_.final_norm.data(), eps, h.data(), hidden);
  matmul(h.data(), rows, w_.output_proj, w_.output_proj_panels, latent.data());
  qwen3_tts_codec::add_bias(latent.data(), rows, c_.latent_dim, w_.output_proj_bias, pool_);
}

/// Causal attention over the last sliding_window frames (this call's rows and
/// the stream's cached K/V), then the cache keeps the last window - 1 frames.
IZWI_DECL void Qwen3TtsCodecPass::attention(std::size_t layer, const float* q, const float* k, const float* v,
                                         float* out) {
  const std::size_t hd = c_.head_dim, heads = c_.num_heads, group = heads / c_.num_kv_heads;
  const std::size_t kv_dim = std::size_t{c_.num_kv_heads} * hd, window = c_.sliding_window;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (std::size_t s = 0; s < streams_.size(); ++s) {
    Qwen3TtsCodecState& state = *streams_[s].state;
    std::vector<float>& keys = state.keys[layer];
    std::vector<float>& values = state.values[layer];
    const std::size_t cached = keys.size() / kv_dim, n = runs_.rows(s), first = runs_.begin[s];
    keys.insert(keys.end(), k + first * kv_dim, k + (first + n) * kv_dim);
    values.insert(values.end(), v + first * kv_dim, v + (first + n) * kv_dim);
    pool_.parallel_for(n * heads, [&](std::size_t task, std::size_t) {
      const std::size_t t = task / heads, h = task % heads, kvh = h / group;
      const std::size_t end = cached + t + 1;  // keys [begin, end) of the joined rows
      const std::size_t begin = end > window ? end - window : 0;
      const float* qh = q + (first + t) * heads * hd + h * hd;
      std::vector<float> scores(end - begin);
      float max = -INFINITY;
      for (std::size_t j = begin; j < end; ++j) {
        const float* kj = keys.data() + j * kv_dim + kvh * hd;
        float dot = 0.0f;
        for (std::size_t i = 0; i < hd; ++i) dot += qh[i] * kj[i];
        scores[j - begin] = dot * scale;
        max = std::max(max, scores[j - begin]);
      }
      float sum = 0.0f;
      for (float& sc : scores) sum += (sc = std::exp(sc - max));
      float* o = out + (first + t) * heads * hd + h * hd;
      std::fill(o, o + hd, 0.0f);
      for (std::size_t j = begin; j < end; ++j) {
        const float p = scores[j - begin] / sum;
        const float* vj = values.data() + j * kv_dim + kvh * hd;
        for (std::size_t i = 0; i < hd; ++i) o[i] += p * vj[i];
      }
    });
    const std::size_t keep = std::min(cached + n, window - 1);
    keys.erase(keys.begin(), keys.end() - static_cast<std::ptrdiff_t>(keep * kv_dim));
    values.erase(values.begin(), values.end() - static_cast<std::ptrdiff_t>(keep * kv_dim));
  }
}

}  // namespace detail

IZWI_DECL void Qwen3TtsCodecDecoder::decode_batch(detail::ThreadPool& pool,
                                               std::span<const Qwen3TtsCodecStream> streams) const {
  const std::size_t nq = config_.num_quantizers;
  for (std::size_t s = 0; s < streams.size(); ++s) {
    const Qwen3TtsCodecStream& stream = streams[s];
    if (stream.state == nullptr || stream.pcm == nullptr)
      throw invalid_argument("streams", "Qwen3-TTS codec: stream " + std::to_string(s) + " has no state or output");
    if (stream.state->conv_context.size() != (weights_->blocks.size() * 6 + weights_->upsample.size() + 3) ||
        stream.state->keys.size() != config_.num_layers)
      throw invalid_argument("state", "Qwen3-TTS codec: stream " + std::to_string(s) +
                                          "'s state was not made by this decoder's new_stream()");
    if (stream.codes.size() % nq != 0)
      throw invalid_argument("codes", "Qwen3-TTS codec: stream " + std::to_string(s) + " has " +
                                          std::to_string(stream.codes.size()) + " codes, not a multiple of " +
                                          std::to_string(nq) + " per frame");
    for (std::size_t i = 0; i < stream.codes.size(); ++i)
      if (stream.codes[i] < 0 || static_cast<std::uint32_t>(stream.codes[i]) >= config_.codebook_size)
        throw invalid_argument("codes", "Qwen3-TTS codec: stream " + std::to_string(s) + ", frame " +
                                            std::to_string(i / nq) + ", codebook " + std::to_string(i % nq) +
                                            ": code " + std::to_string(stream.codes[i]) + " is outside [0, " +
                                            std::to_string(config_.codebook_size) + ")");
    for (std::size_t o = 0; o < s; ++o)
      if (streams[o].state == stream.state)
        throw invalid_argument("streams", "Qwen3-TTS codec: streams " + std::to_string(o) + " and " +
                                              std::to_string(s) + " share one state");
  }
  // A scratch set of this decoder's (made on first use, kept for the next
  // call); given back even when a pass throws (it throws only bad_alloc).
  detail::Qwen3TtsCodecScratchCache local;
  detail::Qwen3TtsCodecScratchCache& cache = scratch_ ? *scratch_ : local;
  std::unique_ptr<detail::Qwen3TtsCodecScratch> scratch = cache.take();
  struct GiveBack {
    detail::Qwen3TtsCodecScratchCache& cache;
    std::unique_ptr<detail::Qwen3TtsCodecScratch>& scratch;
    ~GiveBack() { cache.give_back(std::move(scratch)); }
  } give_back{cache, scratch};
  detail::Qwen3TtsCodecPass(config_, *weights_, pool, streams, *scratch).run();
}

IZWI_DECL void Qwen3TtsCodecDecoder::decode(detail::ThreadPool& pool, Qwen3TtsCodecState& state,
                                         std::span<const std::int32_t> codes, std::vector<float>& pcm) const {
  const Qwen3TtsCodecStream stream{&state, codes, &pcm};
  decode_batch(pool, std::span(&stream, 1));
}

}  // namespace izwi
