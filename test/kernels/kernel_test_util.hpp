#pragma once
// Shared helpers of the kernel tests: random data, weights in every dtype,
// and the exact f32 values a stored weight stands for.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string_view>
#include <vector>

#include "izwi/core/half.hpp"
#include "izwi/kernels/cpu/dispatch.hpp"
#include "izwi/kernels/cpu/matmul.hpp"

namespace izwi::kernel_test {

/// Runs check(table) for every kernel variant compiled in that this CPU
/// runs ("scalar", "sse2", "avx2", "avx512"...), each explicitly, not only
/// the active one; reports the variants it cannot run here. With
/// IZWI_TEST_ACTIVE_VARIANT_ONLY set, only the variant the dispatcher chose:
/// the runs on emulated CPUs (run_on_cpu_model.cmake) are there to catch the
/// chosen path reaching an instruction that CPU lacks, and every variant is
/// already checked natively, at a fraction of qemu's cost.
inline bool active_variant_only() { return std::getenv("IZWI_TEST_ACTIVE_VARIANT_ONLY") != nullptr; }

/// Whether this executable runs under AddressSanitizer or ThreadSanitizer
/// (scripts/test.sh's asan and tsan configurations), where the kernels are
/// instrumented at -O1 and their register blocks live in checked memory:
/// the largest shapes run about 50 times slower than in Release.
#if defined(__has_feature)
#define IZWI_TEST_HAS_SANITIZER_FEATURE (__has_feature(address_sanitizer) || __has_feature(thread_sanitizer))
#else
#define IZWI_TEST_HAS_SANITIZER_FEATURE 0
#endif
inline constexpr bool sanitized_build =
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || IZWI_TEST_HAS_SANITIZER_FEATURE  // GCC, Clang
    true;
#else
    false;
#endif
#undef IZWI_TEST_HAS_SANITIZER_FEATURE

/// Whether a test's largest shape runs for `kernels`: every variant in an
/// uninstrumented build (the Release configuration checks them all), only
/// the active one under a sanitizer (its memory errors are the point there,
/// and the shape's blocking code is the variants' shared template), none
/// with IZWI_TEST_ACTIVE_VARIANT_ONLY (emulated CPUs).
inline bool runs_largest_shape(const kernels::cpu::KernelTable& kernels) {
  if (active_variant_only()) return false;
  return !sanitized_build || std::string_view(kernels.name) == kernels::cpu::active_kernels().name;
}

template <class Check>
void for_each_variant(Check&& check) {
  const bool active_only = active_variant_only();
  for (std::string_view name : kernels::cpu::compiled_kernel_names()) {
    if (active_only && name != kernels::cpu::active_kernels().name) continue;
    const kernels::cpu::KernelTable* table = kernels::cpu::kernels_for(name);
    if (table == nullptr) {
      WARN("kernel variant " << name << " skipped: this CPU lacks its instructions");
      continue;
    }
    INFO("kernel variant " << name);
    check(*table);
  }
}

inline std::vector<float> random_floats(std::size_t n, std::uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

/// Weights stored in `dtype`, and the exact values they stand for.
struct TestWeights {
  std::vector<std::byte> bytes;
  std::vector<float> values;  // rows x cols, what the stored weights mean
  kernels::cpu::WeightMatrix matrix;
};

inline TestWeights make_weights(DType dtype, std::size_t rows, std::size_t cols, std::uint32_t seed) {
  const auto src = random_floats(rows * cols, seed);
  TestWeights t;
  t.values.resize(rows * cols);
  switch (dtype) {
    case DType::f32:
      t.bytes.resize(rows * cols * 4);
      std::memcpy(t.bytes.data(), src.data(), t.bytes.size());
      t.values = src;
      break;
    case DType::f16:
    case DType::bf16: {
      t.bytes.resize(rows * cols * 2);
      for (std::size_t i = 0; i < src.size(); ++i) {
        const std::uint16_t h = dtype == DType::f16 ? f32_to_f16(src[i]) : f32_to_bf16(src[i]);
        std::memcpy(t.bytes.data() + 2 * i, &h, 2);
        t.values[i] = dtype == DType::f16 ? f16_to_f32(h) : bf16_to_f32(h);
      }
      break;
    }
    case DType::q8_0: {
      const std::size_t blocks = rows * cols / 32;
      t.bytes.resize(blocks * 34);
      for (std::size_t b = 0; b < blocks; ++b) {
        float amax = 0;
        for (std::size_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(src[b * 32 + i]));
        const float d = amax / 127.0f;
        const std::uint16_t dh = f32_to_f16(d);
        const float dq = f16_to_f32(dh);
        std::memcpy(t.bytes.data() + b * 34, &dh, 2);
        for (std::size_t i = 0; i < 32; ++i) {
          const auto q = static_cast<std::int8_t>(d == 0 ? 0 : std::lround(src[b * 32 + i] / d));
          std::memcpy(t.bytes.data() + b * 34 + 2 + i, &q, 1);
          t.values[b * 32 + i] = static_cast<float>(q) * dq;
        }
      }
      break;
    }
  }
  t.matrix = {dtype, rows, cols, t.bytes.data()};
  return t;
}

}  // namespace izwi::kernel_test
