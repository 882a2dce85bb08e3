// The "avx512" kernel variant: AVX-512 F/CD/BW/DQ/VL (with AVX2, FMA, F16C),
// 16 floats per vector. Compiled with those -m flags (and
// -fvisibility=hidden) by cmake/izwiKernels.cmake; chosen at run time only
// on a CPU that has them (baseline.cpp), so nothing else may be compiled with
// these flags.

#if !defined(__AVX512F__) || !defined(__AVX512CD__) || !defined(__AVX512BW__) || !defined(__AVX512DQ__) || \
    !defined(__AVX512VL__) || !defined(__FMA__) || !defined(__F16C__)
#error "src/kernels/cpu/avx512.cpp must be compiled with -mavx512f -mavx512cd -mavx512bw -mavx512dq -mavx512vl -mavx2 -mfma -mf16c"
#endif

#define IZWI_KERNELS_VARIANT avx512_variant
#include "izwi/kernels/cpu/detail/variant_table.hpp"

namespace izwi::kernels::cpu::variants {

static_assert(std::is_same_v<detail::KernelArch, xsimd::avx512bw>, "xsimd did not pick AVX-512 BW");
// Tables of one instantiation, differing only in the Q8_0 matmuls'
// int8 dot product (detail/matmul_q8_kernels.hpp): "avx512" with VNNI's
// vpdpbusd, chosen by baseline.cpp on a CPU with AVX512_VNNI; "avx512" with
// AVX-512 BW's vpmaddubsw for a CPU without it; and that same code as
// "avx512bw", so that tests and IZWI_CPU_ARCH reach it on a VNNI CPU too.
// A fourth, "avx512" with BF16 weights on AMX-BF16 tiles
// (detail/matmul_amx_kernels.hpp) and Q8_0 weights of 9 or more activation
// rows on AMX-INT8 tiles (detail/matmul_q8_amx_kernels.hpp), for a CPU with
// both whose OS grants the tile state; a fifth, "avx512" with VNNI and BF16
// weights through vdpbf16ps (detail/matmul_bf16_dot_kernels.hpp), for a CPU
// with AVX512_BF16 and no AMX. avx512bw and the other two neither round
// BF16 activations.
using detail::Bf16Gemm;
using detail::Int8Dot;
extern const KernelTable avx512_amx_kernels, avx512_bf16_dot_kernels, avx512_kernels, avx512_without_vnni_kernels,
    avx512bw_kernels;
constinit const KernelTable avx512_amx_kernels =
    detail::make_kernel_table<detail::KernelArch, Int8Dot::amx, Bf16Gemm::amx>("avx512");
constinit const KernelTable avx512_bf16_dot_kernels =
    detail::make_kernel_table<detail::KernelArch, Int8Dot::vnni, Bf16Gemm::dot>("avx512");
constinit const KernelTable avx512_kernels = detail::make_kernel_table<detail::KernelArch, Int8Dot::vnni>("avx512");
constinit const KernelTable avx512_without_vnni_kernels =
    detail::make_kernel_table<detail::KernelArch, Int8Dot::avx2>("avx512");
constinit const KernelTable avx512bw_kernels = detail::make_kernel_table<detail::KernelArch, Int8Dot::avx2>("avx512bw");

}  // namespace izwi::kernels::cpu::variants
