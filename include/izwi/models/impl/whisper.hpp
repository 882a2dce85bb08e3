#pragma once
// Whisper's forward passes (encoder, cross-attention K/V, decoder step),
// written against WhisperOps. Loading: whisper_load.hpp.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <span>

#include "izwi/core/error.hpp"

namespace izwi {

namespace detail::whisper {

/// y[rows][w.rows] = x · Wᵀ (+ b).
template <class Ops>
void linear(Ops& ops, const float* x, std::size_t rows, const WhisperLinear& w, float* y) {
  ops.matmul(x, rows, w.weight, y);
  if (!w.bias.empty()) ops.add_bias(y, rows, w.weight.rows, w.bias.data());
}

/// ya = x · Waᵀ (+ ba), yb = x · Wbᵀ (+ bb), yc likewise (c may be null):
/// the projections of one input in one parallel pass of the matmul kernel
/// (kernels::cpu::matmul_group), so a decoder step wakes the thread pool once
/// for Q, K and V instead of three times. Each output row is the same dot
/// product as linear()'s, so the results are identical.
template <class Ops>
void linears(Ops& ops, const float* x, std::size_t rows, const WhisperLinear& a, float* ya, const WhisperLinear& b,
             float* yb, const WhisperLinear* c = nullptr, float* yc = nullptr) {
  if (c == nullptr)
    ops.matmuls(x, rows, {{&a.weight, ya}, {&b.weight, yb}});
  else
    ops.matmuls(x, rows, {{&a.weight, ya}, {&b.weight, yb}, {&c->weight, yc}});
  if (!a.bias.empty()) ops.add_bias(ya, rows, a.weight.rows, a.bias.data());
  if (!b.bias.empty()) ops.add_bias(yb, rows, b.weight.rows, b.bias.data());
  if (c != nullptr && !c->bias.empty()) ops.add_bias(yc, rows, c->weight.rows, c->bias.data());
}

/// x += fc2(GELU(fc1(LN(x)))); h and hidden are scratch.
template <class Ops>
void mlp_block(Ops& ops, const WhisperLayerWeights& w, float* x, std::size_t rows, std::size_t d, float eps, float* h,
               float* hidden) {
  ops.layer_norm(x, rows, d, w.mlp_ln_w.data(), w.mlp_ln_b.data(), eps, h);
  linear(ops, h, rows, w.fc1, hidden);
  ops.gelu(hidden, rows * w.fc1.weight.rows);
  linear(ops, hidden, rows, w.fc2, h);
  ops.add(x, h, rows * d);
}

/// probabilities[r][j] = softmax_j(q_r · k_j / sqrt(head_dim)) over keys
/// j < n of one head (its columns [column, column + head_dim) of q's and k's
/// rows). Plain loops: word timestamps run it for a few heads once per segment.
inline void attention_probabilities(const float* q, std::size_t rows, std::size_t q_stride, const float* k,
                                    std::size_t n, std::size_t k_stride, std::size_t column, std::size_t head_dim,
                                    float* probabilities) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  for (std::size_t r = 0; r < rows; ++r) {
    const float* qr = q + r * q_stride + column;
    float* p = probabilities + r * n;
    float top = -INFINITY;
    for (std::size_t j = 0; j < n; ++j) {
      const float* kj = k + j * k_stride + column;
      float dot = 0;
      for (std::size_t e = 0; e < head_dim; ++e) dot += qr[e] * kj[e];
      p[j] = dot * scale;
      top = std::max(top, p[j]);
    }
    double sum = 0;
    for (std::size_t j = 0; j < n; ++j) sum += p[j] = std::exp(p[j] - top);
    const auto inv = static_cast<float>(1.0 / sum);
    for (std::size_t j = 0; j < n; ++j) p[j] *= inv;
  }
}

}  // namespace detail::whisper

