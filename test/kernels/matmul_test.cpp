// matmul (GEMV and GEMM paths) against a double-precision reference, every
// weight dtype, odd sizes, every kernel variant this CPU runs (scalar
// included), 1 and 3 threads.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string_view>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "izwi/core/aligned_allocator.hpp"
#include "izwi/kernels/cpu/matmul.hpp"
#include "kernel_test_util.hpp"

using namespace izwi;
using izwi::kernels::cpu::WeightMatrix;
using izwi::kernels::cpu::KernelTable;

namespace {

// Error bound: float accumulation of k products, relative to sum |x||w|
// (the condition of the dot product), plus a tiny absolute floor.
constexpr double relative_tolerance = 2e-6;

/// Whether matmul takes the integer path (activations quantized to Q8_0
/// blocks, detail/matmul_q8_kernels.hpp) for these weights and rows.
bool quantizes_activations(const KernelTable& kernels, DType dtype, std::size_t m) {
  return dtype == DType::q8_0 && m <= kernels.q8_0_quantized_max_rows;
}

/// Whether matmul rounds the activations to bf16 and multiplies bf16 pairs,
/// on AMX tiles or with vdpbf16ps (detail/matmul_amx_kernels.hpp,
/// detail/matmul_bf16_dot_kernels.hpp), for these weights and rows.
bool rounds_activations_to_bf16(const KernelTable& kernels, DType dtype, std::size_t m) {
  return dtype == DType::bf16 && kernels.bf16_rounded_min_rows != 0 && m >= kernels.bf16_rounded_min_rows;
}

/// The AMX and vdpbf16ps paths' documented bound against the exact product: each
/// activation moves by at most half a bf16 step, 2^-9 of its magnitude, so
/// 2^-8 * sum |x w| holds with room.
double bf16_rounding_bound(double magnitude) { return 0x1p-8 * magnitude; }

/// x rounded to bf16 as the AMX and vdpbf16ps paths round it (to nearest even).
double bf16_rounded(float x) { return double(bf16_to_f32(f32_to_bf16(x))); }

/// One activation block quantized as the integer path documents it.
float quantize_block(const float* x, std::int8_t* q) {
  float amax = 0;
  bool finite = true;
  for (std::size_t i = 0; i < 32; ++i) {
    finite = finite && std::isfinite(x[i]);
    amax = std::max(amax, std::fabs(x[i]));
  }
  const float inv = amax > 0 ? 127.0f / amax : 0.0f;
  if (!finite || std::isinf(inv) || amax == 0) {
    std::fill(q, q + 32, std::int8_t{0});
    return finite ? 0.0f : std::nanf("");
  }
  for (std::size_t i = 0; i < 32; ++i) q[i] = static_cast<std::int8_t>(std::nearbyint(x[i] * inv));
  // The scale to binary16's 11 significant bits, to nearest even, in
  // float's range: the significand in [0.5, 1) scaled to [1024, 2048).
  int exponent = 0;
  const float significand = std::frexp(amax / 127.0f, &exponent);
  return std::ldexp(std::nearbyint(std::ldexp(significand, 11)), exponent - 11);
}

/// The integer path written out plainly: per block an exact int32 sum of
/// int8 products, times the two scales' float product, added in a double in
/// block order. Every kernel variant must give exactly these floats.
std::vector<float> q8_integer_reference(const float* x, std::size_t ldx, std::size_t m,
                                        const kernel_test::TestWeights& w) {
  const std::size_t k = w.matrix.cols, n = w.matrix.rows, blocks = k / 32;
  std::vector<float> y(m * n);
  std::vector<std::int8_t> q(k);
  std::vector<float> d(blocks);
  for (std::size_t r = 0; r < m; ++r) {
    for (std::size_t b = 0; b < blocks; ++b) d[b] = quantize_block(x + r * ldx + b * 32, q.data() + b * 32);
    for (std::size_t j = 0; j < n; ++j) {
      double acc = 0;
      for (std::size_t b = 0; b < blocks; ++b) {
        const std::byte* block = w.bytes.data() + (j * blocks + b) * 34;
        std::uint16_t bits;
        std::memcpy(&bits, block, 2);
        std::int32_t s = 0;
        for (std::size_t i = 0; i < 32; ++i) s += std::int32_t(std::int8_t(block[2 + i])) * q[b * 32 + i];
        acc += double(s) * double(f16_to_f32(bits) * d[b]);
      }
      y[r * n + j] = static_cast<float>(acc);
    }
  }
  return y;
}

/// How far the integer path may be from the exact product of row x (k
/// values) with weight row w: each activation moves by at most half its
/// block's step max|x| / 127 (a hair more: the step is rounded to float),
/// plus 127 times the step's rounding to 11 significant bits (2^-11 of it),
/// plus the float bound above for the rest.
double q8_quantization_bound(const float* x, const float* w, std::size_t k) {
  double bound = 0;
  for (std::size_t b = 0; b < k / 32; ++b) {
    double amax = 0, wsum = 0;
    for (std::size_t i = b * 32; i < b * 32 + 32; ++i) {
      amax = std::max(amax, std::fabs(double(x[i])));
      wsum += std::fabs(double(w[i]));
    }
    bound += amax / 127.0 * (0.5001 + 127 * 0x1p-11) * wsum;
  }
  return bound;
}

/// `align_x`: x in a 64-byte aligned buffer (the batched GEMV reads it in
/// place only then; otherwise it copies it to aligned scratch first).
void check_matmul(const KernelTable& kernels, DType dtype, std::size_t m, std::size_t k, std::size_t n, izwi::detail::ThreadPool& pool,
                  std::size_t ldx_pad = 0, std::size_t ldy_pad = 0, bool align_x = false) {
  const auto w = kernel_test::make_weights(dtype, n, k, static_cast<std::uint32_t>(m * 1000 + k * 10 + n));
  const std::size_t ldx = k + ldx_pad, ldy = n + ldy_pad;
  const auto x_values = kernel_test::random_floats(m * ldx, static_cast<std::uint32_t>(7 + m + k));
  std::vector<float> x_storage(m * ldx + 16);
  float* x = x_storage.data();
  if (align_x) x += (64 - reinterpret_cast<std::uintptr_t>(x) % 64) % 64 / sizeof(float);
  std::copy(x_values.begin(), x_values.end(), x);
  std::vector<float> y(m * ldy, -12345.0f);
  kernels.matmul(x, ldx, m, w.matrix, y.data(), ldy, pool);
  const bool bf16_activations = rounds_activations_to_bf16(kernels, dtype, m);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      double ref = 0, mag = 0, ref_rounded = 0;
      for (std::size_t l = 0; l < k; ++l) {
        ref += double(x[i * ldx + l]) * double(w.values[j * k + l]);
        mag += std::fabs(double(x[i * ldx + l]) * double(w.values[j * k + l]));
        if (bf16_activations) ref_rounded += bf16_rounded(x[i * ldx + l]) * double(w.values[j * k + l]);
      }
      const double err = std::fabs(double(y[i * ldy + j]) - ref);
      const double quantization =
          quantizes_activations(kernels, dtype, m) ? q8_quantization_bound(x + i * ldx, w.values.data() + j * k, k)
          : bf16_activations                       ? bf16_rounding_bound(mag)
                                                   : 0.0;
      const double float_bound = relative_tolerance * (mag + 1.0) * std::sqrt(double(k));
      const double bound = float_bound + quantization;
      // Every element is checked; Catch's INFO and REQUIRE run only for one
      // that fails: formatting the message for each of ~10^6 elements was
      // most of this test's time, 87 s of the kernel suite's 112 under qemu.
      if (!(err <= bound)) {
        INFO("dtype " << to_string(dtype) << " m " << m << " k " << k << " n " << n << " at " << i << "," << j
                      << (align_x ? " (x aligned)" : ""));
        REQUIRE(err <= bound);
      }
      // The AMX path is the product of the bf16-rounded activations, to
      // float accumulation: that pins the rounding (to nearest even) too.
      if (bf16_activations && !(std::fabs(double(y[i * ldy + j]) - ref_rounded) <= float_bound)) {
        INFO("AMX path, m " << m << " k " << k << " n " << n << " at " << i << "," << j);
        REQUIRE(std::fabs(double(y[i * ldy + j]) - ref_rounded) <= float_bound);
      }
    }
    for (std::size_t j = n; j < ldy; ++j)
      if (y[i * ldy + j] != -12345.0f) REQUIRE(y[i * ldy + j] == -12345.0f);  // padding untouched
  }
  if (quantizes_activations(kernels, dtype, m)) {
    const auto expected = q8_integer_reference(x, ldx, m, w);
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j < n; ++j)
        if (y[i * ldy + j] != expected[i * n + j]) {
          INFO("Q8_0 integer path, m " << m << " k " << k << " n " << n << " at " << i << "," << j);
          REQUIRE(y[i * ldy + j] == expected[i * n + j]);
        }
  }
}

