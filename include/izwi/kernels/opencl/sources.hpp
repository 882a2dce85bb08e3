#pragma once
// izwi's OpenCL kernels, as OpenCL C 1.2 source (header-only stays
// header-only: the program is compiled at run time, once per context, and its
// binary cached on disk; see context.hpp). The host side is OpenClOps
// (kernels/opencl/ops.hpp), which documents each operation.
//
// Conventions: activations are f32; every pointer argument comes with an
// element offset (`*_off`), because buffers are addressed as (cl_mem, offset)
// rather than through sub-buffers (whose offsets must meet the device's base
// alignment). Weights are rows of `row_bytes` bytes in their stored type,
// widened to f32 element by element (f16 through vload_half, which needs no
// cl_khr_fp16; bf16 by a shift; Q8_0 as ggml's 34-byte blocks of an f16 scale
// and 32 int8 values).
//
// Matrix products come in three kernels (OpenClOps picks by the number of
// activation rows M, docs/opencl.md):
//   gemv_*        M <= GEMV_MAX_ROWS (decode, small decode batches): several
//                 weight rows per work-group, each read once (for all M) by
//                 a slice of neighbouring work-items that stride over k in
//                 float4 units, so that neighbours read neighbouring weights; each item keeps
//                 one sum per activation row. A slice is one sub-group,
//                 reduced by sub_group_reduce_add, where the device has
//                 cl_khr_subgroups (the host then defines IZWI_HAVE_SUBGROUPS);
//                 otherwise a power-of-two run of items that the host sizes
//                 from k, reduced by a local-memory tree. (One work-group per
//                 row made PoCL spend its time starting 151936 work-groups
//                 per lm_head product; a GPU, too, wants short rows packed.)
//   gemm_tiled_*  larger M (prefill, big batches): 32x32 output tiles per
//                 8x8 work-group, x and the widened weights staged through
//                 local memory 16 columns of k at a time, 4x4 outputs per
//                 work-item in registers.
//   matmul_*      one work-item per output: the fallback for a device whose
//                 work-groups cannot hold the tiled kernel's 64 items.

#include <cstddef>

