#pragma once
// BackendOps: the operations a model family's forward pass asks of a backend,
// so one family's code runs on every executor (DESIGN §2: `Qwen3` is written
// against `ops.*`; CpuExecutor passes detail::CpuOps, an OpenCL executor its
// own). ModelFamilyFor<M, Ops>: M is a model family whose forward pass runs
// on Ops. Documented in docs/concepts/backend_ops.md.
//
// Valid expressions, for ops an O&, w a const O::weight_type&, n sizes, x a
// float* and cx a const float*:
//   typename O::attention_sequence    one sequence of the step, for attention
//   typename O::weight_type           a Linear weight as this backend holds it
//   ops.buffer(slot, floats) -> float*        scratch kept until the next call with that slot
//   ops.embed(w, tokens, x)                   rows of w for tokens, as f32
//   ops.matmul(cx, m, w, x)                   x[m][w rows] = cx[m][w cols] · wᵀ
//   ops.rms_norm(cx, rows, dim, cx_weight, eps, x)
//   ops.rms_norm_heads(x, rows, heads, head_dim, cx_weight, eps)   in place
//   ops.rope(x, rows, heads, head_dim, positions, theta)           NeoX, in place
//   ops.store_kv(layer_view, dtype, k, v, slots, kv_heads, head_dim)
//   ops.attention(q, sequences, layer_view, dtype, block_size, heads, kv_heads, head_dim, x)
//   ops.silu_mul(x, cx, n)  ops.add(x, cx, n)  ops.gather_rows(cx, dim, rows, x)

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>

#include "izwi/concepts/archetypes.hpp"
#include "izwi/concepts/kv_cache.hpp"
#include "izwi/concepts/model_family.hpp"
#include "izwi/concepts/tags.hpp"
#include "izwi/core/dtype.hpp"
#include "izwi/core/ids.hpp"
#include "izwi/models/forward_batch.hpp"

namespace izwi {

template <class O>
concept BackendOps =
    opts_into<O, backend_ops_tag> && requires {
      typename O::attention_sequence;
      typename O::weight_type;
    } && requires(O& ops, const typename O::weight_type& w, std::span<const TokenId> tokens, const float* cx, float* x,
                  std::size_t n, float eps, double theta, std::span<const std::int64_t> positions,
                  const KVLayerView& layer, DType dtype, std::span<const typename O::attention_sequence> sequences,
                  std::span<const std::uint32_t> rows) {
      { ops.buffer(n, n) } -> std::same_as<float*>;
      ops.embed(w, tokens, x);
      ops.matmul(cx, n, w, x);
      ops.rms_norm(cx, n, n, cx, eps, x);
      ops.rms_norm_heads(x, n, n, n, cx, eps);
      ops.rope(x, n, n, n, positions, theta);
      ops.store_kv(layer, dtype, cx, cx, positions, n, n);
      ops.attention(cx, sequences, layer, dtype, n, n, n, n, x);
      ops.silu_mul(x, cx, n);
      ops.add(x, cx, n);
      ops.gather_rows(cx, n, rows, x);
    };

/// M is a model family whose forward pass runs on the backend ops O, writing
/// K/V into any KV cache (checked against the host archetype).
template <class M, class O>
concept ModelFamilyFor =
    ModelFamily<M> && BackendOps<O> &&
    requires(const M& model, O& ops, const ForwardBatch& batch,
             std::span<const typename O::attention_sequence> sequences, archetypes::host_kv_cache& kv,
             float* logits) { model.forward(ops, batch, sequences, kv, logits); };

}  // namespace izwi