void check_all_sizes(const KernelTable& kernels, izwi::detail::ThreadPool& pool) {
  for (DType dtype : {DType::f32, DType::f16, DType::bf16, DType::q8_0}) {
    const std::vector<std::size_t> ks = dtype == DType::q8_0 ? std::vector<std::size_t>{32, 96, 160}
                                                             : std::vector<std::size_t>{1, 17, 67, 160};
    // Every row count of the GEMV paths (1: streaming GEMV; 2..16: register
    // blocks of rows x weight rows, with every remainder of rows and weight
    // rows; Q8_0 from 12 rows: widened tiles) and two of the GEMM.
    for (std::size_t m = 1; m <= 17; ++m)
      for (std::size_t k : ks)
        for (std::size_t n : {1, 3, 37, 133}) check_matmul(kernels, dtype, m, k, n, pool);
    check_matmul(kernels, dtype, 19, ks.back(), 37, pool);
    check_matmul(kernels, dtype, 3, ks.back(), 70, pool, 5, 3);   // GEMV with row strides
    check_matmul(kernels, dtype, 11, ks.back(), 70, pool, 5, 3);  // GEMV, row groups, with row strides
    check_matmul(kernels, dtype, 21, ks.back(), 70, pool, 5, 3);  // GEMM with row strides
    // Activations read in place (64-byte aligned, row stride a multiple of 16).
    for (std::size_t m : {2, 5, 13, 16}) check_matmul(kernels, dtype, m, 160, 37, pool, 16, 0, true);
    // Deeper than a widened Q8_0 tile (1024 values): tiles in two pieces.
    const std::size_t deep = dtype == DType::q8_0 ? 1088 : 1041;
    for (std::size_t m : {1, 2, 7, 12, 16}) check_matmul(kernels, dtype, m, deep, 13, pool);
    // The shapes below are sized for the AMX kernels' blocks; the emulated
    // CPUs (no AMX; the chosen variant only) reach no new path through them,
    // and under qemu they had doubled the Haswell run (23 -> 47 s).
    if (kernel_test::active_variant_only()) continue;
    // Batched decode over whole 32-row blocks and a ragged one, with a tail
    // of k (BF16 on AMX: weight tiles read in place, then copied).
    for (std::size_t m : {5, 16}) check_matmul(kernels, dtype, m, deep, 133, pool);
    // The GEMM (BF16 on AMX: one, two and three 16-row blocks, a pair and an
    // odd one; panels of 64 columns and a part of one; k a multiple of the
    // tile's 32 and not).
    for (std::size_t m : {17, 32, 33, 48, 50})
      for (std::size_t k : {ks.front(), std::size_t{64}, ks.back()}) check_matmul(kernels, dtype, m, k, 133, pool);
    check_matmul(kernels, dtype, 40, deep, 200, pool, 7, 9);
  }
}

}  // namespace