template <WhisperOps Ops>
void Whisper::encode_batch(Ops& ops, const float* mels, std::size_t windows, float* out) const {
  using detail::whisper::linear;
  const WhisperConfig& c = config_;
  const std::size_t n = c.n_audio_ctx, frames = 2 * n, d = c.d_model, heads = c.encoder_heads, hd = c.head_dim();
  const std::size_t rows = windows * n;
  const float eps = c.layer_norm_eps;
  if (windows == 0) return;

  // The convolutions, window by window (each is padded at its own edges).
  float* conv_out = ops.buffer(0, frames * d);
  float* columns = ops.buffer(1, std::max(frames * c.n_mels, n * d) * 3);
  float* x = out;
  for (std::size_t w = 0; w < windows; ++w) {
    float* xw = x + w * n * d;
    ops.conv1d(mels + w * c.n_mels * frames, c.n_mels, frames, false, conv1_, 3, 1, 1, columns, conv_out);
    ops.add_bias(conv_out, frames, d, conv1_bias_.data());
    ops.gelu(conv_out, frames * d);
    ops.conv1d(conv_out, d, frames, true, conv2_, 3, 2, 1, columns, xw);
    ops.add_bias(xw, n, d, conv2_bias_.data());
    ops.gelu(xw, n * d);
    ops.add(xw, encoder_positions_.data(), n * d);
  }

  float* h = ops.buffer(2, rows * d);
  float* q = ops.buffer(3, rows * d);
  float* k = ops.buffer(4, rows * d);
  float* v = ops.buffer(5, rows * d);
  float* k_heads = ops.buffer(6, n * d);
  float* v_heads = ops.buffer(7, n * d);
  float* scores = ops.buffer(8, n * n);
  float* hidden = ops.buffer(0, rows * c.ffn_dim);  // the conv output is no longer needed
  for (const WhisperLayerWeights& w : encoder_layers_) {
    ops.layer_norm(x, rows, d, w.self_attn_ln_w.data(), w.self_attn_ln_b.data(), eps, h);
    linear(ops, h, rows, w.self_attn.query, q);
    linear(ops, h, rows, w.self_attn.key, k);
    linear(ops, h, rows, w.self_attn.value, v);
    for (std::size_t win = 0; win < windows; ++win) {  // k's window is consumed before the output overwrites it
      const std::size_t at = win * n * d;
      ops.split_heads(k + at, v + at, n, heads, hd, k_heads, v_heads);
      ops.dense_attention(q + at, n, k_heads, v_heads, n, heads, hd, scores, k + at);
    }
    linear(ops, k, rows, w.self_attn.out, h);
    ops.add(x, h, rows * d);
    detail::whisper::mlp_block(ops, w, x, rows, d, eps, h, hidden);
  }
  ops.layer_norm(x, rows, d, encoder_ln_w_.data(), encoder_ln_b_.data(), eps, x);
}

template <WhisperOps Ops, KVCachePolicy K>
void Whisper::store_cross_kv(Ops& ops, const float* encoder_out, std::size_t first_row,
                             std::span<const std::int64_t> slots, K& kv) const {
  const WhisperConfig& c = config_;
  const std::size_t rows = slots.size(), d = c.d_model;
  if (first_row + rows > c.n_audio_ctx)
    throw izwi::invalid_argument("store_cross_kv", "encoder rows [" + std::to_string(first_row) + ", " +
                                                       std::to_string(first_row + rows) + ") outside the window's " +
                                                       std::to_string(c.n_audio_ctx));
  if (rows == 0) return;
  float* k = ops.buffer(3, rows * d);
  float* v = ops.buffer(4, rows * d);
  const float* x = encoder_out + first_row * d;
  for (std::uint32_t l = 0; l < c.decoder_layers; ++l) {
    const WhisperLayerWeights& w = decoder_layers_[l];
    detail::whisper::linears(ops, x, rows, w.cross_attn.key, k, w.cross_attn.value, v);
    ops.store_kv(kv.layer(l), kv_cache_dtype_, k, v, slots, c.decoder_heads, c.head_dim());
  }
}

template <WhisperOps Ops, KVCachePolicy K>
void Whisper::forward(Ops& ops, const ForwardBatch& batch, std::span<const typename Ops::attention_sequence> self,
                      std::span<const typename Ops::attention_sequence> cross, K& kv, float* logits) const {
  const float* x = decode_layers(ops, batch, self, cross, kv, [](std::uint32_t, const float*) {});
  output_logits(ops, x, batch.logit_rows, logits);
}

