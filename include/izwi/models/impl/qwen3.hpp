#pragma once
// Qwen3::forward, the template part (see qwen3_load.ipp for loading).

#include <cstddef>
#include <span>

namespace izwi {

/// The operations forward() asks of a backend, for ops an Ops:
///   float* ops.buffer(slot, floats)                 scratch that lives until the next call with that slot
///   ops.embed(table, tokens, out)                   rows of `table` for `tokens`, widened to f32
///   ops.matmul(x, m, weight, y)                     y[m][rows] = x[m][cols] · weightᵀ
///   ops.rms_norm(x, rows, dim, weight, eps, out)    out may equal x
///   ops.rms_norm_heads(x, rows, heads, head_dim, weight, eps)    in place, per head
///   ops.rope(x, rows, heads, head_dim, positions, theta)          NeoX rotary, in place
///   ops.store_kv(view, dtype, k, v, slots, kv_heads, head_dim)     K/V rows into their slots
///   ops.attention(q, sequences, view, dtype, block_size, heads, kv_heads, head_dim, out)
///   ops.silu_mul(gate, up, n)                       gate = silu(gate) * up
///   ops.add(x, y, n)                                x += y
///   ops.gather_rows(x, dim, rows, out)              out[i] = x[rows[i]]
template <BackendOps Ops, KVCachePolicy K>
void Qwen3::forward(Ops& ops, const ForwardBatch& batch, std::span<const typename Ops::attention_sequence> sequences,
                    K& kv, float* logits) const {
  const Qwen3Config& c = config_;
  const std::size_t t = batch.tokens.size();
  const std::size_t hidden = c.hidden_size;
  const std::size_t q_dim = std::size_t{c.num_heads} * c.head_dim;
  const std::size_t kv_dim = std::size_t{c.num_kv_heads} * c.head_dim;
  const float eps = static_cast<float>(c.rms_norm_eps);

  float* x = ops.buffer(0, t * hidden);
  float* h = ops.buffer(1, t * hidden);
  float* q = ops.buffer(2, t * q_dim);
  float* k = ops.buffer(3, t * kv_dim);
  float* v = ops.buffer(4, t * kv_dim);
  float* attn = ops.buffer(5, t * q_dim);
  float* gate = ops.buffer(6, t * c.intermediate_size);
  float* up = ops.buffer(7, t * c.intermediate_size);

  ops.embed(embed_tokens_, batch.tokens, x);
  for (std::uint32_t l = 0; l < c.num_layers; ++l) {
    const Qwen3LayerWeights& w = layers_[l];
    ops.rms_norm(x, t, hidden, w.input_norm.data(), eps, h);
    ops.matmul(h, t, w.q_proj, q);
    ops.matmul(h, t, w.k_proj, k);
    ops.matmul(h, t, w.v_proj, v);
    ops.rms_norm_heads(q, t, c.num_heads, c.head_dim, w.q_norm.data(), eps);
    ops.rms_norm_heads(k, t, c.num_kv_heads, c.head_dim, w.k_norm.data(), eps);
    ops.rope(q, t, c.num_heads, c.head_dim, batch.positions, c.rope_theta);
    ops.rope(k, t, c.num_kv_heads, c.head_dim, batch.positions, c.rope_theta);
    // Every token's K/V is in the cache before any attention reads it: a
    // sequence may hit prefix blocks that another computes in this same step.
    const KVLayerView view = kv.layer(l);
    ops.store_kv(view, kv_cache_dtype_, k, v, batch.slots, c.num_kv_heads, c.head_dim);
    ops.attention(q, sequences, view, kv_cache_dtype_, kv.block_size(), c.num_heads, c.num_kv_heads, c.head_dim, attn);
    ops.matmul(attn, t, w.o_proj, h);
    ops.add(x, h, t * hidden);

    ops.rms_norm(x, t, hidden, w.post_attention_norm.data(), eps, h);
    ops.matmul(h, t, w.gate_proj, gate);
    ops.matmul(h, t, w.up_proj, up);
    ops.silu_mul(gate, up, t * c.intermediate_size);
    ops.matmul(gate, t, w.down_proj, h);
    ops.add(x, h, t * hidden);
  }
  // Only the rows that sample need the final norm and the (large) lm_head.
  const std::size_t rows = batch.logit_rows.size();
  if (rows == 0) return;
  float* last = ops.buffer(1, rows * hidden);
  ops.gather_rows(x, hidden, batch.logit_rows, last);
  ops.rms_norm(last, rows, hidden, final_norm_.data(), eps, last);
  ops.matmul(last, rows, lm_head_, logits);
}

}  // namespace izwi
