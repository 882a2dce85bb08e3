#pragma once
// make_kernel_table<Arch>(): one kernel variant's entry points (dispatch.hpp),
// the kernels instantiated for Arch. Included by the variant translation units
// of src/kernels/cpu/ only, after they set IZWI_KERNELS_VARIANT (simd.hpp).

#include <cstddef>
#include <span>

#include "izwi/kernels/cpu/detail/attention_kernels.hpp"
#include "izwi/kernels/cpu/detail/conv1d_kernels.hpp"
#include "izwi/kernels/cpu/detail/elementwise_kernels.hpp"
#include "izwi/kernels/cpu/detail/matmul_bf16_dot_kernels.hpp"
#include "izwi/kernels/cpu/detail/matmul_kernels.hpp"
#include "izwi/kernels/cpu/detail/rotary_kernels.hpp"
#include "izwi/kernels/cpu/dispatch.hpp"

namespace izwi::kernels::cpu::detail::inline IZWI_KERNELS_VARIANT {

// The two entry points whose table signature differs from the kernel's.
template <class Arch>
void dequantize_row_entry(const WeightMatrix& w, std::size_t row, float* out) noexcept {
  widen_row<Arch>(w, row, out);
}
template <class Arch>
void paged_attention_entry(const float* q, const AttentionSequence* seqs, std::size_t num_seqs,
                           const KVLayerView& kv, const AttentionShape& shape, float* out,
                           ThreadPool& pool) noexcept {
  paged_attention<Arch>(q, std::span<const AttentionSequence>(seqs, num_seqs), kv, shape, out, pool);
}

// The codec's bf16 GEMM (conv1d_kernels.hpp) exists in the AMX and
// vdpbf16ps tables only (one panel layout, two kernels).
template <class Arch, Bf16Gemm Bf16>
constexpr auto conv1d_gemm_bf16_entry() noexcept {
  if constexpr (Bf16 == Bf16Gemm::amx) return &conv1d_gemm_bf16<Arch>;
  else if constexpr (Bf16 == Bf16Gemm::dot) return &conv1d_gemm_bf16_dot<Arch>;
  else return decltype(KernelTable::conv1d_gemm_bf16){nullptr};
}
template <class Arch, Bf16Gemm Bf16>
constexpr auto pack_gemm_panels_bf16_entry() noexcept {
  if constexpr (Bf16 == Bf16Gemm::amx || Bf16 == Bf16Gemm::dot) return &pack_gemm_panels_bf16<Arch>;
  else return decltype(KernelTable::pack_gemm_panels_bf16){nullptr};
}

/// Dot: the Q8_0 matmuls' int8 dot product; Bf16: BF16 weights widened, on
/// AMX or with vdpbf16ps (the "avx512" tables of CPUs with and without VNNI,
/// AMX and AVX512_BF16 differ only there).
template <class Arch, Int8Dot Dot = default_int8_dot<Arch>, Bf16Gemm Bf16 = Bf16Gemm::widen>
constexpr KernelTable make_kernel_table(const char* name) noexcept {
  return KernelTable{
      .name = name,
      .extensions = Bf16 == Bf16Gemm::amx   ? (Dot == Int8Dot::amx ? "vnni,amx-bf16,amx-int8" : "vnni,amx-bf16")
                    : Bf16 == Bf16Gemm::dot ? "vnni,avx512-bf16"
                    : uses_vnni512(Dot)     ? "vnni"
                                            : "",
      .lanes = Simd<Arch>::lanes,
      .q8_0_quantized_max_rows = q8_quantized_max_rows<Arch, Dot>,
      .q8_0_batch_invariant_quantized = q8_batch_invariant_quantized<Arch, Dot>,
      .bf16_rounded_min_rows = Bf16 == Bf16Gemm::amx ? amx_min_rows : Bf16 == Bf16Gemm::dot ? bf16_dot_min_rows : 0,
      .matmul = &matmul<Arch, Dot, Bf16>,
      .matmul_group = &matmul_group<Arch, Dot, Bf16>,
      .matmul_batch_invariant = &matmul_batch_invariant<Arch>,
      .matmul_group_batch_invariant = &matmul_group_batch_invariant<Arch, Dot>,
      .dequantize_row = &dequantize_row_entry<Arch>,
      .rms_norm = &rms_norm<Arch>,
      .rms_norm_heads = &rms_norm_heads<Arch>,
      .silu_mul = &silu_mul<Arch>,
      .softmax = &softmax<Arch>,
      .add_inplace = &add_inplace<Arch>,
      .apply_rotary = &apply_rotary<Arch>,
      .paged_attention = &paged_attention_entry<Arch>,
      .conv1d_gemm = &conv1d_gemm<Arch>,
      .pack_gemm_panels = &pack_gemm_panels<Arch>,
      .conv1d_gemm_bf16 = conv1d_gemm_bf16_entry<Arch, Bf16>(),
      .pack_gemm_panels_bf16 = pack_gemm_panels_bf16_entry<Arch, Bf16>(),
      .snake_beta = &snake_beta<Arch>,
      .transposed_conv_overlap_add = &transposed_conv_overlap_add<Arch>,
      .layer_norm = &layer_norm<Arch>,
      .gelu = &gelu<Arch>,
  };
}

}  // namespace izwi::kernels::cpu::detail::inline IZWI_KERNELS_VARIANT