TEST_CASE("matmul: every kernel variant matches a double reference", "[kernels][matmul]") {
  izwi::detail::ThreadPool pool3(3), pool1(1);
  kernel_test::for_each_variant([&](const KernelTable& kernels) {
    check_all_sizes(kernels, pool3);
    // On an emulated CPU (the chosen variant only, kernel_test_util.hpp) the
    // same kernels on one thread add nothing about that CPU: the one-thread
    // split of every variant is checked natively.
    if (!kernel_test::active_variant_only()) check_all_sizes(kernels, pool1);
  });
}

TEST_CASE("matmul: public entry point and dequantize_row", "[kernels][matmul]") {
  izwi::detail::ThreadPool pool(2);
  for (DType dtype : {DType::f32, DType::f16, DType::bf16, DType::q8_0}) {
    const auto w = kernel_test::make_weights(dtype, 5, 64, 99);
    std::vector<float> row(64);
    kernels::cpu::dequantize_row(w.matrix, 3, row.data());
    for (std::size_t i = 0; i < 64; ++i) REQUIRE(row[i] == w.values[3 * 64 + i]);
    kernel_test::for_each_variant([&](const KernelTable& kernels) {
      std::vector<float> widened(64, -1.0f);
      kernels.dequantize_row(w.matrix, 4, widened.data());
      for (std::size_t i = 0; i < 64; ++i) REQUIRE(widened[i] == w.values[4 * 64 + i]);
    });
    const auto x = kernel_test::random_floats(2 * 64, 5);
    std::vector<float> y(2 * 5);
    kernels::cpu::matmul(x.data(), 2, 64, w.matrix, y.data(), pool);
    for (std::size_t j = 0; j < 5; ++j) {
      double ref = 0, mag = 0;
      for (std::size_t l = 0; l < 64; ++l) {
        ref += double(x[64 + l]) * w.values[j * 64 + l];
        mag += std::fabs(double(x[64 + l]) * w.values[j * 64 + l]);
      }
      const KernelTable& active = kernels::cpu::active_kernels();
      const double quantization =
          quantizes_activations(active, dtype, 2) ? q8_quantization_bound(x.data() + 64, w.values.data() + j * 64, 64)
          : rounds_activations_to_bf16(active, dtype, 2) ? bf16_rounding_bound(mag)
                                                         : 0.0;
      REQUIRE(std::fabs(y[5 + j] - ref) < 1e-4 + quantization);
    }
  }
}

TEST_CASE("matmul: the same bits whatever the activations' address and row stride (GEMVs align a copy)",
          "[kernels][matmul]") {
  // The GEMVs copy activations that are not 64-byte aligned, or whose rows
  // are not, before they multiply (align_activations): the copy must change
  // no bit, at every row count of the GEMV paths.
  izwi::detail::ThreadPool pool(2);
  constexpr std::size_t k = 96, n = 37;
  kernel_test::for_each_variant([&](const KernelTable& kernels) {
    for (DType dtype : {DType::f32, DType::f16, DType::bf16, DType::q8_0}) {
      const auto w = kernel_test::make_weights(dtype, n, k, 17);
      for (std::size_t m : {std::size_t{1}, std::size_t{2}, std::size_t{7}, std::size_t{16}}) {
        const auto values = kernel_test::random_floats(m * k, 23);
        // Aligned rows 16 floats apart, then the same rows 4 bytes past a
        // 64-byte boundary and 3 floats apart.
        std::vector<float, izwi::AlignedAllocator<float>> aligned(m * k);
        std::copy(values.begin(), values.end(), aligned.begin());
        constexpr std::size_t ldx = k + 3;
        std::vector<float, izwi::AlignedAllocator<float>> shifted(1 + m * ldx, 0.0f);
        for (std::size_t r = 0; r < m; ++r) std::copy_n(values.data() + r * k, k, shifted.data() + 1 + r * ldx);
        std::vector<float> from_aligned(m * n), from_shifted(m * n);
        kernels.matmul(aligned.data(), k, m, w.matrix, from_aligned.data(), n, pool);
        kernels.matmul(shifted.data() + 1, ldx, m, w.matrix, from_shifted.data(), n, pool);
        INFO(kernels.name << " " << izwi::to_string(dtype) << " m=" << m);
        REQUIRE(std::memcmp(from_aligned.data(), from_shifted.data(), m * n * sizeof(float)) == 0);
      }
    }
  });
}

