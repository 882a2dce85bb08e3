#pragma once
// Qwen3::forward, the template part (see qwen3_load.ipp for loading).

#include <cstddef>
#include <span>

namespace izwi {

/// The operations forward() asks of a backend, for ops an Ops:
///   float* ops.buffer(slot, floats)                 scratch that lives until the next call with that slot
///   ops.embed(table, tokens, out)                   rows of `table` for `tokens`, widened to f32
///   ops.matmul(x, m, weight, y)                     y[m][rows] = x[m][cols] · weightᵀ
///   ops.matmuls(x, m, {{&w1, y1}, {&w2, y2}, ...})  the same for up to 4 weights over one x, in one pass
///   ops.rms_norm(x, rows, dim, weight, eps, out)    out may equal x
///   ops.rms_norm_heads(x, rows, heads, head_dim, weight, eps)    in place, per head
///   ops.rope(x, rows, heads, head_dim, positions, theta)          NeoX rotary, in place
///   ops.store_kv(view, dtype, k, v, slots, kv_heads, head_dim)     K/V rows into their slots
///   ops.attention(q, sequences, view, dtype, block_size, heads, kv_heads, head_dim, out)
///   ops.silu_mul(gate, up, n)                       gate = silu(gate) * up
///   ops.add(x, y, n)                                x += y
///   ops.gather_rows(x, dim, rows, out)              out[i] = x[rows[i]]
namespace detail {

/// Qwen3's decoder layers over x ([t][hidden], already embedded), in place:
/// the body Qwen3::forward and Qwen3-TTS's talker and code predictor share.
/// Uses the ops' scratch slots 1..7; x may be slot 0.
template <BackendOps Ops, KVCachePolicy K>
void qwen3_decoder_layers(Ops& ops, const Qwen3Config& c, std::span<const Qwen3LayerWeights> layers, DType kv_dtype,
                          const ForwardBatch& batch, std::span<const typename Ops::attention_sequence> sequences,
                          K& kv, float* x) {
  const std::size_t t = batch.positions.size();
  const std::size_t hidden = c.hidden_size;
  const std::size_t q_dim = std::size_t{c.num_heads} * c.head_dim;
  const std::size_t kv_dim = std::size_t{c.num_kv_heads} * c.head_dim;
  const float eps = static_cast<float>(c.rms_norm_eps);

  float* h = ops.buffer(1, t * hidden);
  float* q = ops.buffer(2, t * q_dim);
  float* k = ops.buffer(3, t * kv_dim);
  float* v = ops.buffer(4, t * kv_dim);
  float* attn = ops.buffer(5, t * q_dim);
  float* gate = ops.buffer(6, t * c.intermediate_size);
  float* up = ops.buffer(7, t * c.intermediate_size);

  for (std::uint32_t l = 0; l < c.num_layers; ++l) {
    const Qwen3LayerWeights& w = layers[l];
    ops.rms_norm(x, t, hidden, w.input_norm.data(), eps, h);
    // q, k and v (then gate and up) read the same rows: one pass over the
    // threads for all three instead of three (one pool synchronisation; the
    // prefill GEMM packs the activations once).
    ops.matmuls(h, t, {{&w.q_proj, q}, {&w.k_proj, k}, {&w.v_proj, v}});
    ops.rms_norm_heads(q, t, c.num_heads, c.head_dim, w.q_norm.data(), eps);
    ops.rms_norm_heads(k, t, c.num_kv_heads, c.head_dim, w.k_norm.data(), eps);
    ops.rope(q, t, c.num_heads, c.head_dim, batch.positions, c.rope_theta);
    ops.rope(k, t, c.num_kv_heads, c.head_dim, batch.positions, c.rope_theta);
    // Every token's K/V is in the cache before any attention reads it: a
    // sequence may hit prefix blocks that another computes in this same step.
    const KVLayerView view = kv.layer(l);
    ops.store_kv(view, kv_dtype, k, v, batch.slots, c.num_kv_heads, c.head_dim);
    ops.attention(q, sequences, view, kv_dtype, kv.block_size(), c.num_heads, c.num_kv_heads, c.head_dim, attn);
    ops.matmul(attn, t, w.o_proj, h);
    ops.add(x, h, t * hidden);

    ops.rms_norm(x, t, hidden, w.post_attention_norm.data(), eps, h);
    ops.matmuls(h, t, {{&w.gate_proj, gate}, {&w.up_proj, up}});
    ops.silu_mul(gate, up, t * c.intermediate_size);
    ops.matmul(gate, t, w.down_proj, h);
    ops.add(x, h, t * hidden);
  }
}

}  // namespace detail

template <BackendOps Ops, KVCachePolicy K>
void Qwen3::forward(Ops& ops, const ForwardBatch& batch, std::span<const typename Ops::attention_sequence> sequences,
                    K& kv, float* logits) const {
  const Qwen3Config& c = config_;
  const std::size_t hidden = c.hidden_size;
  const float eps = static_cast<float>(c.rms_norm_eps);
  float* x = ops.buffer(0, batch.tokens.size() * hidden);
  ops.embed(embed_tokens_, batch.tokens, x);
  detail::qwen3_decoder_layers(ops, c, std::span<const Qwen3LayerWeights>(layers_), kv_cache_dtype_, batch, sequences,
                               kv, x);
  // Only the rows that sample need the final norm and the (large) lm_head.
  const std::size_t rows = batch.logit_rows.size();
  if (rows == 0) return;
  float* last = ops.buffer(1, rows * hidden);
  ops.gather_rows(x, hidden, batch.logit_rows, last);
  ops.rms_norm(last, rows, hidden, final_norm_.data(), eps, last);
  ops.matmul(last, rows, lm_head_, logits);
}

}  // namespace izwi
