#pragma once
// Runtime dispatch of the CPU kernels over instruction-set families.
//
// The kernels are written once over an xsimd architecture (detail/simd.hpp)
// and compiled several times into the izwi::kernels library, each time in its
// own translation unit with that family's compiler flags (src/kernels/cpu/):
//
//   "scalar"   one float per "vector", no SIMD: the portable reference
//   "sse2"     the x86-64 baseline (on other CPUs: "baseline", the
//              architecture the library itself is compiled for, e.g. NEON)
//   "avx2"     AVX2 + FMA + F16C (Haswell, Zen 1 and later)
//   "avx512bw" AVX-512 F/CD/BW/DQ/VL (Skylake-SP, Ice Lake, Sapphire Rapids, Zen 4)
//   "avx512"   the same, whose Q8_0 matmuls use AVX512_VNNI's int8 dot product
//              where cpuid reports it (detected separately), else avx512bw's,
//              and whose BF16 matmuls of 4 rows or more (and Q8_0 ones of 9
//              rows or more) run on AMX tiles where the CPU has AMX-BF16 and
//              AMX-INT8 and the OS grants the tile state,
//              else those of 8 rows or more with AVX512_BF16's vdpbf16ps
//              where the CPU has it and no AMX (Zen 4, Zen 5)
//
// At the first kernel call the best variant this CPU supports is chosen once
// (from cpuid, through __builtin_cpu_supports) and every kernel call after
// that goes through one function pointer of its table: no per-element cost,
// and a program built with no -m/-march flags runs AVX-512 code on a CPU that
// has it and SSE2 code on one that has not, from the same binary.
//
// IZWI_CPU_ARCH=scalar|sse2|avx2|avx512bw|avx512 in the environment forces a variant
// (tests, benchmarks, bisecting a numerical difference); one that is not
// built in or not supported by the CPU is refused with a message on stderr
// and the best one is used instead. select_kernels() does the same from code.
//
// The tables are defined by the compiled library (izwi::kernels, linked
// through izwi::izwi). Without CMake, compile src/kernels/cpu/baseline.cpp
// with no flags and, on x86-64, avx2.cpp with -mavx2 -mfma -mf16c and
// avx512.cpp with -mavx512f -mavx512cd -mavx512bw -mavx512dq -mavx512vl
// -mavx2 -mfma -mf16c, define IZWI_KERNELS_HAVE_AVX2 and
// IZWI_KERNELS_HAVE_AVX512 for baseline.cpp, and link the three objects
// (baseline first); see docs/kernels.md.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace izwi {
struct KVLayerView;
namespace detail {
class ThreadPool;
}
}  // namespace izwi