TEST_CASE("matmul_group: several weights over the same activations, into column ranges of one buffer",
          "[kernels][matmul]") {
  izwi::detail::ThreadPool pool(3);
  kernel_test::for_each_variant([&](const KernelTable& kernels) {
    for (DType dtype : {DType::f32, DType::f16, DType::bf16, DType::q8_0}) {
      const std::size_t k = dtype == DType::q8_0 ? 96 : 67;
      // q/k/v-like: three weights of different heights written side by side
      // into one row of 37 + 16 + 70 columns, plus 3 of padding.
      // (Named, not in a vector: a copied TestWeights's matrix still points
      // at the original's bytes.)
      const auto w0 = kernel_test::make_weights(dtype, 37, k, 1), w1 = kernel_test::make_weights(dtype, 16, k, 2),
                 w2 = kernel_test::make_weights(dtype, 70, k, 3);
      const kernel_test::TestWeights* ws[] = {&w0, &w1, &w2};
      const std::size_t offsets[] = {0, 37, 53}, ldy = 126;
      // Every path: streaming GEMV, batched GEMV (Q8_0 tiles from 12 rows), GEMM.
      for (std::size_t m : {1, 2, 5, 12, 16, 19, 40}) {
        INFO("dtype " << to_string(dtype) << " m " << m);
        const auto x = kernel_test::random_floats(m * k, static_cast<std::uint32_t>(m + 100));
        std::vector<float> y(m * ldy, -12345.0f);
        std::vector<kernels::cpu::MatmulOutput> outs;
        for (std::size_t i = 0; i < 3; ++i) outs.push_back({&ws[i]->matrix, y.data() + offsets[i], ldy});
        kernels.matmul_group(x.data(), k, m, outs.data(), outs.size(), pool);
        for (std::size_t i = 0; i < 3; ++i)
          for (std::size_t r = 0; r < m; ++r)
            for (std::size_t j = 0; j < ws[i]->matrix.rows; ++j) {
              double ref = 0, mag = 0;
              for (std::size_t l = 0; l < k; ++l) {
                ref += double(x[r * k + l]) * double(ws[i]->values[j * k + l]);
                mag += std::fabs(double(x[r * k + l]) * double(ws[i]->values[j * k + l]));
              }
              const double quantization =
                  quantizes_activations(kernels, dtype, m)
                      ? q8_quantization_bound(x.data() + r * k, ws[i]->values.data() + j * k, k)
                  : rounds_activations_to_bf16(kernels, dtype, m) ? bf16_rounding_bound(mag)
                                                                  : 0.0;
              REQUIRE(std::fabs(double(y[r * ldy + offsets[i] + j]) - ref) <=
                      relative_tolerance * (mag + 1.0) * std::sqrt(double(k)) + quantization);
            }
        for (std::size_t r = 0; r < m; ++r)
          for (std::size_t j = 123; j < ldy; ++j) REQUIRE(y[r * ldy + j] == -12345.0f);  // padding untouched
        // Bit for bit what one matmul per weight gives (the Qwen3 forward
        // pass uses the group; its results must not depend on that).
        for (std::size_t i = 0; i < 3; ++i) {
          std::vector<float> single(m * ws[i]->matrix.rows);
          kernels.matmul(x.data(), k, m, ws[i]->matrix, single.data(), ws[i]->matrix.rows, pool);
          for (std::size_t r = 0; r < m; ++r)
            for (std::size_t j = 0; j < ws[i]->matrix.rows; ++j)
              REQUIRE(single[r * ws[i]->matrix.rows + j] == y[r * ldy + offsets[i] + j]);
        }
      }
    }
  });
}

TEST_CASE("matmul_batch_invariant: a row's result is bit-identical in any batch, and matches the reference",
          "[kernels][matmul]") {
  izwi::detail::ThreadPool pool(3);
  kernel_test::for_each_variant([&](const KernelTable& kernels) {
    for (DType dtype : {DType::f32, DType::f16, DType::bf16, DType::q8_0}) {
      const std::size_t k = dtype == DType::q8_0 ? 160 : 67, n = 37;
      const auto w = kernel_test::make_weights(dtype, n, k, 11);
      const auto x = kernel_test::random_floats(41 * k, 12);  // row 0, then up to 40 more
      // Row 0 of x alone, then the same values as row r of batches of every path's size.
      std::vector<float> alone(n);
      kernels.matmul_batch_invariant(x.data(), k, 1, w.matrix, alone.data(), n, pool);
      for (std::size_t m : {2, 3, 5, 16, 17, 40}) {
        std::vector<float> batch(x.begin() + static_cast<std::ptrdiff_t>(k), x.begin() + static_cast<std::ptrdiff_t>((m + 1) * k));
        const std::size_t r = m / 2;
        std::copy(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(k), batch.begin() + static_cast<std::ptrdiff_t>(r * k));
        std::vector<float> y(m * n);
        kernels.matmul_batch_invariant(batch.data(), k, m, w.matrix, y.data(), n, pool);
        INFO(kernels.name << " dtype " << to_string(dtype) << " m " << m);
        CHECK(std::equal(alone.begin(), alone.end(), y.begin() + static_cast<std::ptrdiff_t>(r * n)));
        for (std::size_t j = 0; j < n; ++j) {
          double ref = 0, mag = 0;
          for (std::size_t l = 0; l < k; ++l) {
            ref += double(x[l]) * double(w.values[j * k + l]);
            mag += std::fabs(double(x[l]) * double(w.values[j * k + l]));
          }
          REQUIRE(std::fabs(double(alone[j]) - ref) <= relative_tolerance * (mag + 1.0) * std::sqrt(double(k)));
        }
      }
    }
  });
  // The public entry point is the active variant's.
  const auto w = kernel_test::make_weights(DType::f32, 5, 64, 3);
  const auto x = kernel_test::random_floats(3 * 64, 4);
  std::vector<float> a(3 * 5), b(3 * 5);
  kernels::cpu::matmul_batch_invariant(x.data(), 3, 64, w.matrix, a.data(), pool);
  kernels::cpu::active_kernels().matmul_batch_invariant(x.data(), 64, 3, w.matrix, b.data(), 5, pool);
  CHECK(a == b);
}

