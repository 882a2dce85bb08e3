// Row-wise kernels and rotary embedding against double references, odd
// sizes, every kernel variant this CPU runs; half conversions.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "izwi/core/half.hpp"
#include "izwi/kernels/cpu/detail/simd.hpp"
#include "izwi/kernels/cpu/elementwise.hpp"
#include "izwi/kernels/cpu/rotary.hpp"
#include "kernel_test_util.hpp"

using namespace izwi;
namespace kc = izwi::kernels::cpu;
namespace kd = izwi::kernels::cpu::detail;

TEST_CASE("half: array conversions equal the scalar ones, RNE and specials", "[kernels][half]") {
  std::vector<std::uint16_t> all(65536);
  for (std::uint32_t i = 0; i < 65536; ++i) all[i] = static_cast<std::uint16_t>(i);
  std::vector<float> wide(65536);
  f16_to_f32(all.data(), wide.data(), all.size());
  std::vector<std::uint16_t> back(65536);
  f32_to_f16(wide.data(), back.data(), wide.size());
  for (std::uint32_t i = 0; i < 65536; ++i) {
    const float s = f16_to_f32(static_cast<std::uint16_t>(i));
    if (std::isnan(s)) {
      REQUIRE(std::isnan(wide[i]));
      REQUIRE((back[i] & 0x7e00u) == 0x7e00u);  // quiet NaN
    } else {
      REQUIRE(std::memcmp(&s, &wide[i], 4) == 0);
      REQUIRE(back[i] == i);  // every half round-trips
    }
  }
  // Round to nearest even, overflow, subnormals.
  REQUIRE(f32_to_f16(1.0f + 0x1p-11f) == 0x3c00u);           // tie -> even (down)
  REQUIRE(f32_to_f16(1.0f + 3 * 0x1p-11f) == 0x3c02u);       // tie -> even (up)
  REQUIRE(f32_to_f16(65519.0f) == 0x7bffu);
  REQUIRE(f32_to_f16(65520.0f) == 0x7c00u);
  REQUIRE(f32_to_f16(0x1p-25f) == 0x0000u);                  // tie -> even zero
  REQUIRE(f32_to_f16(0x1.8p-24f) == 0x0002u);                // tie -> even subnormal
  REQUIRE(f16_to_f32(0x0001u) == 0x1p-24f);
  REQUIRE(f32_to_bf16(1.0f + 0x1p-8f) == 0x3f80u);           // tie -> even
  REQUIRE(f32_to_bf16(1.0f + 3 * 0x1p-8f) == 0x3f82u);
  REQUIRE(bf16_to_f32(0x3f80u) == 1.0f);
  REQUIRE(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  const auto xs = kernel_test::random_floats(1001, 3, 100.0f);
  std::vector<std::uint16_t> b16(xs.size());
  f32_to_bf16(xs.data(), b16.data(), xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i) REQUIRE(b16[i] == f32_to_bf16(xs[i]));
}

void check_row_ops(const kc::KernelTable& kernels) {
  for (std::size_t n : {1, 7, 33, 130}) {
    const auto x = kernel_test::random_floats(3 * (n + 2), static_cast<std::uint32_t>(n), 3.0f);
    const auto w = kernel_test::random_floats(n, 11);
    // rms_norm over 3 rows with strides n+2 -> n+1.
    std::vector<float> y(3 * (n + 1), 7.0f);
    kernels.rms_norm(x.data(), n + 2, 3, n, w.data(), 1e-6f, y.data(), n + 1);
    for (std::size_t r = 0; r < 3; ++r) {
      double ms = 0;
      for (std::size_t i = 0; i < n; ++i) ms += double(x[r * (n + 2) + i]) * x[r * (n + 2) + i];
      const double inv = 1.0 / std::sqrt(ms / double(n) + 1e-6);
      for (std::size_t i = 0; i < n; ++i)
        REQUIRE(std::fabs(y[r * (n + 1) + i] - x[r * (n + 2) + i] * inv * w[i]) <= 1e-5 * (1 + std::fabs(x[r * (n + 2) + i] * inv * w[i])));
      REQUIRE(y[r * (n + 1) + n] == 7.0f);
    }
    // silu_mul, in place on gate.
    std::vector<float> g(x.begin(), x.begin() + n), u(x.begin() + n, x.begin() + 2 * n);
    kernels.silu_mul(g.data(), u.data(), g.data(), n);
    for (std::size_t i = 0; i < n; ++i) {
      const double ref = double(x[i]) / (1.0 + std::exp(-double(x[i]))) * x[n + i];
      REQUIRE(std::fabs(g[i] - ref) <= 1e-5 * (1 + std::fabs(ref)));
    }
    // softmax with a large offset (must not overflow).
    std::vector<float> s(x.begin(), x.begin() + n);
    for (auto& v : s) v += 1000.0f;
    const std::vector<float> logits = s;
    kernels.softmax(s.data(), n);
    double denom = 0;
    for (std::size_t i = 0; i < n; ++i) denom += std::exp(double(logits[i]) - 1003.0);
    for (std::size_t i = 0; i < n; ++i)
      REQUIRE(std::fabs(s[i] - std::exp(double(logits[i]) - 1003.0) / denom) <= 1e-6);
    // add_inplace.
    std::vector<float> a(x.begin(), x.begin() + n);
    kernels.add_inplace(a.data(), w.data(), n);
    for (std::size_t i = 0; i < n; ++i) REQUIRE(a[i] == x[i] + w[i]);
  }
  // Per-head norm: 2 rows of 3 heads of 20, row stride 70 (10 floats of padding untouched).
  auto x = kernel_test::random_floats(140, 5, 2.0f);
  const auto orig = x;
  const auto w = kernel_test::random_floats(20, 6);
  kernels.rms_norm_heads(x.data(), 70, 2, 3, 20, w.data(), 1e-6f);
  for (std::size_t r = 0; r < 2; ++r) {
    for (std::size_t h = 0; h < 3; ++h) {
      const float* o = orig.data() + r * 70 + h * 20;
      double ms = 0;
      for (std::size_t i = 0; i < 20; ++i) ms += double(o[i]) * o[i];
      const double inv = 1.0 / std::sqrt(ms / 20 + 1e-6);
      for (std::size_t i = 0; i < 20; ++i) REQUIRE(std::fabs(x[r * 70 + h * 20 + i] - o[i] * inv * w[i]) <= 1e-5);
    }
    for (std::size_t i = 60; i < 70; ++i) REQUIRE(x[r * 70 + i] == orig[r * 70 + i]);
  }
}

TEST_CASE("row ops: rms_norm, rms_norm_heads, silu_mul, softmax, add", "[kernels][ops]") {
  kernel_test::for_each_variant(check_row_ops);
  // Public entry points.
  std::vector<float> v{1.0f, 2.0f, 3.0f};
  kc::softmax(v.data(), v.size());
  REQUIRE(std::fabs(v[0] + v[1] + v[2] - 1.0f) < 1e-6f);
}

// Whisper's row ops: each variant against the formula in double and against
// the scalar variant (the portable reference), rows of odd lengths so the
// vector loops and their scalar tails both run.
void check_whisper_row_ops(const kc::KernelTable& kernels) {
  const kc::KernelTable* scalar = kc::kernels_for("scalar");
  REQUIRE(scalar != nullptr);
  for (const std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{384}, std::size_t{771}}) {
    CAPTURE(n);
    const std::size_t rows = 3, ld = n + 5;
    auto x = kernel_test::random_floats(rows * ld, 31, 3.0f);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += 0.7f;  // a mean away from 0
    const auto w = kernel_test::random_floats(n, 32), b = kernel_test::random_floats(n, 33);
    std::vector<float> y(rows * ld, -7.0f), y_scalar(rows * ld, -7.0f);
    kernels.layer_norm(x.data(), ld, rows, n, w.data(), b.data(), 1e-5f, y.data(), ld);
    scalar->layer_norm(x.data(), ld, rows, n, w.data(), b.data(), 1e-5f, y_scalar.data(), ld);
    for (std::size_t r = 0; r < rows; ++r) {
      const float* in = x.data() + r * ld;
      double mean = 0, var = 0;
      for (std::size_t i = 0; i < n; ++i) mean += in[i];
      mean /= double(n);
      for (std::size_t i = 0; i < n; ++i) var += (in[i] - mean) * (in[i] - mean);
      const double inv = 1.0 / std::sqrt(var / double(n) + 1e-5);
      for (std::size_t i = 0; i < n; ++i) {
        const double expected = (in[i] - mean) * inv * w[i] + b[i];
        REQUIRE(std::fabs(y[r * ld + i] - expected) <= 2e-5 * (1 + std::fabs(expected)));
        REQUIRE(std::fabs(y[r * ld + i] - y_scalar[r * ld + i]) <= 2e-5 * (1 + std::fabs(expected)));
      }
      for (std::size_t i = n; i < ld; ++i) REQUIRE(y[r * ld + i] == -7.0f);  // the stride's gap untouched
    }
    // In place, as the Whisper layers call it.
    auto inplace = x;
    kernels.layer_norm(inplace.data(), ld, rows, n, w.data(), b.data(), 1e-5f, inplace.data(), ld);
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t i = 0; i < n; ++i) REQUIRE(inplace[r * ld + i] == y[r * ld + i]);

    auto g = kernel_test::random_floats(n * 3, 34, 6.0f), g_scalar = g;
    const auto before = g;
    kernels.gelu(g.data(), g.size());
    scalar->gelu(g_scalar.data(), g_scalar.size());
    for (std::size_t i = 0; i < g.size(); ++i) {
      const double v = before[i], expected = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
      REQUIRE(std::fabs(g[i] - expected) <= 1e-6 * (1 + std::fabs(expected)));
      REQUIRE(std::fabs(g[i] - g_scalar[i]) <= 1e-6 * (1 + std::fabs(expected)));
    }
  }
}

