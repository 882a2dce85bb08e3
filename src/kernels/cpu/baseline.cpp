// The portable kernel variants and the dispatcher (izwi/kernels/cpu/dispatch.hpp).
//
// Compiled with the project's flags only (no -m options): "scalar" and the
// architecture's baseline ("sse2" on x86-64) run on every CPU of the
// architecture. The faster variants live in avx2.cpp and avx512.cpp, compiled
// with their own flags; IZWI_KERNELS_HAVE_AVX2 / IZWI_KERNELS_HAVE_AVX512 say
// they are linked in. This file comes first in the library, so where a
// variant and this file both emit the same inline function (a standard
// library helper, the thread pool), the linker keeps this portable copy.

#define IZWI_KERNELS_VARIANT baseline_variant
#include "izwi/kernels/cpu/detail/variant_table.hpp"

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>
#define IZWI_KERNELS_X86_64 1
#endif
#if IZWI_KERNELS_X86_64 && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace izwi::kernels::cpu {

namespace variants {
#if IZWI_KERNELS_HAVE_AVX2
extern const KernelTable avx2_kernels;
#endif
#if IZWI_KERNELS_HAVE_AVX512
extern const KernelTable avx512_amx_kernels, avx512_bf16_dot_kernels, avx512_kernels, avx512_without_vnni_kernels,
    avx512bw_kernels;
#endif
}  // namespace variants

namespace {

#if IZWI_KERNELS_X86_64 && XSIMD_WITH_SSE2
// The x86-64 baseline, named for what it is even when the project's flags
// allow more (those builds run only where the flags' instructions exist).
constinit const KernelTable baseline_kernels = detail::make_kernel_table<xsimd::sse2>("sse2");
#else
constinit const KernelTable baseline_kernels = detail::make_kernel_table<detail::KernelArch>("baseline");
#endif
constinit const KernelTable scalar_kernels = detail::make_kernel_table<detail::ScalarArch>("scalar");

#if IZWI_KERNELS_X86_64
/// What this CPU and its operating system support (cpuid and XGETBV: the
/// OS must save the AVX / AVX-512 register state, or using them faults).
struct X86Features {
  bool avx2 = false;    // AVX2 + FMA + F16C, YMM state enabled
  bool avx512 = false;  // AVX-512 F/CD/BW/DQ/VL, ZMM and opmask state enabled
  bool avx512_vnni = false;  // and AVX512_VNNI (the Q8_0 matmuls' int8 dot product)
  bool amx = false;  // and AMX-TILE, AMX-BF16 and AMX-INT8, tile state granted (the BF16 and Q8_0 matmuls)
  // Or else: AVX512_BF16 on a CPU with no AMX at all (vdpbf16ps for the BF16
  // matmuls). Not on an AMX CPU whose OS withholds the tiles: there (Sapphire
  // Rapids) vdpbf16ps runs at half the rate of the widening FMAs.
  bool avx512_bf16_dot = false;
};

/// Asks Linux for this process's permission to use the AMX tile data
/// (arch_prctl ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA: Linux 5.16+; without
/// it the first tile instruction faults) and checks that XCR0 enables the
/// tile configuration and data state. False elsewhere, or when refused.
bool amx_tile_state_granted() noexcept {
#if defined(__linux__)
  constexpr long arch_req_xcomp_perm = 0x1023, xfeature_xtiledata = 18;
  if (syscall(SYS_arch_prctl, arch_req_xcomp_perm, xfeature_xtiledata) != 0) return false;
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  return (xcr0_lo & 0x60000u) == 0x60000u;  // XTILECFG (bit 17) and XTILEDATA (bit 18)
#else
  return false;
#endif
}

X86Features detect_x86() noexcept {
  X86Features f;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return f;
  const bool osxsave = ecx & (1u << 27), avx = ecx & (1u << 28), fma = ecx & (1u << 12), f16c = ecx & (1u << 29);
  if (!osxsave || !avx) return f;
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  const bool ymm_state = (xcr0_lo & 0x6u) == 0x6u;     // SSE and AVX state
  const bool zmm_state = (xcr0_lo & 0xe6u) == 0xe6u;   // and opmask, ZMM_Hi256, Hi16_ZMM
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return f;
  const unsigned leaf7_subleaves = eax;  // the highest subleaf of leaf 7
  const bool avx2 = ebx & (1u << 5);
  const bool avx512f = ebx & (1u << 16), avx512dq = ebx & (1u << 17), avx512cd = ebx & (1u << 28),
             avx512bw = ebx & (1u << 30), avx512vl = ebx & (1u << 31);
  f.avx2 = ymm_state && avx2 && fma && f16c;
  f.avx512 = f.avx2 && zmm_state && avx512f && avx512dq && avx512cd && avx512bw && avx512vl;
  f.avx512_vnni = f.avx512 && (ecx & (1u << 11));
  const bool amx_tile = edx & (1u << 24), amx_bf16 = edx & (1u << 22), amx_int8 = edx & (1u << 25);
  f.amx = f.avx512_vnni && amx_tile && amx_bf16 && amx_int8 && amx_tile_state_granted();
  if (leaf7_subleaves >= 1 && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx))
    f.avx512_bf16_dot = f.avx512_vnni && !amx_tile && (eax & (1u << 5));  // leaf 7.1 EAX bit 5: AVX512_BF16
  return f;
}
#endif

