// The "avx2" kernel variant: AVX2 + FMA + F16C, 8 floats per vector.
// Compiled with -mavx2 -mfma -mf16c (and -fvisibility=hidden) by
// cmake/izwiKernels.cmake; chosen at run time only on a CPU that has them
// (baseline.cpp), so nothing else may be compiled with these flags.

#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#error "src/kernels/cpu/avx2.cpp must be compiled with -mavx2 -mfma -mf16c"
#endif

#define IZWI_KERNELS_VARIANT avx2_variant
#include "izwi/kernels/cpu/detail/variant_table.hpp"

namespace izwi::kernels::cpu::variants {

static_assert(std::is_same_v<detail::KernelArch, xsimd::fma3<xsimd::avx2>>, "xsimd did not pick AVX2 + FMA");
extern const KernelTable avx2_kernels;
constinit const KernelTable avx2_kernels = detail::make_kernel_table<detail::KernelArch>("avx2");

}  // namespace izwi::kernels::cpu::variants
