// Runtime dispatch (izwi/kernels/cpu/dispatch.hpp): which variants exist,
// the one chosen at start-up against this CPU's features read independently
// (__builtin_cpu_supports), IZWI_CPU_ARCH, select_kernels, and the public
// entry points running the active variant.
//
// CTest runs this file's cases three ways (test/kernels/CMakeLists.txt): as
// is; with IZWI_CPU_ARCH=sse2 (the forced baseline); and under
// `qemu-x86_64 -cpu Westmere` (a CPU without AVX), where the dispatcher
// must pick sse2 by itself and no AVX instruction may be reached.
// IZWI_EXPECT_CPU_ARCH names the variant the run expects to be active.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "izwi/kernels/cpu/thread_pool.hpp"
#include "izwi/kernels/cpu/dispatch.hpp"
#include "izwi/kernels/cpu/elementwise.hpp"
#include "izwi/kernels/cpu/matmul.hpp"
#include "kernel_test_util.hpp"

using namespace izwi;
namespace kc = izwi::kernels::cpu;

namespace {

bool compiled(std::string_view name) {
  const auto names = kc::compiled_kernel_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

/// The variant the dispatcher should pick on this CPU with nothing forced,
/// from the compiler's own cpuid reading rather than the dispatcher's.
std::string expected_best() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512cd");
  if (avx512 && compiled("avx512")) return "avx512";
  if (avx2 && compiled("avx2")) return "avx2";
  return "sse2";
#else
  return "baseline";
#endif
}

}  // namespace

TEST_CASE("dispatch: scalar and the baseline are always built and usable", "[kernels][dispatch]") {
  const auto names = kc::compiled_kernel_names();
  REQUIRE(names.size() >= 2);
  CHECK(names[0] == "scalar");
  for (std::string_view name : names) INFO("compiled: " << name);
  REQUIRE(kc::kernels_for("scalar") != nullptr);
  REQUIRE(kc::kernels_for("scalar")->lanes == 1);
#if defined(__x86_64__)
  REQUIRE(kc::kernels_for("sse2") != nullptr);
  CHECK(kc::kernels_for("sse2")->lanes == 4);
  if (const auto* avx2 = kc::kernels_for("avx2")) CHECK(avx2->lanes == 8);
  if (const auto* avx512 = kc::kernels_for("avx512")) CHECK(avx512->lanes == 16);
#endif
  CHECK(kc::kernels_for("no-such-variant") == nullptr);
  CHECK(kc::kernels_for("") == nullptr);
}

TEST_CASE("dispatch: the variant chosen at start-up", "[kernels][dispatch]") {
  const std::string active = kc::active_kernels().name;
  INFO("active variant: " << active);
  if (const char* expected = std::getenv("IZWI_EXPECT_CPU_ARCH")) {
    REQUIRE(active == expected);
  } else if (const char* forced = std::getenv("IZWI_CPU_ARCH"); forced != nullptr && *forced != '\0') {
    if (kc::kernels_for(forced) != nullptr) REQUIRE(active == forced);
    else REQUIRE(active == expected_best());
  } else {
    REQUIRE(active == expected_best());
  }
  REQUIRE(kc::kernels_for(active) == &kc::active_kernels());
}

TEST_CASE("dispatch: select_kernels switches the public entry points and refuses the unknown", "[kernels][dispatch]") {
  const std::string before = kc::active_kernels().name;
  izwi::detail::ThreadPool pool(2);
  const auto w = kernel_test::make_weights(DType::f16, 37, 96, 3);
  const auto x = kernel_test::random_floats(3 * 96, 8);
  kernel_test::for_each_variant([&](const kc::KernelTable& table) {
    REQUIRE(kc::select_kernels(table.name));
    REQUIRE(&kc::active_kernels() == &table);
    std::vector<float> y(3 * 37);
    kc::matmul(x.data(), 3, 96, w.matrix, y.data(), pool);
    for (std::size_t r = 0; r < 3; ++r)
      for (std::size_t j = 0; j < 37; ++j) {
        double ref = 0;
        for (std::size_t l = 0; l < 96; ++l) ref += double(x[r * 96 + l]) * w.values[j * 96 + l];
        REQUIRE(std::fabs(y[r * 37 + j] - ref) < 1e-4);
      }
    std::vector<float> v{1.0f, 2.0f, 3.0f, 4.0f, 5.0f};
    kc::softmax(v.data(), v.size());
    float sum = 0;
    for (float p : v) sum += p;
    REQUIRE(std::fabs(sum - 1.0f) < 1e-6f);
  });
  CHECK_FALSE(kc::select_kernels("no-such-variant"));
  REQUIRE(kc::select_kernels(before));
  REQUIRE(kc::active_kernels().name == before);
}