namespace izwi::opencl {

inline constexpr int max_head_dim = 256;
/// Activation rows one gemv_* launch serves (its per-work-item sums).
inline constexpr std::size_t gemv_max_rows = 8;
/// The tiled GEMM's fixed work-group shape and output tile (see the kernel).
inline constexpr std::size_t gemm_work_group_side = 8, gemm_tile = 32;

inline constexpr const char* kernel_source = R"CLC(
#define MAX_HEAD_DIM 256
#define GEMV_MAX_ROWS 8
#ifdef IZWI_HAVE_SUBGROUPS
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif

inline float load_f32(__global const uchar* w, ulong row_bytes, ulong r, uint c) {
  return ((__global const float*)(w + r * row_bytes))[c];
}
inline float load_f16(__global const uchar* w, ulong row_bytes, ulong r, uint c) {
  return vload_half(c, (__global const half*)(w + r * row_bytes));
}
inline float load_bf16(__global const uchar* w, ulong row_bytes, ulong r, uint c) {
  return as_float((uint)((__global const ushort*)(w + r * row_bytes))[c] << 16);
}
inline float load_q8_0(__global const uchar* w, ulong row_bytes, ulong r, uint c) {
  __global const uchar* block = w + r * row_bytes + (ulong)(c / 32u) * 34u;
  const float scale = vload_half(0, (__global const half*)block);
  return scale * (float)((__global const char*)(block + 2))[c % 32u];
}

/* out[i][c] = table[tokens[i]][c] */
#define EMBED(NAME, LOAD)                                                                  \
  __kernel void NAME(__global const uchar* table, ulong row_bytes, uint cols,              \
                     __global const int* tokens, __global float* out, ulong out_off) {     \
    const uint c = get_global_id(0), i = get_global_id(1);                                 \
    if (c >= cols) return;                                                                 \
    out[out_off + (ulong)i * cols + c] = LOAD(table, row_bytes, (ulong)tokens[i], c);      \
  }
EMBED(embed_f32, load_f32)
EMBED(embed_f16, load_f16)
EMBED(embed_bf16, load_bf16)
EMBED(embed_q8_0, load_q8_0)

/* y[m][n] = sum_c x[m][c] * w[n][c]   (torch Linear: y = x w^T) */
#define MATMUL(NAME, LOAD)                                                                 \
  __kernel void NAME(__global const float* x, ulong x_off, uint k, __global const uchar* w, \
                     ulong row_bytes, uint n, __global float* y, ulong y_off) {            \
    const uint r = get_global_id(0), m = get_global_id(1);                                 \
    if (r >= n) return;                                                                    \
    __global const float* xr = x + x_off + (ulong)m * k;                                   \
    float acc = 0.0f;                                                                      \
    for (uint c = 0; c < k; ++c) acc = fma(LOAD(w, row_bytes, r, c), xr[c], acc);          \
    y[y_off + (ulong)m * n + r] = acc;                                                     \
  }
MATMUL(matmul_f32, load_f32)
MATMUL(matmul_f16, load_f16)
MATMUL(matmul_bf16, load_bf16)
MATMUL(matmul_q8_0, load_q8_0)

/* The GEMV: y[r][row] = sum_c x[r][c] * w[row][c] for r < m <= GEMV_MAX_ROWS.
   Each weight row is read once, by a slice of `lanes` neighbouring work-items
   (lane i takes units i, i + lanes, ...: neighbouring items, neighbouring
   weights) that each keep one sum per activation row; a work-group holds
   several rows' slices. A unit is 4 values read as one vector (a scalar tail
   for k not a multiple of 4), each row's sum kept as a float4 and the r loop
   unrolled, so that a CPU device (PoCL) keeps the sums in registers.
   gemv_row_<type> adds one item's part of a row to acc. */
#define GEMV_ROW(NAME, LOAD, LOAD4)                                                                \
  inline void NAME(__global const float* x, uint k, uint m, __global const uchar* w, ulong row_bytes, \
                   uint row, uint lane, uint lanes, float* acc) {                                  \
    __global const uchar* wrow = w + (ulong)row * row_bytes;                                       \
    const uint k4 = k / 4u;                                                                        \
    float4 part[GEMV_MAX_ROWS];                                                                    \
    for (uint r = 0; r < GEMV_MAX_ROWS; ++r) part[r] = (float4)(0.0f);                             \
    for (uint u = lane; u < k4; u += lanes) {                                                      \
      const float4 wv = LOAD4(wrow, u);                                                            \
      _Pragma("unroll") for (uint r = 0; r < GEMV_MAX_ROWS; ++r)                                   \
        if (r < m) part[r] = fma(wv, vload4(u, x + (ulong)r * k), part[r]);                        \
    }                                                                                              \
    for (uint r = 0; r < GEMV_MAX_ROWS; ++r)                                                       \
      if (r < m) acc[r] += (part[r].x + part[r].y) + (part[r].z + part[r].w);                      \
    for (uint c = k4 * 4u + lane; c < k; c += lanes) {                                             \
      const float wv = LOAD(w, row_bytes, (ulong)row, c);                                          \
      for (uint r = 0; r < GEMV_MAX_ROWS; ++r)                                                     \
        if (r < m) acc[r] = fma(wv, x[(ulong)r * k + c], acc[r]);                                  \
    }                                                                                              \
  }
#define LOAD4_F32(wrow, u) vload4((u), (__global const float*)(wrow))
#define LOAD4_F16(wrow, u) vload_half4((u), (__global const half*)(wrow))
#define LOAD4_BF16(wrow, u) as_float4(convert_uint4(vload4((u), (__global const ushort*)(wrow))) << 16)
GEMV_ROW(gemv_row_f32, load_f32, LOAD4_F32)
GEMV_ROW(gemv_row_f16, load_f16, LOAD4_F16)
GEMV_ROW(gemv_row_bf16, load_bf16, LOAD4_BF16)

/* Q8_0: the unit of work is a quarter block (8 int8 values), so neighbouring
   items read neighbouring 8-byte runs and each widens 8 weights at once. */
inline void gemv_row_q8_0(__global const float* x, uint k, uint m, __global const uchar* w, ulong row_bytes,
                          uint row, uint lane, uint lanes, float* acc) {
  __global const uchar* wrow = w + (ulong)row * row_bytes;
  float4 part[GEMV_MAX_ROWS];
  for (uint r = 0; r < GEMV_MAX_ROWS; ++r) part[r] = (float4)(0.0f);
  for (uint u = lane; u < k / 8u; u += lanes) {
    __global const uchar* block = wrow + (ulong)(u / 4u) * 34u;
    const float scale = vload_half(0, (__global const half*)block);
    const float8 wv = convert_float8(vload8(0, (__global const char*)(block + 2 + (u % 4u) * 8u))) * scale;
    _Pragma("unroll") for (uint r = 0; r < GEMV_MAX_ROWS; ++r)
      if (r < m) {
        const float8 xv = vload8(u, x + (ulong)r * k);
        part[r] = fma(wv.hi, xv.hi, fma(wv.lo, xv.lo, part[r]));
      }
  }
  for (uint r = 0; r < GEMV_MAX_ROWS; ++r)
    if (r < m) acc[r] += (part[r].x + part[r].y) + (part[r].z + part[r].w);
}

/* Sums acc[r] (r < m) over each `lanes`-wide slice of the work-group (lanes
   a power of two) through a local-memory tree, and writes the totals of this
   item's slice to y[r][row] when row < n. Every item takes part in every
   barrier, a slice past the last row too. scratch: GEMV_MAX_ROWS * local
   size floats. */
inline void gemv_reduce_slices(const float* acc, uint m, uint lanes, __local float* scratch, __global float* y,
                               uint n, uint row) {
  const uint lid = get_local_id(0), wg = get_local_size(0), lane = lid % lanes;
  for (uint r = 0; r < GEMV_MAX_ROWS; ++r)
    if (r < m) scratch[r * wg + lid] = acc[r];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint half_size = lanes / 2u; half_size > 0u; half_size /= 2u) {
    if (lane < half_size)
      for (uint r = 0; r < GEMV_MAX_ROWS; ++r)
        if (r < m) scratch[r * wg + lid] += scratch[r * wg + lid + half_size];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (row < n)
    for (uint r = lane; r < m; r += lanes) y[(ulong)r * n + row] = scratch[r * wg + lid - lane];
}

/* use_subgroups (the host passes 1 only where IZWI_HAVE_SUBGROUPS is
   defined): one sub-group per weight row, reduced by sub_group_reduce_add,
   no local memory, no barrier; the work-groups stride over the rows, so the
   rows a group covers follow the device's sub-group size, which the host
   only estimates. Otherwise: local size / lanes row slices per work-group,
   rows get_group_id(0) * slices + slice; the last group may be ragged. */
#define GEMV(NAME, ROW)                                                                            \
  __kernel void NAME(__global const float* x, ulong x_off, uint k, uint m, __global const uchar* w,  \
                     ulong row_bytes, uint n, __global float* y, ulong y_off, __local float* scratch, \
                     uint lanes, uint use_subgroups) {                                             \
    __global const float* xr = x + x_off;                                                          \
    float acc[GEMV_MAX_ROWS];                                                                      \
    GEMV_SUBGROUP_ROWS(ROW)                                                                        \
    const uint lid = get_local_id(0), slices = get_local_size(0) / lanes;                          \
    const uint row = get_group_id(0) * slices + lid / lanes;                                       \
    for (uint r = 0; r < GEMV_MAX_ROWS; ++r) acc[r] = 0.0f;                                        \
    if (row < n) ROW(xr, k, m, w, row_bytes, row, lid % lanes, lanes, acc);                        \
    gemv_reduce_slices(acc, m, lanes, scratch, y + y_off, n, row);                                 \
  }
#ifdef IZWI_HAVE_SUBGROUPS
#define GEMV_SUBGROUP_ROWS(ROW)                                                                    \
  if (use_subgroups) {                                                                             \
    const uint per_group = get_num_sub_groups(), lane = get_sub_group_local_id();                  \
    const uint width = get_sub_group_size(), stride = get_num_groups(0) * per_group;              \
    for (uint row = get_group_id(0) * per_group + get_sub_group_id(); row < n; row += stride) {    \
      for (uint r = 0; r < GEMV_MAX_ROWS; ++r) acc[r] = 0.0f;                                      \
      ROW(xr, k, m, w, row_bytes, row, lane, width, acc);                                          \
      for (uint r = 0; r < GEMV_MAX_ROWS; ++r) {                                                   \
        if (r >= m) break;                                                                         \
        const float total = sub_group_reduce_add(acc[r]);                                          \
        if (lane == 0) y[y_off + (ulong)r * n + row] = total;                                      \
      }                                                                                            \
    }                                                                                              \
    return;                                                                                        \
  }
#else
#define GEMV_SUBGROUP_ROWS(ROW)
#endif
GEMV(gemv_f32, gemv_row_f32)
GEMV(gemv_f16, gemv_row_f16)
GEMV(gemv_bf16, gemv_row_bf16)
GEMV(gemv_q8_0, gemv_row_q8_0)

/* Tiled y = x w^T for larger m: an 8x8 work-group computes a 32x32 tile of y
   (32 activation rows by 32 weight rows), item (tx, ty) the 4x4 outputs at
   rows ty + 8i, columns tx + 8j (strided, so the local reads of one step
   hit distinct banks). Each step stages 16 columns of k of x and of the
   widened weights in local memory; values past m, n or k load as zero. */
#define GEMM_TILE 32
#define GEMM_TILE_K 16
#define GEMM_SIDE 8
#define GEMM_TILED(NAME, LOAD)                                                                     \
  __kernel __attribute__((reqd_work_group_size(GEMM_SIDE, GEMM_SIDE, 1))) void NAME(               \
      __global const float* x, ulong x_off, uint k, uint m, __global const uchar* w, ulong row_bytes, \
      uint n, __global float* y, ulong y_off) {                                                    \
    __local float xs[GEMM_TILE_K][GEMM_TILE + 1];                                                  \
    __local float ws[GEMM_TILE_K][GEMM_TILE + 1];                                                  \
    const uint tx = get_local_id(0), ty = get_local_id(1), lid = ty * GEMM_SIDE + tx;              \
    const uint n0 = get_group_id(0) * GEMM_TILE, m0 = get_group_id(1) * GEMM_TILE;                 \
    float acc[4][4];                                                                               \
    for (uint i = 0; i < 4; ++i)                                                                   \
      for (uint j = 0; j < 4; ++j) acc[i][j] = 0.0f;                                               \
    for (uint k0 = 0; k0 < k; k0 += GEMM_TILE_K) {                                                 \
      for (uint e = lid; e < GEMM_TILE * GEMM_TILE_K; e += GEMM_SIDE * GEMM_SIDE) {                \
        const uint t = e / GEMM_TILE_K, c = e % GEMM_TILE_K, gk = k0 + c;                          \
        xs[c][t] = (m0 + t < m && gk < k) ? x[x_off + (ulong)(m0 + t) * k + gk] : 0.0f;            \
        ws[c][t] = (n0 + t < n && gk < k) ? LOAD(w, row_bytes, (ulong)(n0 + t), gk) : 0.0f;        \
      }                                                                                            \
      barrier(CLK_LOCAL_MEM_FENCE);                                                                \
      for (uint c = 0; c < GEMM_TILE_K; ++c) {                                                     \
        float a[4], b[4];                                                                          \
        for (uint i = 0; i < 4; ++i) a[i] = xs[c][ty + GEMM_SIDE * i];                             \
        for (uint j = 0; j < 4; ++j) b[j] = ws[c][tx + GEMM_SIDE * j];                             \
        for (uint i = 0; i < 4; ++i)                                                               \
          for (uint j = 0; j < 4; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);                     \
      }                                                                                            \
      barrier(CLK_LOCAL_MEM_FENCE);                                                                \
    }                                                                                              \
    for (uint i = 0; i < 4; ++i)                                                                   \
      for (uint j = 0; j < 4; ++j) {                                                               \
        const uint gm = m0 + ty + GEMM_SIDE * i, gn = n0 + tx + GEMM_SIDE * j;                     \
        if (gm < m && gn < n) y[y_off + (ulong)gm * n + gn] = acc[i][j];                           \
      }                                                                                            \
  }
GEMM_TILED(gemm_tiled_f32, load_f32)
GEMM_TILED(gemm_tiled_f16, load_f16)
GEMM_TILED(gemm_tiled_bf16, load_bf16)
GEMM_TILED(gemm_tiled_q8_0, load_q8_0)

/* RMSNorm of row get_global_id(0) of n values (rows back to back; a head is a row). */
__kernel void rms_norm(__global const float* x, ulong x_off, uint n, __global const float* weight, float eps,
                       __global float* y, ulong y_off) {
  const ulong row = get_global_id(0);
  __global const float* xr = x + x_off + row * n;
  __global float* yr = y + y_off + row * n;
  float sum = 0.0f;
  for (uint i = 0; i < n; ++i) sum = fma(xr[i], xr[i], sum);
  const float inv = 1.0f / sqrt(sum / (float)n + eps);
  for (uint i = 0; i < n; ++i) yr[i] = xr[i] * inv * weight[i];
}

/* NeoX rotary: item (row*heads + head, i) rotates the pair (i, i + head_dim/2). */
__kernel void rope(__global float* x, ulong x_off, uint heads, uint head_dim, __global const long* positions,
                   __global const float* cos_table, __global const float* sin_table) {
  const uint rh = get_global_id(0), i = get_global_id(1);
  const uint half_dim = head_dim / 2u;
  const long pos = positions[rh / heads];
  __global float* h = x + x_off + (ulong)rh * head_dim;
  const float c = cos_table[pos * half_dim + i], s = sin_table[pos * half_dim + i];
  const float x1 = h[i], x2 = h[i + half_dim];
  h[i] = x1 * c - x2 * s;
  h[i + half_dim] = x2 * c + x1 * s;
}

inline ushort f32_to_bf16_rne(float f) {
  const uint u = as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u); /* quiet NaN */
  return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* K/V row of token t into cache slot slots[t] (negative: padding, skipped). */
#define STORE_KV(NAME, STORE)                                                                          \
  __kernel void NAME(__global const float* k, ulong k_off, __global const float* v, ulong v_off,       \
                     __global const long* slots, uint row, __global uchar* keys, ulong keys_off,       \
                     __global uchar* values, ulong values_off) {                                       \
    const uint t = get_global_id(0), e = get_global_id(1);                                             \
    const long slot = slots[t];                                                                        \
    if (slot < 0) return;                                                                              \
    const ulong dst = (ulong)slot * row + e;                                                           \
    STORE(k[k_off + (ulong)t * row + e], keys + keys_off, dst);                                        \
    STORE(v[v_off + (ulong)t * row + e], values + values_off, dst);                                    \
  }
#define STORE_F32(val, base, i) ((__global float*)(base))[i] = (val)
#define STORE_F16(val, base, i) vstore_half_rte((val), (i), (__global half*)(base))
#define STORE_BF16(val, base, i) ((__global ushort*)(base))[i] = f32_to_bf16_rne(val)
STORE_KV(store_kv_f32, STORE_F32)
STORE_KV(store_kv_f16, STORE_F16)
STORE_KV(store_kv_bf16, STORE_BF16)

/* Paged causal GQA attention, one item per (query row, head), online softmax.
   seq_info per sequence: num_computed, first_row, table_offset, first_visible, visible_end (0: causal). */
#define LOAD_F32(base, i) ((__global const float*)(base))[i]
#define LOAD_F16(base, i) vload_half((i), (__global const half*)(base))
#define LOAD_BF16(base, i) as_float((uint)((__global const ushort*)(base))[i] << 16)
#define ATTENTION(NAME, LOAD)                                                                          \
  __kernel void NAME(__global const float* q, ulong q_off, __global const int* row_seq,                \
                     __global const int* seq_info, __global const uint* tables,                        \
                     __global const uchar* keys, ulong keys_off, __global const uchar* values,         \
                     ulong values_off, uint heads, uint kv_heads, uint head_dim, uint block_size,      \
                     float scale, __global float* out, ulong out_off) {                                \
    const uint r = get_global_id(0), h = get_global_id(1);                                             \
    if (row_seq[r] < 0) return; /* a row of no sequence */                                             \
    __global const int* info = seq_info + 5 * row_seq[r];                                              \
    const uint num_computed = (uint)info[0], first_row = (uint)info[1];                                \
    __global const uint* table = tables + info[2];                                                     \
    const uint first_visible = (uint)info[3];                                                          \
    const uint end = info[4] ? (uint)info[4] : num_computed + (r - first_row) + 1u;                    \
    const uint row = kv_heads * head_dim, kvh = h / (heads / kv_heads);                                \
    __global const float* qh = q + q_off + ((ulong)r * heads + h) * head_dim;                          \
    __global const uchar* kb = keys + keys_off;                                                        \
    __global const uchar* vb = values + values_off;                                                    \
    float acc[MAX_HEAD_DIM];                                                                           \
    for (uint d = 0; d < head_dim; ++d) acc[d] = 0.0f;                                                 \
    float running_max = -INFINITY, denom = 0.0f;                                                       \
    for (uint p = first_visible; p < end; ++p) {                                                       \
      const ulong base = ((ulong)table[p / block_size] * block_size + p % block_size) * row +          \
                         (ulong)kvh * head_dim;                                                        \
      float score = 0.0f;                                                                              \
      for (uint d = 0; d < head_dim; ++d) score = fma(qh[d], LOAD(kb, base + d), score);               \
      score *= scale;                                                                                  \
      const float new_max = fmax(running_max, score);                                                  \
      const float correction = exp(running_max - new_max), weight = exp(score - new_max);              \
      denom = denom * correction + weight;                                                             \
      for (uint d = 0; d < head_dim; ++d) acc[d] = acc[d] * correction + weight * LOAD(vb, base + d);  \
      running_max = new_max;                                                                           \
    }                                                                                                  \
    __global float* o = out + out_off + ((ulong)r * heads + h) * head_dim;                             \
    const float inv = denom > 0.0f ? 1.0f / denom : 0.0f;                                              \
    for (uint d = 0; d < head_dim; ++d) o[d] = acc[d] * inv;                                           \
  }
ATTENTION(attention_f32, LOAD_F32)
ATTENTION(attention_f16, LOAD_F16)
ATTENTION(attention_bf16, LOAD_BF16)

__kernel void silu_mul(__global float* gate, ulong gate_off, __global const float* up, ulong up_off) {
  const ulong i = get_global_id(0);
  const float g = gate[gate_off + i];
  gate[gate_off + i] = g / (1.0f + exp(-g)) * up[up_off + i];
}

__kernel void add_inplace(__global float* x, ulong x_off, __global const float* y, ulong y_off) {
  const ulong i = get_global_id(0);
  x[x_off + i] += y[y_off + i];
}

/* out[i][d] = x[rows[i]][d] */
__kernel void gather_rows(__global const float* x, ulong x_off, uint dim, __global const uint* rows,
                          __global float* out, ulong out_off) {
  const uint d = get_global_id(0), i = get_global_id(1);
  if (d >= dim) return;
  out[out_off + (ulong)i * dim + d] = x[x_off + (ulong)rows[i] * dim + d];
}
)CLC";

}  // namespace izwi::opencl