TEST_CASE("matmul_group_batch_invariant: a row's outputs are bit-identical in any batch, and match the reference",
          "[kernels][matmul]") {
  izwi::detail::ThreadPool pool(3);
  kernel_test::for_each_variant([&](const KernelTable& kernels) {
    for (DType dtype : {DType::f32, DType::f16, DType::bf16, DType::q8_0})
      // k: a tail past the last whole vector (dense), and for Q8_0 more than one
      // 1024-value depth block of the widened-tile path the batched GEMV takes from 12 rows.
      for (std::size_t k : dtype == DType::q8_0 ? std::vector<std::size_t>{160, 1088} : std::vector<std::size_t>{67, 256}) {
        const std::size_t n0 = 37, n1 = 20, ldx = k + 5;
        const auto w0 = kernel_test::make_weights(dtype, n0, k, 21), w1 = kernel_test::make_weights(dtype, n1, k, 22);
        const auto x = kernel_test::random_floats(41 * ldx, 23);  // row 0, then up to 40 more
        auto run = [&](const float* rows, std::size_t m, std::vector<float>& y0, std::vector<float>& y1) {
          y0.assign(m * n0, -1.0f), y1.assign(m * (n1 + 3), -1.0f);
          const kernels::cpu::MatmulOutput outs[] = {{&w0.matrix, y0.data(), n0}, {&w1.matrix, y1.data(), n1 + 3}};
          kernels.matmul_group_batch_invariant(rows, ldx, m, outs, 2, pool);
        };
        std::vector<float> alone0, alone1;
        run(x.data(), 1, alone0, alone1);
        // 29 and 40: Q8_0 on AMX in groups of 16 rows, a rest of 13 on tiles, of 8 on the VNNI tile.
        for (std::size_t m : {2, 3, 4, 5, 11, 12, 16, 17, 29, 40}) {
          INFO(kernels.name << " dtype " << to_string(dtype) << " k " << k << " m " << m);
          // Row 0 of x as row m / 2 of a batch of other rows.
          std::vector<float> batch(x.begin() + static_cast<std::ptrdiff_t>(ldx), x.begin() + static_cast<std::ptrdiff_t>((m + 1) * ldx));
          const std::size_t r = m / 2;
          std::copy(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(ldx), batch.begin() + static_cast<std::ptrdiff_t>(r * ldx));
          std::vector<float> y0, y1;
          run(batch.data(), m, y0, y1);
          CHECK(std::equal(alone0.begin(), alone0.end(), y0.begin() + static_cast<std::ptrdiff_t>(r * n0)));
          CHECK(std::equal(alone1.begin(), alone1.begin() + n1, y1.begin() + static_cast<std::ptrdiff_t>(r * (n1 + 3))));
          CHECK(y1[r * (n1 + 3) + n1] == -1.0f);  // the padding of ldy is left alone
        }
        // Q8_0 where the variant quantizes here too: the integer path's exact
        // floats (so every m gives matmul()'s bits of the quantized path).
        const bool quantized = dtype == DType::q8_0 && kernels.q8_0_batch_invariant_quantized;
        const auto integer = quantized ? q8_integer_reference(x.data(), ldx, 1, w0) : std::vector<float>{};
        for (std::size_t j = 0; j < n0; ++j) {
          double ref = 0, mag = 0;
          for (std::size_t l = 0; l < k; ++l) {
            ref += double(x[l]) * double(w0.values[j * k + l]);
            mag += std::fabs(double(x[l]) * double(w0.values[j * k + l]));
          }
          const double quantization = quantized ? q8_quantization_bound(x.data(), w0.values.data() + j * k, k) : 0.0;
          REQUIRE(std::fabs(double(alone0[j]) - ref) <=
                  relative_tolerance * (mag + 1.0) * std::sqrt(double(k)) + quantization);
          if (quantized) REQUIRE(alone0[j] == integer[j]);
        }
      }
  });
  // The public entry point is the active variant's.
  const auto w = kernel_test::make_weights(DType::f16, 5, 64, 3);
  const auto x = kernel_test::random_floats(3 * 64, 4);
  std::vector<float> a(3 * 5), b(3 * 5);
  const kernels::cpu::MatmulOutput out_a{&w.matrix, a.data(), 5}, out_b{&w.matrix, b.data(), 5};
  kernels::cpu::matmul_group_batch_invariant(x.data(), 64, 3, std::span(&out_a, 1), pool);
  kernels::cpu::active_kernels().matmul_group_batch_invariant(x.data(), 64, 3, &out_b, 1, pool);
  CHECK(a == b);
}

