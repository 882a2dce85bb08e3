#pragma once
// Paged attention of izwi/kernels/cpu/attention.hpp, written once over the
// SIMD architecture (see simd.hpp); reached through dispatch.hpp.

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "izwi/kernels/cpu/attention.hpp"
#include "izwi/kernels/cpu/detail/simd.hpp"

namespace izwi::kernels::cpu::detail::inline IZWI_KERNELS_VARIANT {

/// Query tokens per task: each widened K/V tile serves this many tokens
/// times the heads of a group.
inline constexpr std::size_t attention_query_block = 32;
/// Key positions per tile (a multiple of every vector width used).
inline constexpr std::size_t attention_key_tile = 32;

/// Widens n cache elements starting at element `offset` of `base` into out.
template <class Arch>
inline void widen_cache_row(const std::byte* base, std::size_t offset, DType dtype, std::size_t n, float* out) noexcept {
  switch (dtype) {
    case DType::f32: std::memcpy(out, base + offset * 4, n * 4); return;
    case DType::f16: widen_f16<Arch>(reinterpret_cast<const std::uint16_t*>(base) + offset, out, n); return;
    default: widen_bf16<Arch>(reinterpret_cast<const std::uint16_t*>(base) + offset, out, n); return;
  }
}

struct AttentionTask {
  const AttentionSequence* seq;
  std::size_t kv_head;
  std::size_t t0, t1;  // query tokens [t0, t1) of the sequence
};

/// A K or V row of the cache read in its stored type (f32, f16 or bf16),
/// widened in registers as it is used: a decoding query uses each cached
/// element once, so widening rows into a scratch tile first would only add a
/// store and a load per element. The values are the same either way.
template <class Arch, DType D>
struct CacheRow {
  using S = Simd<Arch>;
  using Elem = std::conditional_t<D == DType::f32, float, std::uint16_t>;
  static typename S::vec load(const void* row, std::size_t d) noexcept {
    const Elem* p = static_cast<const Elem*>(row) + d;
    if constexpr (D == DType::f32) return S::load(p);
    else if constexpr (D == DType::f16) return S::load_f16(p);
    else return S::load_bf16(p);
  }
  static float at(const void* row, std::size_t d) noexcept {
    const Elem e = static_cast<const Elem*>(row)[d];
    if constexpr (D == DType::f32) return e;
    else if constexpr (D == DType::f16) return f16_bits_to_f32(e);
    else return bf16_bits_to_f32(e);
  }
};

/// a[d, d + U lanes-wide vectors) = a * vcorr + sum over the visible keys j of
/// scores[j] * v_rows[j]: U independent FMA chains, keys in order.
template <class Arch, DType D, std::size_t U>
inline void accumulate_values(const float* scores, const void* const* v_rows, std::size_t visible, std::size_t d,
                              typename Simd<Arch>::vec vcorr, float* a) noexcept {
  using S = Simd<Arch>;
  using vec = typename S::vec;
  using Row = CacheRow<Arch, D>;
  constexpr std::size_t L = S::lanes;
  vec sums[U];
  for (std::size_t u = 0; u < U; ++u) sums[u] = S::load(a + d + u * L) * vcorr;
  for (std::size_t j = 0; j < visible; ++j) {
    const vec p = S::broadcast(scores[j]);
    for (std::size_t u = 0; u < U; ++u) sums[u] = S::fma(p, Row::load(v_rows[j], d + u * L), sums[u]);
  }
  for (std::size_t u = 0; u < U; ++u) S::store(a + d + u * L, sums[u]);
}

/// One query vector against one tile of attention_key_tile keys (rows past
/// `visible` are masked): scores, online-softmax update of (run_max,
/// run_sum), and a = a * correction + sum_j p_j v_j. Rows hold `CD` values.
template <class Arch, DType CD>
inline void attend_tile(const float* qv, const void* const* k_rows, const void* const* v_rows, std::size_t visible,
                        std::size_t D, float scale, float& run_max, float& run_sum, float* a) noexcept {
  using S = Simd<Arch>;
  using vec = typename S::vec;
  using Row = CacheRow<Arch, CD>;
  constexpr std::size_t L = S::lanes;
  constexpr std::size_t TK = attention_key_tile;
  const std::size_t d_vec = D / L * L;
  alignas(64) float scores[TK];
  // Scores of L keys at a time: one accumulator per key, summed lane-wise at the end.
  for (std::size_t jg = 0; jg < TK; jg += L) {
    vec dots[L];
    for (std::size_t i = 0; i < L; ++i) dots[i] = S::zero();
    for (std::size_t d = 0; d < d_vec; d += L) {
      const vec qd = S::load(qv + d);
      for (std::size_t i = 0; i < L; ++i) dots[i] = S::fma(qd, Row::load(k_rows[jg + i], d), dots[i]);
    }
    S::store(scores + jg, S::sum_each(dots));
    for (std::size_t d = d_vec; d < D; ++d)
      for (std::size_t i = 0; i < L; ++i) scores[jg + i] += qv[d] * Row::at(k_rows[jg + i], d);
  }
  // Scale, mask the keys this query may not see, and take the tile's maximum.
  const vec vscale = S::broadcast(scale);
  vec vtile_max = S::broadcast(-std::numeric_limits<float>::infinity());
  for (std::size_t j = 0; j < TK; j += L) {
    const std::size_t left = visible > j ? visible - j : 0;
    const vec v = S::keep_first(S::load(scores + j) * vscale, left, -std::numeric_limits<float>::infinity());
    S::store(scores + j, v);
    vtile_max = S::max(vtile_max, v);
  }
  const float tile_max = S::max_element(vtile_max);
  const float new_max = std::max(run_max, tile_max);
  const float correction = std::exp(run_max - new_max);  // 0 on the first tile
  run_max = new_max;
  const vec vmax = S::broadcast(new_max);
  vec vsum = S::zero();
  for (std::size_t j = 0; j < TK; j += L) {
    const vec e = S::exp(S::load(scores + j) - vmax);
    S::store(scores + j, e);
    vsum = vsum + e;
  }
  run_sum = run_sum * correction + S::sum(vsum);
  // acc = acc * correction + sum_j p_j v_j: 8 vectors of head dims at a
  // time, then 4, 2, 1 for the rest (head_dim 64 in 16 lanes, Whisper's, is
  // one pass of 4), so there are always several independent FMA chains (one
  // chain would wait on the FMA latency for every key). Each lane adds its
  // keys in the same order whatever the grouping.
  const vec vcorr = S::broadcast(correction);
  std::size_t d = 0;
  for (; d + 8 * L <= d_vec; d += 8 * L) accumulate_values<Arch, CD, 8>(scores, v_rows, visible, d, vcorr, a);
  if (d + 4 * L <= d_vec) {
    accumulate_values<Arch, CD, 4>(scores, v_rows, visible, d, vcorr, a);
    d += 4 * L;
  }
  if (d + 2 * L <= d_vec) {
    accumulate_values<Arch, CD, 2>(scores, v_rows, visible, d, vcorr, a);
    d += 2 * L;
  }
  if (d + L <= d_vec) {
    accumulate_values<Arch, CD, 1>(scores, v_rows, visible, d, vcorr, a);
    d += L;
  }
  for (std::size_t d = d_vec; d < D; ++d) {
    float sum = a[d] * correction;
    for (std::size_t j = 0; j < visible; ++j) sum += scores[j] * Row::at(v_rows[j], d);
    a[d] = sum;
  }
}

template <class Arch>
inline void attention_task(const float* q, const AttentionTask& task, const KVLayerView& kv,
                           const AttentionShape& shape, float scale, std::size_t q_ld, std::size_t out_ld, float* out,
                           float* scratch) noexcept {
  constexpr std::size_t TK = attention_key_tile;
  const std::size_t D = shape.head_dim, bs = shape.block_size;
  const std::size_t group = shape.num_heads / shape.num_kv_heads;
  const std::size_t row_elements = shape.num_kv_heads * D;
  const AttentionSequence& seq = *task.seq;
  const std::size_t n_queries = (task.t1 - task.t0) * group;

  // Scratch: K tile, V tile, per-query accumulators, running max and sum.
  float* k_tile = scratch;
  float* v_tile = k_tile + TK * D;
  float* acc = v_tile + TK * D;
  float* run_max = acc + n_queries * D;
  float* run_sum = run_max + n_queries;
  std::fill(acc, acc + n_queries * D, 0.0f);
  std::fill(run_max, run_max + n_queries, -std::numeric_limits<float>::infinity());
  std::fill(run_sum, run_sum + n_queries, 0.0f);

  // Keys [first, end): the union of what this block's queries see (the
  // last query sees the most under the causal rule).
  const std::size_t first = seq.first_visible, end = seq.visible_limit(task.t1 - 1);
  const std::size_t elem_bytes = dtype_size(shape.cache_dtype), row_bytes = D * elem_bytes;
  const void* k_rows[TK];
  const void* v_rows[TK];
  // A head's rows are a cache-row apart and scattered over blocks, which the
  // hardware prefetchers do not follow: fetch the next tile while this one
  // is computed (the difference between latency- and bandwidth-bound decode).
  const auto prefetch_tile = [&](std::size_t from) {
    const std::size_t stop = std::min(from + TK, end);
    for (std::size_t pos = from; pos < stop; ++pos) {
      const std::size_t slot = static_cast<std::size_t>(seq.block_table[pos / bs]) * bs + pos % bs;
      const std::size_t byte = (slot * row_elements + task.kv_head * D) * elem_bytes;
      for (std::size_t line = 0; line < row_bytes; line += 64) {
        __builtin_prefetch(kv.keys + byte + line);
        __builtin_prefetch(kv.values + byte + line);
      }
    }
  };
  if (first < end) prefetch_tile(first);
  for (std::size_t j0 = first; j0 < end; j0 += TK) {
    const std::size_t nj = std::min(TK, end - j0);
    if (j0 + TK < end) prefetch_tile(j0 + TK);
    for (std::size_t j = 0; j < nj; ++j) {
      const std::size_t pos = j0 + j;
      const std::size_t slot = static_cast<std::size_t>(seq.block_table[pos / bs]) * bs + pos % bs;
      const std::size_t offset = slot * row_elements + task.kv_head * D;
      if (shape.cache_dtype == DType::f32) {
        k_rows[j] = reinterpret_cast<const float*>(kv.keys) + offset;
        v_rows[j] = reinterpret_cast<const float*>(kv.values) + offset;
      } else {
        widen_cache_row<Arch>(kv.keys, offset, shape.cache_dtype, D, k_tile + j * D);
        widen_cache_row<Arch>(kv.values, offset, shape.cache_dtype, D, v_tile + j * D);
        k_rows[j] = k_tile + j * D;
        v_rows[j] = v_tile + j * D;
      }
    }
    for (std::size_t j = nj; j < TK; ++j) k_rows[j] = k_rows[0];  // scored, then masked

    for (std::size_t t = task.t0; t < task.t1; ++t) {
      const std::size_t limit = seq.visible_limit(t);
      if (j0 >= limit) continue;
      const std::size_t visible = std::min(nj, limit - j0);
      for (std::size_t g = 0; g < group; ++g) {
        const std::size_t head = task.kv_head * group + g;
        const float* qv = q + (seq.first_row + t) * q_ld + head * D;
        const std::size_t qi = (t - task.t0) * group + g;
        attend_tile<Arch, DType::f32>(qv, k_rows, v_rows, visible, D, scale, run_max[qi], run_sum[qi], acc + qi * D);
      }
    }
  }
  for (std::size_t t = task.t0; t < task.t1; ++t)
    for (std::size_t g = 0; g < group; ++g) {
      const std::size_t qi = (t - task.t0) * group + g;
      const float inv = run_sum[qi] > 0.0f ? 1.0f / run_sum[qi] : 0.0f;  // 0: no visible key
      float* o = out + (seq.first_row + t) * out_ld + (task.kv_head * group + g) * D;
      for (std::size_t d = 0; d < D; ++d) o[d] = acc[qi * D + d] * inv;
    }
}

/// A decoding sequence's one query token against positions [p0, p1) of its
/// context, for every head: the rows are read whole (all kv heads of a
/// position are contiguous), which the hardware prefetchers stream, unlike
/// one head's slice of every row, and in the cache's own type (CacheRow).
/// Writes per head [acc (head_dim)][max][sum] to `partial`;
/// attention_merge combines the chunks.
template <class Arch, DType CD>
inline void attention_decode_chunk_of(const float* q, const AttentionSequence& seq, std::size_t p0, std::size_t p1,
                                      const KVLayerView& kv, const AttentionShape& shape, float scale,
                                      std::size_t q_ld, float* partial) noexcept {
  constexpr std::size_t TK = attention_key_tile;
  const std::size_t D = shape.head_dim, bs = shape.block_size;
  const std::size_t group = shape.num_heads / shape.num_kv_heads;
  const std::size_t row_elements = shape.num_kv_heads * D;
  const std::size_t elem_bytes = dtype_size(CD);
  for (std::size_t h = 0; h < shape.num_heads; ++h) {
    float* part = partial + h * (D + 2);
    std::fill(part, part + D, 0.0f);
    part[D] = -std::numeric_limits<float>::infinity();
    part[D + 1] = 0.0f;
  }
  const void* k_rows[TK];
  const void* v_rows[TK];
  std::size_t offsets[TK];
  const float* query = q + seq.first_row * q_ld;
  for (std::size_t j0 = p0; j0 < p1; j0 += TK) {
    const std::size_t nj = std::min(TK, p1 - j0);
    for (std::size_t j = 0; j < nj; ++j) {
      const std::size_t pos = j0 + j;
      offsets[j] = (static_cast<std::size_t>(seq.block_table[pos / bs]) * bs + pos % bs) * row_elements;
    }
    for (std::size_t kvh = 0; kvh < shape.num_kv_heads; ++kvh) {
      for (std::size_t j = 0; j < nj; ++j) {
        const std::size_t byte = (offsets[j] + kvh * D) * elem_bytes;
        k_rows[j] = kv.keys + byte;
        v_rows[j] = kv.values + byte;
      }
      for (std::size_t j = nj; j < TK; ++j) k_rows[j] = k_rows[0];  // scored, then masked
      for (std::size_t g = 0; g < group; ++g) {
        const std::size_t head = kvh * group + g;
        float* part = partial + head * (D + 2);
        attend_tile<Arch, CD>(query + head * D, k_rows, v_rows, nj, D, scale, part[D], part[D + 1], part);
      }
    }
  }
}

template <class Arch>
inline void attention_decode_chunk(const float* q, const AttentionSequence& seq, std::size_t p0, std::size_t p1,
                                   const KVLayerView& kv, const AttentionShape& shape, float scale, std::size_t q_ld,
                                   float* partial) noexcept {
  switch (shape.cache_dtype) {
    case DType::f32: return attention_decode_chunk_of<Arch, DType::f32>(q, seq, p0, p1, kv, shape, scale, q_ld, partial);
    case DType::f16: return attention_decode_chunk_of<Arch, DType::f16>(q, seq, p0, p1, kv, shape, scale, q_ld, partial);
    default: return attention_decode_chunk_of<Arch, DType::bf16>(q, seq, p0, p1, kv, shape, scale, q_ld, partial);
  }
}

/// Positions a decoding sequence's one query sees: [first_visible, its limit).
inline std::size_t decode_context(const AttentionSequence& seq) noexcept {
  const std::size_t limit = seq.visible_limit(0);
  return limit > seq.first_visible ? limit - seq.first_visible : 0;
}

/// Positions per decode chunk: enough chunks for every thread twice over, at
/// least two key tiles each.
inline std::size_t decode_chunk_positions(std::size_t context, std::size_t threads) noexcept {
  constexpr std::size_t TK = attention_key_tile;
  const std::size_t target = (context + 2 * threads - 1) / (2 * threads);
  return std::max<std::size_t>(2 * TK, (target + TK - 1) / TK * TK);
}

template <class Arch>
inline void paged_attention(const float* q, std::span<const AttentionSequence> seqs, const KVLayerView& kv,
                            const AttentionShape& shape, float* out, ThreadPool& pool) noexcept {
  constexpr std::size_t QB = attention_query_block;
  const float scale = shape.scale != 0.0f ? shape.scale : 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
  const std::size_t q_ld = shape.q_ld ? shape.q_ld : shape.num_heads * shape.head_dim;
  const std::size_t out_ld = shape.out_ld ? shape.out_ld : shape.num_heads * shape.head_dim;
  const std::size_t D = shape.head_dim, H = shape.num_heads;
  // Decoding sequences (one query token) are split over their context, all
  // heads per task (unless shape.split_decode is off); the others over (kv
  // head, block of query tokens).
  const auto split = [&](const AttentionSequence& seq) { return shape.split_decode && seq.num_tokens == 1; };
  const auto tasks_of = [&](const AttentionSequence& seq) -> std::size_t {
    if (split(seq)) {
      const std::size_t context = decode_context(seq);
      const std::size_t chunk = decode_chunk_positions(context, pool.size());
      return std::max<std::size_t>(1, (context + chunk - 1) / chunk);
    }
    return shape.num_kv_heads * ((seq.num_tokens + QB - 1) / QB);
  };
  std::size_t total = 0;
  bool any_decode = false;
  for (const auto& seq : seqs) {
    total += tasks_of(seq);
    any_decode = any_decode || split(seq);
  }
  // Shared scratch: the task table, then (if decoding) one partial result per task and head.
  const std::size_t table_bytes = ((seqs.size() + 1) * sizeof(std::size_t) + 63) / 64 * 64;
  const std::size_t partial_floats = any_decode ? total * H * (D + 2) : 0;
  auto* shared = static_cast<std::byte*>(pool.shared_scratch(table_bytes + partial_floats * sizeof(float)));
  auto* first_task = reinterpret_cast<std::size_t*>(shared);
  auto* partials = reinterpret_cast<float*>(shared + table_bytes);
  first_task[0] = 0;
  for (std::size_t s = 0; s < seqs.size(); ++s) first_task[s + 1] = first_task[s] + tasks_of(seqs[s]);
  const std::size_t group = H / shape.num_kv_heads;
  const std::size_t scratch_floats = 2 * attention_key_tile * D + QB * group * (D + 2);
  pool.parallel_for(total, [&](std::size_t t, std::size_t worker) {
    const std::size_t s =
        static_cast<std::size_t>(std::upper_bound(first_task, first_task + seqs.size() + 1, t) - first_task) - 1;
    const std::size_t local = t - first_task[s];
    auto* scratch = static_cast<float*>(pool.scratch(worker, scratch_floats * sizeof(float)));
    const AttentionSequence& seq = seqs[s];
    if (split(seq)) {
      const std::size_t context = decode_context(seq);
      const std::size_t chunk = decode_chunk_positions(context, pool.size());
      const std::size_t p0 = seq.first_visible + std::min(context, local * chunk);
      const std::size_t p1 = seq.first_visible + std::min(context, (local + 1) * chunk);
      attention_decode_chunk<Arch>(q, seq, p0, p1, kv, shape, scale, q_ld, partials + t * H * (D + 2));
      return;
    }
    const std::size_t kv_head = local % shape.num_kv_heads, block = local / shape.num_kv_heads;
    const AttentionTask task{&seq, kv_head, block * QB, std::min(seq.num_tokens, (block + 1) * QB)};
    attention_task<Arch>(q, task, kv, shape, scale, q_ld, out_ld, out, scratch);
  });
  if (!any_decode) return;
  // Merge each decoding sequence's chunks: rescale every chunk to the global
  // maximum, add, normalise.
  for (std::size_t s = 0; s < seqs.size(); ++s) {
    if (!split(seqs[s])) continue;
    const std::size_t c0 = first_task[s], c1 = first_task[s + 1];
    for (std::size_t h = 0; h < H; ++h) {
      float global_max = -std::numeric_limits<float>::infinity();
      for (std::size_t c = c0; c < c1; ++c) global_max = std::max(global_max, partials[(c * H + h) * (D + 2) + D]);
      float* o = out + seqs[s].first_row * out_ld + h * D;
      std::fill(o, o + D, 0.0f);
      float sum = 0.0f;
      for (std::size_t c = c0; c < c1; ++c) {
        const float* part = partials + (c * H + h) * (D + 2);
        const float weight = part[D + 1] > 0.0f ? std::exp(part[D] - global_max) : 0.0f;  // empty chunks add nothing
        sum += weight * part[D + 1];
        for (std::size_t d = 0; d < D; ++d) o[d] += weight * part[d];
      }
      const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;  // 0: no visible key
      for (std::size_t d = 0; d < D; ++d) o[d] *= inv;
    }
  }
}

}  // namespace izwi::kernels::cpu::detail::inline IZWI_KERNELS_VARIANT