template <WhisperOps Ops, KVCachePolicy K>
void Whisper::alignment_weights(Ops& ops, const ForwardBatch& batch,
                                std::span<const typename Ops::attention_sequence> self,
                                std::span<const typename Ops::attention_sequence> cross, K& kv,
                                const float* encoder_out,
                                std::span<const std::pair<std::uint32_t, std::uint32_t>> heads,
                                std::size_t audio_frames, float* weights, float* logits) const {
  const WhisperConfig& c = config_;
  const std::size_t t = batch.tokens.size(), d = c.d_model, hd = c.head_dim();
  if (audio_frames == 0 || audio_frames > c.n_audio_ctx)
    throw izwi::invalid_argument("audio_frames", "alignment over " + std::to_string(audio_frames) +
                                                     " encoder positions; the window has " +
                                                     std::to_string(c.n_audio_ctx));
  for (const auto& [layer, head] : heads)
    if (layer >= c.decoder_layers || head >= c.decoder_heads)
      throw izwi::invalid_argument("alignment_heads", "head (" + std::to_string(layer) + ", " + std::to_string(head) +
                                                          ") outside the decoder's " +
                                                          std::to_string(c.decoder_layers) + " layers x " +
                                                          std::to_string(c.decoder_heads) + " heads");
  const float* x = decode_layers(ops, batch, self, cross, kv, [&](std::uint32_t layer, const float* q) {
    bool wanted = false;
    for (const auto& head : heads) wanted = wanted || head.first == layer;
    if (!wanted) return;
    // Buffer 7 is free during the decoder pass (forward() uses 0-6).
    float* keys = ops.buffer(7, audio_frames * d);
    detail::whisper::linear(ops, encoder_out, audio_frames, decoder_layers_[layer].cross_attn.key, keys);
    for (std::size_t i = 0; i < heads.size(); ++i)
      if (heads[i].first == layer)
        detail::whisper::attention_probabilities(q, t, d, keys, audio_frames, d, heads[i].second * hd, hd,
                                                 weights + i * t * audio_frames);
  });
  output_logits(ops, x, batch.logit_rows, logits);
}

template <WhisperOps Ops, KVCachePolicy K, class OnCrossQuery>
const float* Whisper::decode_layers(Ops& ops, const ForwardBatch& batch,
                                    std::span<const typename Ops::attention_sequence> self,
                                    std::span<const typename Ops::attention_sequence> cross, K& kv,
                                    OnCrossQuery&& on_cross_query) const {
  using detail::whisper::linear;
  const WhisperConfig& c = config_;
  const std::size_t t = batch.tokens.size(), d = c.d_model, heads = c.decoder_heads, hd = c.head_dim();
  const float eps = c.layer_norm_eps;
  if (cross.size() != self.size())
    throw izwi::invalid_argument("cross", "one cross-attention sequence per self-attention sequence is needed");

  float* x = ops.buffer(0, t * d);
  float* h = ops.buffer(1, t * d);
  float* q = ops.buffer(2, t * d);
  float* k = ops.buffer(3, t * d);
  float* v = ops.buffer(4, t * d);
  float* attn = ops.buffer(5, t * d);
  float* hidden = ops.buffer(6, t * c.ffn_dim);

  ops.embed(token_embedding_, batch.tokens, x);
  for (std::size_t i = 0; i < t; ++i) {
    const std::int64_t p = batch.positions[i];
    if (p < 0 || p >= static_cast<std::int64_t>(c.n_text_ctx))
      throw izwi::invalid_argument("positions", "Whisper decoder position " + std::to_string(p) + " outside [0, " +
                                                    std::to_string(c.n_text_ctx) + ")");
    ops.add(x + i * d, decoder_positions_.data() + static_cast<std::size_t>(p) * d, d);
  }
  for (std::uint32_t l = 0; l < c.decoder_layers; ++l) {
    const WhisperLayerWeights& w = decoder_layers_[l];
    ops.layer_norm(x, t, d, w.self_attn_ln_w.data(), w.self_attn_ln_b.data(), eps, h);
    detail::whisper::linears(ops, h, t, w.self_attn.query, q, w.self_attn.key, k, &w.self_attn.value, v);
    const KVLayerView view = kv.layer(l);
    ops.store_kv(view, kv_cache_dtype_, k, v, batch.slots, heads, hd);
    ops.attention(q, self, view, kv_cache_dtype_, kv.block_size(), heads, heads, hd, attn);
    linear(ops, attn, t, w.self_attn.out, h);
    ops.add(x, h, t * d);

    ops.layer_norm(x, t, d, w.cross_attn_ln_w.data(), w.cross_attn_ln_b.data(), eps, h);
    linear(ops, h, t, w.cross_attn.query, q);
    on_cross_query(l, static_cast<const float*>(q));
    ops.attention(q, cross, view, kv_cache_dtype_, kv.block_size(), heads, heads, hd, attn);
    linear(ops, attn, t, w.cross_attn.out, h);
    ops.add(x, h, t * d);
    detail::whisper::mlp_block(ops, w, x, t, d, eps, h, hidden);
  }
  return x;
}

template <WhisperOps Ops>
void Whisper::output_logits(Ops& ops, const float* x, std::span<const std::uint32_t> rows, float* logits) const {
  const std::size_t d = config_.d_model;
  if (rows.empty()) return;
  float* last = ops.buffer(1, rows.size() * d);
  ops.gather_rows(x, d, rows, last);
  ops.layer_norm(last, rows.size(), d, decoder_ln_w_.data(), decoder_ln_b_.data(), config_.layer_norm_eps, last);
  ops.matmul(last, rows.size(), token_embedding_, logits);
}

}  // namespace izwi