TEST_CASE("matmul Q8_0 integer path: an activation block's scale is llama.cpp's binary16 one where binary16 holds it",
          "[kernels][matmul]") {
  // q8_integer_reference (which every variant equals bit for bit) rounds the
  // scale to 11 significant bits in float's range; within binary16's normal
  // range that is the binary16 value llama.cpp stores (block_q8_0.d).
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> log2_max(-6.9f, 23.0f);  // scales 2^-14 .. 65504
  std::int8_t q[32];
  for (int trial = 0; trial < 20000; ++trial) {
    float x[32] = {};
    x[trial % 32] = std::exp2(log2_max(rng)) * (trial % 2 ? -1.0f : 1.0f);
    const float amax = std::fabs(x[trial % 32]);
    const float scale = amax / 127.0f;
    if (!(scale >= 0x1p-14f && scale <= 65504.0f)) continue;  // outside binary16's normal range
    const float binary16 = f16_to_f32(f32_to_f16(scale));
    INFO("max|x| = " << amax);
    REQUIRE(quantize_block(x, q) == binary16);
  }
}

TEST_CASE("matmul Q8_0 integer path: extreme blocks, zero and non-finite activations, any batch",
          "[kernels][matmul][dispatch]") {
  // Weights at the int8 extremes (-128 is legal in a file though quantizers
  // write -127..127): a pair of products 2 * 128 * 127 is the most the
  // 16-bit step of the AVX2 dot product holds. Activations at their block's
  // maximum quantize to +-127. 41 weight rows: whole 16-row tiles (the
  // transposed AVX-512 VNNI tile from 2 activation rows), then 8 and 1.
  const std::size_t n = 41, k = 160, blocks = k / 32;
  kernel_test::TestWeights w = kernel_test::make_weights(DType::q8_0, n, k, 21);
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t b = 0; b < blocks; ++b)
      for (std::size_t i = 0; i < 32; ++i) {
        const std::int8_t q = (j + b) % 3 == 0 ? std::int8_t(-128) : (j + b) % 3 == 1 ? std::int8_t(127) : std::int8_t(i % 2 ? -128 : 127);
        std::memcpy(w.bytes.data() + (j * blocks + b) * 34 + 2 + i, &q, 1);
        std::uint16_t bits;
        std::memcpy(&bits, w.bytes.data() + (j * blocks + b) * 34, 2);
        w.values[j * k + b * 32 + i] = float(q) * f16_to_f32(bits);
      }
  const std::size_t m = 16;
  auto x = kernel_test::random_floats(m * k, 22, 3.0f);
  for (std::size_t i = 0; i < k; ++i) x[i] = i % 2 ? 2.5f : -2.5f;  // row 0: every value at its block's max
  std::fill(x.begin() + k, x.begin() + 2 * k, 0.0f);                // row 1: all zero
  x[2 * k + 40] = std::numeric_limits<float>::infinity();            // row 2: block 1 not finite
  x[3 * k + 100] = std::nanf("");                                    // row 3: block 3 not finite
  x[4 * k + 7] = 1e-38f;                                             // row 4: a block too small to scale
  std::fill(x.begin() + 4 * k, x.begin() + 4 * k + 7, 0.0f);
  std::fill(x.begin() + 4 * k + 8, x.begin() + 4 * k + 32, 0.0f);
  // Row 5: blocks whose scale binary16 could not hold (llama.cpp's would be
  // infinite above 65504 and subnormal below 6.1e-5); izwi keeps float's range.
  for (std::size_t i = 0; i < 32; ++i) {
    x[5 * k + i] *= 4e6f;        // max|x| near 1.2e7: scale near 9.4e4
    x[5 * k + 32 + i] *= 1e-5f;  // max|x| near 3e-5: scale near 2.4e-7
  }
  const auto expected = q8_integer_reference(x.data(), k, m, w);
  izwi::detail::ThreadPool pool(3);
  auto check_rows = [&](const std::vector<float>& y, std::size_t rows, std::size_t first_row) {
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t j = 0; j < n; ++j) {
        INFO("row " << first_row + r << " column " << j);
        const float want = expected[(first_row + r) * n + j];
        if (first_row + r == 2 || first_row + r == 3) REQUIRE(std::isnan(y[r * n + j]));
        else REQUIRE(y[r * n + j] == want);
      }
  };
  kernel_test::for_each_variant([&](const KernelTable& kernels) {
    // A row gives the same floats whatever the rows beside it (every m the
    // variant sends to the integer path quantizes and sums each row alone).
    REQUIRE(kernels.q8_0_quantized_max_rows >= 1);
    REQUIRE(kernels.q8_0_quantized_max_rows <= kernels::cpu::gemv_max_rows);
    for (std::size_t rows = 1; rows <= kernels.q8_0_quantized_max_rows; ++rows)
      for (std::size_t first = 0; first + rows <= m; first += rows) {
        std::vector<float> y(rows * n, -1.0f);
        kernels.matmul(x.data() + first * k, k, rows, w.matrix, y.data(), n, pool);
        check_rows(y, rows, first);
      }
    // The batch-invariant entry point, where it quantizes: the same floats
    // for every row count, past gemv_max_rows too (37 rows: row r is row
    // r % 16 of x), and with the rows in any grouping.
    if (!kernels.q8_0_batch_invariant_quantized) return;
    const std::size_t many = 37;
    std::vector<float> repeated(many * k);
    for (std::size_t r = 0; r < many; ++r)
      std::copy(x.begin() + static_cast<std::ptrdiff_t>((r % m) * k),
                x.begin() + static_cast<std::ptrdiff_t>((r % m + 1) * k), repeated.begin() + static_cast<std::ptrdiff_t>(r * k));
    for (std::size_t rows : {std::size_t{1}, std::size_t{3}, std::size_t{16}, many})
      for (std::size_t first = 0; first + rows <= many; first += rows) {
        std::vector<float> y(rows * n, -1.0f);
        const kernels::cpu::MatmulOutput out{&w.matrix, y.data(), n};
        kernels.matmul_group_batch_invariant(repeated.data() + first * k, k, rows, &out, 1, pool);
        for (std::size_t r = 0; r < rows; ++r) {
          std::vector<float> row(y.begin() + static_cast<std::ptrdiff_t>(r * n), y.begin() + static_cast<std::ptrdiff_t>((r + 1) * n));
          check_rows(row, 1, (first + r) % m);
        }
      }
  });
  // Row 1 is zero: the quantization cost nothing there. Row 5 is finite and
  // within the quantization bound of the exact product.
  for (std::size_t j = 0; j < n; ++j) {
    CHECK(expected[n + j] == 0.0f);
    double exact = 0;
    for (std::size_t i = 0; i < k; ++i) exact += double(x[5 * k + i]) * double(w.values[j * k + i]);
    INFO("row 5 column " << j << ": " << expected[5 * n + j] << " against " << exact);
    CHECK(std::isfinite(expected[5 * n + j]));
    CHECK(std::abs(expected[5 * n + j] - exact) <=
          q8_quantization_bound(x.data() + 5 * k, w.values.data() + j * k, k) + 1e-6 * std::abs(exact));
  }
  // The public entry point: the active variant (the forced SSE2 one under
  // kernels.dispatch_forced_sse2).
  const std::size_t active_rows = kernels::cpu::active_kernels().q8_0_quantized_max_rows;
  std::vector<float> y(active_rows * n);
  kernels::cpu::matmul(x.data(), active_rows, k, w.matrix, y.data(), pool);
  check_rows(y, active_rows, 0);
}