TEST_CASE("Whisper row ops: layer_norm and exact GELU of every variant equal the formula and the scalar variant",
          "[kernels][ops]") {
  kernel_test::for_each_variant(check_whisper_row_ops);
  std::vector<float> v{-1.0f, 0.0f, 2.0f};
  kc::gelu(v.data(), v.size());  // the public entry point
  REQUIRE(std::fabs(v[2] - 2.0f * 0.97724987f) < 1e-6f);
  REQUIRE(v[1] == 0.0f);
}

void check_rotary(const kc::KernelTable& kernels) {
  const std::size_t heads = 3, head_dim = 38, rotary_dim = 34, ld = heads * head_dim + 5;
  const double theta = 1e6;
  const kc::RotaryTable table(rotary_dim, theta, 3000);
  const std::vector<std::int64_t> positions{0, 1, 17, 2999};
  auto x = kernel_test::random_floats(positions.size() * ld, 21);
  const auto orig = x;
  kernels.apply_rotary(x.data(), ld, heads, head_dim, positions, table);
  const std::size_t half = rotary_dim / 2;
  for (std::size_t r = 0; r < positions.size(); ++r)
    for (std::size_t h = 0; h < heads; ++h) {
      const float* o = orig.data() + r * ld + h * head_dim;
      const float* y = x.data() + r * ld + h * head_dim;
      for (std::size_t i = 0; i < half; ++i) {
        const double angle = double(positions[r]) * std::pow(theta, -double(2 * i) / double(rotary_dim));
        const double c = std::cos(angle), s = std::sin(angle);
        REQUIRE(std::fabs(y[i] - (o[i] * c - o[i + half] * s)) <= 1e-6);
        REQUIRE(std::fabs(y[i + half] - (o[i + half] * c + o[i] * s)) <= 1e-6);
      }
      for (std::size_t i = rotary_dim; i < head_dim; ++i) REQUIRE(y[i] == o[i]);  // partial rotary
    }
}

