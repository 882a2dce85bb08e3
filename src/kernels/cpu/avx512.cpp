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
extern const KernelTable avx512_kernels;
constinit const KernelTable avx512_kernels = detail::make_kernel_table<detail::KernelArch>("avx512");

}  // namespace izwi::kernels::cpu::variants