namespace {

/// AMX-TILE and AMX-BF16 by cpuid (leaf 7, EDX bits 24 and 22), read here
/// independently of the dispatcher (libgcc 12's __builtin_cpu_supports does
/// not know them).
bool cpu_has_amx_bf16() {
#if defined(__x86_64__) && defined(__linux__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  return (edx & (1u << 24)) && (edx & (1u << 22));
#else
  return false;
#endif
}

/// AVX512_BF16 (leaf 7.1, EAX bit 5) with AVX512_VNNI (leaf 7.0, ECX bit 11)
/// on a CPU without AMX-TILE (leaf 7.0, EDX bit 24): where the dispatcher's
/// "avx512" table multiplies BF16 with vdpbf16ps.
bool cpu_has_avx512_bf16_without_amx() {
#if defined(__x86_64__) && defined(__linux__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  const bool vnni = ecx & (1u << 11), amx_tile = edx & (1u << 24);
  if (eax < 1 || !__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) return false;  // leaf 7.0 EAX: its highest subleaf
  return vnni && !amx_tile && (eax & (1u << 5));
#else
  return false;
#endif
}

bool names_extension(const KernelTable& kernels, std::string_view extension) {
  return std::string_view(kernels.extensions).find(extension) != std::string_view::npos;
}

}  // namespace