template <class Arch>
void check_sum_each() {
  using S = kd::Simd<Arch>;
  typename S::vec rows[S::lanes];
  alignas(64) float values[S::lanes][S::lanes];
  for (std::size_t r = 0; r < S::lanes; ++r) {
    for (std::size_t i = 0; i < S::lanes; ++i) values[r][i] = float(r * 100 + i);
    rows[r] = S::load(values[r]);
  }
  alignas(64) float sums[S::lanes];
  S::store(sums, S::sum_each(rows));
  for (std::size_t r = 0; r < S::lanes; ++r)
    REQUIRE(sums[r] == float(r * 100 * S::lanes + S::lanes * (S::lanes - 1) / 2));
}

// Instantiated here, for the architecture this test is compiled for (the
// AVX-512 transpose-add is covered by every variant's batched matmul above).
TEST_CASE("Simd::sum_each returns row sums in row order", "[kernels][simd]") {
  check_sum_each<kd::KernelArch>();
  check_sum_each<kd::ScalarArch>();
}

TEST_CASE("rotary: NeoX rotate-half layout, partial rotary, table", "[kernels][rotary]") {
  kernel_test::for_each_variant(check_rotary);
}

TEST_CASE("embedding_gather widens rows of every dtype", "[kernels][ops]") {
  for (DType dtype : {DType::f32, DType::f16, DType::bf16, DType::q8_0}) {
    const auto table = kernel_test::make_weights(dtype, 9, 96, 4);
    const std::vector<TokenId> ids{8, 0, 3, 3};
    std::vector<float> out(4 * 100, -1.0f);
    kc::embedding_gather(table.matrix, ids, out.data(), 100);
    for (std::size_t t = 0; t < ids.size(); ++t) {
      for (std::size_t i = 0; i < 96; ++i) REQUIRE(out[t * 100 + i] == table.values[std::size_t(ids[t]) * 96 + i]);
      REQUIRE(out[t * 100 + 96] == -1.0f);
    }
  }
}