namespace izwi::kernels::cpu {

struct WeightMatrix;
struct MatmulOutput;
struct AttentionSequence;
struct AttentionShape;
class RotaryTable;

/// One variant's entry points: the bodies of the public kernel functions
/// (matmul.hpp, elementwise.hpp, rotary.hpp, attention.hpp,
/// conv1d.hpp), argument for argument.
struct KernelTable {
  /// "scalar", "sse2", "avx2", "avx512bw", "avx512" (or "baseline" off x86-64).
  const char* name;
  /// The optional instruction sets this table uses beyond its name, for logs
  /// and /metrics: "" or a comma-separated list ("vnni", "vnni,amx-bf16,amx-int8", "vnni,avx512-bf16").
  const char* extensions;
  /// Floats per SIMD vector (1, 4, 8, 16).
  std::size_t lanes;
  /// Q8_0 matmuls of 1 to this many activation rows quantize the activations
  /// to 8-bit blocks for integer dot products (matmul.hpp); more rows widen
  /// the weights with F32 activations.
  std::size_t q8_0_quantized_max_rows;
  /// Whether matmul_group_batch_invariant quantizes the activations for
  /// Q8_0 weights too, at every row count (the same bits as matmul()'s
  /// quantized path; otherwise it widens the weights).
  bool q8_0_batch_invariant_quantized;
  /// BF16 matmuls of at least this many activation rows round the
  /// activations to bf16 and multiply them as bf16 pairs, on AMX tiles or
  /// with AVX512_BF16's vdpbf16ps (0: never; the "avx512" table of a CPU with
  /// AMX-BF16, or with AVX512_BF16 and no AMX): each result within
  /// 2^-8 * sum |x w| of the f32 product, rather than f32 rounding
  /// (matmul.hpp). `extensions` says which ("amx-bf16", "avx512-bf16").
  std::size_t bf16_rounded_min_rows;
  void (*matmul)(const float* x, std::size_t ldx, std::size_t m, const WeightMatrix& w, float* y, std::size_t ldy,
                 izwi::detail::ThreadPool& pool) noexcept;
  void (*matmul_group)(const float* x, std::size_t ldx, std::size_t m, const MatmulOutput* outputs,
                       std::size_t count, izwi::detail::ThreadPool& pool) noexcept;
  void (*matmul_batch_invariant)(const float* x, std::size_t ldx, std::size_t m, const WeightMatrix& w, float* y,
                                 std::size_t ldy, izwi::detail::ThreadPool& pool) noexcept;
  void (*matmul_group_batch_invariant)(const float* x, std::size_t ldx, std::size_t m, const MatmulOutput* outputs,
                                       std::size_t count, izwi::detail::ThreadPool& pool) noexcept;
  void (*dequantize_row)(const WeightMatrix& w, std::size_t row, float* out) noexcept;
  void (*rms_norm)(const float* x, std::size_t ldx, std::size_t rows, std::size_t n, const float* weight, float eps,
                   float* y, std::size_t ldy) noexcept;
  void (*rms_norm_heads)(float* x, std::size_t ld, std::size_t rows, std::size_t heads, std::size_t head_dim,
                         const float* weight, float eps) noexcept;
  void (*silu_mul)(const float* gate, const float* up, float* out, std::size_t n) noexcept;
  void (*softmax)(float* x, std::size_t n) noexcept;
  void (*add_inplace)(float* y, const float* x, std::size_t n) noexcept;
  void (*apply_rotary)(float* x, std::size_t ld, std::size_t heads, std::size_t head_dim,
                       std::span<const std::int64_t> positions, const RotaryTable& table) noexcept;
  void (*paged_attention)(const float* q, const AttentionSequence* seqs, std::size_t num_seqs, const KVLayerView& kv,
                          const AttentionShape& shape, float* out, izwi::detail::ThreadPool& pool) noexcept;
  // conv1d.hpp
  void (*conv1d_gemm)(const float* const* taps, std::size_t m, std::size_t kernel, std::size_t in,
                      const WeightMatrix& w, const float* packed, float* y, std::size_t ldy,
                      izwi::detail::ThreadPool& pool) noexcept;
  void (*pack_gemm_panels)(const WeightMatrix& w, float* panels) noexcept;
  // conv1d.hpp's bf16 codec GEMM on AMX or vdpbf16ps: null in every table without AMX-BF16 or AVX512_BF16.
  void (*conv1d_gemm_bf16)(const float* const* taps, std::size_t m, std::size_t kernel, std::size_t in,
                           std::size_t n, const std::uint16_t* panels, float* y, std::size_t ldy,
                           izwi::detail::ThreadPool& pool) noexcept;
  void (*pack_gemm_panels_bf16)(const WeightMatrix& w, std::uint16_t* panels) noexcept;
  void (*snake_beta)(const float* x, float* y, std::size_t rows, std::size_t channels, const float* bias,
                     const float* alpha_exp, const float* inv_beta) noexcept;
  void (*transposed_conv_overlap_add)(const float* products, std::size_t n, std::size_t kernel, std::size_t stride,
                                      std::size_t channels, const float* carry_in, const float* bias,
                                      std::size_t row_begin, std::size_t row_end, float* out,
                                      float* carry_out) noexcept;
  // Whisper's row ops.
  void (*layer_norm)(const float* x, std::size_t ldx, std::size_t rows, std::size_t n, const float* weight,
                     const float* bias, float eps, float* y, std::size_t ldy) noexcept;
  void (*gelu)(float* x, std::size_t n) noexcept;
};

/// The variant in use: chosen at the first call (IZWI_CPU_ARCH, or the best
/// this CPU supports), or by the last successful select_kernels().
const KernelTable& active_kernels() noexcept;

/// The variant called `name`, or nullptr when it is not compiled into this
/// program or this CPU lacks its instructions.
const KernelTable* kernels_for(std::string_view name) noexcept;

/// Every variant compiled in, from the most portable to the fastest
/// (whether or not this CPU supports it).
std::span<const std::string_view> compiled_kernel_names() noexcept;

/// Makes `name` the active variant. Returns false (and changes nothing) when
/// kernels_for(name) is null. Not to be called while kernels run on other
/// threads: meant for start-up, tests and benchmarks.
bool select_kernels(std::string_view name) noexcept;

}  // namespace izwi::kernels::cpu