TEST_CASE("matmul BF16 on AMX: the tables that take it, a row the same bits in any batch of 4 or more, NaN activations",
          "[kernels][matmul]") {
  // Only "avx512" may round BF16 activations; "avx512bw" keeps the widening
  // path on the same CPU, so the every-variant tests above cover both.
  kernel_test::for_each_variant([&](const KernelTable& kernels) {
    if (std::string_view(kernels.name) != "avx512") REQUIRE(kernels.bf16_rounded_min_rows == 0);
    else REQUIRE((kernels.bf16_rounded_min_rows == 0 || kernels.bf16_rounded_min_rows >= kernels::cpu::batched_min_rows));
    // The logs and /metrics name AMX or AVX512_BF16 exactly where the table uses one.
    CHECK((names_extension(kernels, "amx-bf16") || names_extension(kernels, "avx512-bf16")) ==
          (kernels.bf16_rounded_min_rows != 0));
  });
  const KernelTable* avx512 = kernels::cpu::kernels_for("avx512");
  if (avx512 == nullptr || !cpu_has_amx_bf16()) {
    // Worded as for_each_variant's variant skips: "SKIPPED:" would mark the
    // whole executable skipped in the emulated-CPU runs (run_on_cpu_model.cmake).
    WARN("kernel variant avx512's AMX path skipped: this CPU lacks AVX-512 or AMX-BF16");
    return;
  }
  // Linux 5.16+ grants the tile state on request; the dispatcher asks.
  REQUIRE(names_extension(*avx512, "amx-bf16"));
  REQUIRE(avx512->bf16_rounded_min_rows != 0);
  const std::size_t m = 40, k = 300, n = 70;
  const auto w = kernel_test::make_weights(DType::bf16, n, k, 11);
  auto x = kernel_test::random_floats(m * k, 12);
  x[5 * k + 17] = std::numeric_limits<float>::quiet_NaN();
  izwi::detail::ThreadPool pool(3);
  // 40 rows (the GEMM's packed panels) against 8 + 16 + 16 (the batched
  // decode's in-place weight tiles, rows in the other operand).
  std::vector<float> all(m * n), split(m * n);
  avx512->matmul(x.data(), k, m, w.matrix, all.data(), n, pool);
  avx512->matmul(x.data(), k, 8, w.matrix, split.data(), n, pool);
  avx512->matmul(x.data() + 8 * k, k, 16, w.matrix, split.data() + 8 * n, n, pool);
  avx512->matmul(x.data() + 24 * k, k, 16, w.matrix, split.data() + 24 * n, n, pool);
  for (std::size_t r = 0; r < m; ++r)
    for (std::size_t j = 0; j < n; ++j) {
      const float alone = split[r * n + j];
      INFO("row " << r << " column " << j);
      if (r == 5) {
        REQUIRE(std::isnan(all[r * n + j]));
        REQUIRE(std::isnan(alone));
      } else {
        REQUIRE(std::isfinite(all[r * n + j]));
        REQUIRE(all[r * n + j] == alone);  // bit for bit, whatever the other rows
      }
    }
}

TEST_CASE("matmul BF16 with vdpbf16ps: chosen on AVX512_BF16 without AMX, a row the same bits in any batch of its path, "
          "NaN activations",
          "[kernels][matmul]") {
  const KernelTable* avx512 = kernels::cpu::kernels_for("avx512");
  if (avx512 == nullptr || !cpu_has_avx512_bf16_without_amx()) {
    WARN("kernel variant avx512's vdpbf16ps path skipped: this CPU lacks AVX-512, AVX512_BF16 or VNNI, or has AMX");
    return;
  }
  REQUIRE(names_extension(*avx512, "avx512-bf16"));
  REQUIRE(avx512->bf16_rounded_min_rows == 8);
  // k odd and not a multiple of 32: the last pair holds one value, the
  // batched decode masks its last weight load. Rows 5 and 21 hold a NaN.
  const std::size_t m = 40, k = 301, n = 70;
  const auto w = kernel_test::make_weights(DType::bf16, n, k, 13);
  auto x = kernel_test::random_floats(m * k, 14);
  x[5 * k + 17] = std::numeric_limits<float>::quiet_NaN();
  x[21 * k + 300] = std::numeric_limits<float>::quiet_NaN();
  izwi::detail::ThreadPool pool(3);
  // Prefill (more than 16 rows, packed panels): 40 rows against 17 + 23.
  // Batched decode (8 to 16 rows, weights in place): 16 rows against 8 + 8.
  std::vector<float> gemm_all(m * n), gemm_split(m * n), decode_all(16 * n), decode_split(16 * n);
  avx512->matmul(x.data(), k, m, w.matrix, gemm_all.data(), n, pool);
  avx512->matmul(x.data(), k, 17, w.matrix, gemm_split.data(), n, pool);
  avx512->matmul(x.data() + 17 * k, k, 23, w.matrix, gemm_split.data() + 17 * n, n, pool);
  avx512->matmul(x.data(), k, 16, w.matrix, decode_all.data(), n, pool);
  avx512->matmul(x.data(), k, 8, w.matrix, decode_split.data(), n, pool);
  avx512->matmul(x.data() + 8 * k, k, 8, w.matrix, decode_split.data() + 8 * n, n, pool);
  for (std::size_t r = 0; r < m; ++r)
    for (std::size_t j = 0; j < n; ++j) {
      INFO("row " << r << " column " << j);
      const bool nan_row = r == 5 || r == 21;
      std::vector<float> results = {gemm_all[r * n + j], gemm_split[r * n + j]};
      if (r < 16) results.insert(results.end(), {decode_all[r * n + j], decode_split[r * n + j]});
      for (const float v : results) REQUIRE(std::isnan(v) == nan_row);
      if (nan_row) continue;
      REQUIRE(gemm_all[r * n + j] == gemm_split[r * n + j]);  // bit for bit, whatever the other rows
      if (r < 16) REQUIRE(decode_all[r * n + j] == decode_split[r * n + j]);
      // Every result near the exact product of the rounded activations (f32
      // accumulation only), and within the documented bound of the f32 one.
      double exact_rounded = 0, exact = 0, magnitude = 0;
      for (std::size_t i = 0; i < k; ++i) {
        const double wv = w.values[j * k + i];
        exact_rounded += bf16_rounded(x[r * k + i]) * wv;
        exact += double(x[r * k + i]) * wv;
        magnitude += std::fabs(double(x[r * k + i]) * wv);
      }
      for (const float v : results) {
        REQUIRE(std::fabs(double(v) - exact_rounded) <= 4e-5 * magnitude);  // above k * 2^-24
        REQUIRE(std::fabs(double(v) - exact) <= bf16_rounding_bound(magnitude));
      }
    }
}