struct Variant {
  std::string_view name;
  const KernelTable* table;
  bool supported;
};

/// Every variant compiled in, most portable first, with whether this CPU runs it.
struct Variants {
  std::array<Variant, 5> list{};
  std::array<std::string_view, 5> names{};
  std::size_t count = 0;

  Variants() noexcept {
    add(&scalar_kernels, true);
    add(&baseline_kernels, true);
#if IZWI_KERNELS_X86_64
    const X86Features cpu = detect_x86();
#endif
#if IZWI_KERNELS_HAVE_AVX2
    add(&variants::avx2_kernels, cpu.avx2);
#endif
#if IZWI_KERNELS_HAVE_AVX512
    // "avx512bw" (no VNNI, no AMX) is listed for tests and IZWI_CPU_ARCH;
    // "avx512" uses VNNI, AMX and AVX512_BF16 where the CPU has them and is the best.
    add(&variants::avx512bw_kernels, cpu.avx512);
    add(cpu.amx               ? &variants::avx512_amx_kernels
        : cpu.avx512_bf16_dot ? &variants::avx512_bf16_dot_kernels
        : cpu.avx512_vnni     ? &variants::avx512_kernels
                              : &variants::avx512_without_vnni_kernels,
        cpu.avx512);
#endif
  }
  void add(const KernelTable* table, bool supported) noexcept {
    list[count] = {table->name, table, supported};
    names[count] = table->name;
    ++count;
  }
  const KernelTable* find(std::string_view name) const noexcept {
    for (std::size_t i = 0; i < count; ++i)
      if (list[i].name == name) return list[i].supported ? list[i].table : nullptr;
    return nullptr;
  }
  const KernelTable* best() const noexcept {
    for (std::size_t i = count; i-- > 0;)
      if (list[i].supported) return list[i].table;
    return &scalar_kernels;
  }
  std::string joined(bool supported_only) const {
    std::string out;
    for (std::size_t i = 0; i < count; ++i) {
      if (supported_only && !list[i].supported) continue;
      if (!out.empty()) out += ", ";
      out += list[i].name;
    }
    return out;
  }
};

const Variants& variants_here() noexcept {
  static const Variants v;
  return v;
}

/// IZWI_CPU_ARCH when it names a usable variant, else (with a message
/// saying why) the best one.
const KernelTable* choose_at_startup() noexcept {
  const Variants& v = variants_here();
  const char* forced = std::getenv("IZWI_CPU_ARCH");
  if (forced == nullptr || *forced == '\0') return v.best();
  if (const KernelTable* table = v.find(forced)) return table;
  bool built = false;
  for (std::size_t i = 0; i < v.count; ++i) built = built || v.list[i].name == forced;
  if (built)
    std::fprintf(stderr, "izwi: IZWI_CPU_ARCH=%s: this CPU lacks its instructions (usable here: %s); using %s\n",
                 forced, v.joined(true).c_str(), v.best()->name);
  else
    std::fprintf(stderr, "izwi: IZWI_CPU_ARCH=%s is not a kernel variant of this build (built: %s); using %s\n",
                 forced, v.joined(false).c_str(), v.best()->name);
  return v.best();
}

std::atomic<const KernelTable*>& active_slot() noexcept {
  static std::atomic<const KernelTable*> slot{choose_at_startup()};
  return slot;
}

}  // namespace

const KernelTable& active_kernels() noexcept { return *active_slot().load(std::memory_order_relaxed); }

const KernelTable* kernels_for(std::string_view name) noexcept { return variants_here().find(name); }

std::span<const std::string_view> compiled_kernel_names() noexcept {
  const Variants& v = variants_here();
  return {v.names.data(), v.count};
}

bool select_kernels(std::string_view name) noexcept {
  const KernelTable* table = kernels_for(name);
  if (table == nullptr) return false;
  active_slot().store(table, std::memory_order_relaxed);
  return true;
}

}  // namespace izwi::kernels::cpu
