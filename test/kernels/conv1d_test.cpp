// conv1d.hpp's kernels (the implicit-im2col GEMM, SnakeBeta, the transposed
// convolution's overlap-add)
// for every kernel variant this CPU runs, against references written here,
// on channel counts that are not multiples of any vector width.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <string_view>
#include <vector>

#include "izwi/core/half.hpp"
#include "izwi/kernels/cpu/thread_pool.hpp"

#include "izwi/kernels/cpu/conv1d.hpp"
#include "kernel_test_util.hpp"

using namespace izwi;
namespace kc = izwi::kernels::cpu;

namespace {

/// The first n floats of a and b are the same bits (n = 0: true, with no
/// call to memcmp, whose pointers may not be null even then).
bool same_bits(const float* a, const float* b, std::size_t n) {
  return n == 0 || std::memcmp(a, b, n * sizeof(float)) == 0;
}


void check_snake_beta(const kc::KernelTable& kernels) {
  for (std::size_t channels : {1, 7, 33, 130, 1536}) {
    INFO("channels " << channels);
    const std::size_t rows = 3;
    // Arguments up to about ±60 (x·e^α), as decoder activations reach.
    auto x = kernel_test::random_floats(rows * channels, static_cast<std::uint32_t>(channels), 20.0f);
    const auto bias = kernel_test::random_floats(channels, 2, 0.5f);
    auto alpha = kernel_test::random_floats(channels, 3, 1.0f);
    auto inv_beta = kernel_test::random_floats(channels, 4, 1.0f);
    for (float& a : alpha) a = std::exp(a);
    // A few arguments past the vector path's range (|v·e^α| > 8000), which take libm's sine.
    x[0] = 9000.0f, x[x.size() - 1] = -12345.5f;
    for (float& b : inv_beta) b = 1.0f / (std::exp(b) + 1e-9f);
    for (const bool with_bias : {false, true}) {
      const float* b = with_bias ? bias.data() : nullptr;
      std::vector<float> y(rows * channels, 9.0f);
      kernels.snake_beta(x.data(), y.data(), rows, channels, b, alpha.data(), inv_beta.data());
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < channels; ++c) {
          // The kernel's f32 argument, then the sine in double.
          const float v = with_bias ? x[r * channels + c] + bias[c] : x[r * channels + c];
          const float arg = v * alpha[c];
          const double s = std::sin(double(arg));
          const double ref = double(v) + double(inv_beta[c]) * s * s;
          // The sine term to 2e-6, plus the final f32 addition's rounding.
          REQUIRE(std::fabs(y[r * channels + c] - ref) <= 2e-6 + 1.2e-7 * std::fabs(ref));
        }
      // In place gives the same bits, and a row's result does not depend on
      // the rows beside it (one row at a time = all rows at once).
      std::vector<float> in_place = x;
      kernels.snake_beta(in_place.data(), in_place.data(), rows, channels, b, alpha.data(), inv_beta.data());
      REQUIRE(same_bits(in_place.data(), y.data(), y.size()));
      for (std::size_t r = 0; r < rows; ++r) {
        std::vector<float> one(channels);
        kernels.snake_beta(x.data() + r * channels, one.data(), 1, channels, b, alpha.data(), inv_beta.data());
        REQUIRE(same_bits(one.data(), y.data() + r * channels, channels));
      }
    }
  }
}

/// The documented sum, in f32 in the documented order: carry, then taps by
/// increasing input row, then bias. Returns n·S + K - S rows.
std::vector<float> overlap_add_reference(const std::vector<float>& products, std::size_t n, std::size_t k,
                                         std::size_t s, std::size_t c, const std::vector<float>& carry,
                                         const std::vector<float>& bias) {
  const std::size_t total = n * s + k - s;
  std::vector<float> rows(total * c, 0.0f);
  for (std::size_t u = 0; u < k - s; ++u)
    for (std::size_t i = 0; i < c; ++i) rows[u * c + i] = carry[u * c + i];
  for (std::size_t t = 0; t < n; ++t)
    for (std::size_t j = 0; j < k; ++j)
      for (std::size_t i = 0; i < c; ++i) rows[(t * s + j) * c + i] += products[(t * k + j) * c + i];
  for (std::size_t u = 0; u < n * s; ++u)
    for (std::size_t i = 0; i < c; ++i) rows[u * c + i] += bias[i];
  return rows;
}

void check_overlap_add(const kc::KernelTable& kernels) {
  struct Shape {
    std::size_t kernel, stride;
  };
  for (const Shape sh : {Shape{2, 2}, Shape{6, 3}, Shape{16, 8}, Shape{5, 2}})
    for (std::size_t c : {1, 19, 37}) {
      INFO("kernel " << sh.kernel << " stride " << sh.stride << " channels " << c);
      const std::size_t k = sh.kernel, s = sh.stride, ov = k - s, n = 5;
      const auto products = kernel_test::random_floats(n * k * c, static_cast<std::uint32_t>(k * 100 + c));
      const auto bias = kernel_test::random_floats(c, 7);
      const auto carry = kernel_test::random_floats(ov * c, 8);
      const auto ref = overlap_add_reference(products, n, k, s, c, carry, bias);
      // Whole range in one call, and the same rows in pieces of 3.
      for (const std::size_t piece : {n * s + ov, std::size_t{3}}) {
        std::vector<float> out(n * s * c, -1.0f), carry_out(ov * c, -1.0f);
        for (std::size_t u = 0; u < n * s + ov; u += piece)
          kernels.transposed_conv_overlap_add(products.data(), n, k, s, c, ov ? carry.data() : nullptr, bias.data(),
                                              u, std::min(n * s + ov, u + piece), out.data(), carry_out.data());
        REQUIRE(same_bits(out.data(), ref.data(), out.size()));
        REQUIRE(same_bits(carry_out.data(), ref.data() + out.size(), carry_out.size()));
      }
      // Streaming: 2 rows then 3 rows, the carry passed on, equal the 5 rows at once.
      const std::vector<float> zero(ov * c, 0.0f);
      const auto whole = overlap_add_reference(products, n, k, s, c, zero, bias);
      std::vector<float> out(n * s * c), carry1(ov * c), carry2(ov * c);
      kernels.transposed_conv_overlap_add(products.data(), 2, k, s, c, ov ? zero.data() : nullptr, bias.data(), 0,
                                          2 * s + ov, out.data(), carry1.data());
      kernels.transposed_conv_overlap_add(products.data() + 2 * k * c, 3, k, s, c, ov ? carry1.data() : nullptr,
                                          bias.data(), 0, 3 * s + ov, out.data() + 2 * s * c, carry2.data());
      REQUIRE(same_bits(out.data(), whole.data(), out.size()));
      REQUIRE(same_bits(carry2.data(), whole.data() + out.size(), carry2.size()));
    }
}

void check_conv1d_gemm(const kc::KernelTable& kernels) {
  struct Shape {
    std::size_t m, kernel, in, n, dilation;
  };
  // The last crosses a pass of packed rows (about 4M floats) and has two
  // output panels; the third is a 1x1 convolution. The runs on emulated CPUs
  // (active variant only) leave the last out: under qemu it took 280 of the
  // suite's 380 s, and its instructions are those of the smaller shapes.
  // Under a sanitizer it runs for the active variant only (runs_largest_shape:
  // all three x86 variants took 60 s of ASan's 125 s test phase).
  // (The first is the narrowest that takes the micro-kernel, not the dot product.)
  std::vector<Shape> shapes{{1, 3, 5, kc::conv1d_dot_max_outputs + 1, 1}, {7, 7, 17, 37, 3}, {33, 1, 40, 96, 1}};
  if (kernel_test::runs_largest_shape(kernels)) shapes.push_back({1300, 7, 600, 70, 2});
  for (const Shape sh : shapes)
    for (std::size_t threads : {1, 3}) {
      INFO("m " << sh.m << " kernel " << sh.kernel << " in " << sh.in << " n " << sh.n << " threads " << threads);
      izwi::detail::ThreadPool pool(threads);
      const std::size_t ctx = (sh.kernel - 1) * sh.dilation, k = sh.kernel * sh.in;
      const auto input = kernel_test::random_floats((sh.m + ctx) * sh.in, static_cast<std::uint32_t>(sh.m + sh.n));
      const auto w = kernel_test::make_weights(DType::f32, sh.n, k, 5);
      // Output r's tap j reads input row r + j·dilation; the same rows as explicit im2col rows.
      std::vector<const float*> taps(sh.m * sh.kernel);
      std::vector<float> columns(sh.m * k);
      for (std::size_t r = 0; r < sh.m; ++r)
        for (std::size_t j = 0; j < sh.kernel; ++j) {
          taps[r * sh.kernel + j] = input.data() + (r + j * sh.dilation) * sh.in;
          std::copy(taps[r * sh.kernel + j], taps[r * sh.kernel + j] + sh.in, columns.begin() + r * k + j * sh.in);
        }
      const std::size_t ldy = sh.n + 3;
      std::vector<float> expected(sh.m * ldy, 5.0f), y(sh.m * ldy, 5.0f);
      kernels.matmul_batch_invariant(columns.data(), k, sh.m, w.matrix, expected.data(), ldy, pool);
      kernels.conv1d_gemm(taps.data(), sh.m, sh.kernel, sh.in, w.matrix, nullptr, y.data(), ldy, pool);
      REQUIRE(same_bits(y.data(), expected.data(), y.size()));  // padding untouched too
      // On GemmPanels packed beforehand by this variant, and by the scalar
      // one (the layout is every variant's): the same panels, the same bits,
      // without reading the row-major weights.
      const std::size_t panel_floats = (sh.n + kc::gemm_panel_columns - 1) / kc::gemm_panel_columns *
                                       kc::gemm_panel_columns * k;
      std::vector<float> panels(panel_floats, -7.0f), scalar_panels(panel_floats, -9.0f), packed_y(sh.m * ldy, 5.0f);
      kernels.pack_gemm_panels(w.matrix, panels.data());
      if (const kc::KernelTable* scalar = kc::kernels_for("scalar")) {
        scalar->pack_gemm_panels(w.matrix, scalar_panels.data());
        REQUIRE(same_bits(scalar_panels.data(), panels.data(), panel_floats));
      }
      for (std::size_t c = 0; c < sh.n; ++c)  // column c, value kk: sub-panel c / 32, lane c % 32
        REQUIRE(panels[(c / 64) * 64 * k + (c % 64 / 32) * 32 * k + (k - 1) * 32 + c % 32] ==
                w.values[c * k + k - 1]);
      kc::WeightMatrix shape_only = w.matrix;
      shape_only.data = nullptr;
      kernels.conv1d_gemm(taps.data(), sh.m, sh.kernel, sh.in, shape_only, panels.data(), packed_y.data(), ldy, pool);
      REQUIRE(same_bits(packed_y.data(), expected.data(), y.size()));
      // And it is the convolution: the first and last rows against a double sum.
      for (const std::size_t r : {std::size_t{0}, sh.m - 1})
        for (std::size_t o = 0; o < sh.n; ++o) {
          double ref = 0, mag = 0;
          for (std::size_t kk = 0; kk < k; ++kk) {
            ref += double(columns[r * k + kk]) * w.values[o * k + kk];
            mag += std::fabs(double(columns[r * k + kk]) * w.values[o * k + kk]);
          }
          REQUIRE(std::fabs(y[r * ldy + o] - ref) <= 2e-6 * std::sqrt(double(k)) * (mag + 1));
        }
      // Rows computed in two calls (another batch) are the same bits.
      const std::size_t half = sh.m / 2;
      std::vector<float> split(sh.m * ldy, 5.0f);
      kernels.conv1d_gemm(taps.data(), half, sh.kernel, sh.in, w.matrix, panels.data(), split.data(), ldy, pool);
      kernels.conv1d_gemm(taps.data() + half * sh.kernel, sh.m - half, sh.kernel, sh.in, w.matrix, nullptr,
                          split.data() + half * ldy, ldy, pool);
      REQUIRE(same_bits(split.data(), expected.data(), y.size()));
    }
}

/// Layers of at most conv1d_dot_max_outputs channels (the decoder's final
/// 1-channel convolution) take one dot product per output element: against
/// a double sum, in f32 and bf16 weights, on channel counts below, at and
/// past the vector widths; the same bits on 1 and 3 threads and when the rows
/// come in two calls.
void check_conv1d_dot(const kc::KernelTable& kernels) {
  struct Shape {
    std::size_t m, kernel, in, n, dilation;
  };
  const std::vector<Shape> shapes{{1, 3, 5, 1, 1}, {37, 7, 96, 1, 1}, {300, 7, 19, 2, 3}, {513, 1, 33, 1, 1}};
  for (const Shape sh : shapes)
    for (const DType dtype : {DType::f32, DType::bf16}) {
      INFO("m " << sh.m << " kernel " << sh.kernel << " in " << sh.in << " n " << sh.n << " bf16 "
                << (dtype == DType::bf16));
      const std::size_t ctx = (sh.kernel - 1) * sh.dilation, k = sh.kernel * sh.in;
      const auto input = kernel_test::random_floats((sh.m + ctx) * sh.in, static_cast<std::uint32_t>(sh.m + sh.in));
      const auto w = kernel_test::make_weights(dtype, sh.n, k, 11);
      std::vector<const float*> taps(sh.m * sh.kernel);
      for (std::size_t r = 0; r < sh.m; ++r)
        for (std::size_t j = 0; j < sh.kernel; ++j)
          taps[r * sh.kernel + j] = input.data() + (r + j * sh.dilation) * sh.in;
      const std::size_t ldy = sh.n + 2;
      std::vector<float> one_thread(sh.m * ldy, 5.0f);
      {
        izwi::detail::ThreadPool pool(1);
        kernels.conv1d_gemm(taps.data(), sh.m, sh.kernel, sh.in, w.matrix, nullptr, one_thread.data(), ldy, pool);
      }
      for (std::size_t r = 0; r < sh.m; ++r) {
        for (std::size_t o = 0; o < sh.n; ++o) {
          double ref = 0, mag = 0;
          for (std::size_t j = 0; j < sh.kernel; ++j)
            for (std::size_t c = 0; c < sh.in; ++c) {
              const double p = double(taps[r * sh.kernel + j][c]) * w.values[o * k + j * sh.in + c];
              ref += p;
              mag += std::fabs(p);
            }
          REQUIRE(std::fabs(one_thread[r * ldy + o] - ref) <= 2e-6 * std::sqrt(double(k)) * (mag + 1));
        }
        for (std::size_t o = sh.n; o < ldy; ++o) REQUIRE(one_thread[r * ldy + o] == 5.0f);  // padding untouched
      }
      izwi::detail::ThreadPool pool(3);
      std::vector<float> three_threads(sh.m * ldy, 5.0f), split(sh.m * ldy, 5.0f);
      kernels.conv1d_gemm(taps.data(), sh.m, sh.kernel, sh.in, w.matrix, nullptr, three_threads.data(), ldy, pool);
      REQUIRE(same_bits(three_threads.data(), one_thread.data(), one_thread.size()));
      const std::size_t half = sh.m / 2;
      kernels.conv1d_gemm(taps.data(), half, sh.kernel, sh.in, w.matrix, nullptr, split.data(), ldy, pool);
      kernels.conv1d_gemm(taps.data() + half * sh.kernel, sh.m - half, sh.kernel, sh.in, w.matrix, nullptr,
                          split.data() + half * ldy, ldy, pool);
      REQUIRE(same_bits(split.data(), one_thread.data(), one_thread.size()));
    }
}

}  // namespace

TEST_CASE("conv1d: one-channel layers take a dot product per output, against a double sum, every variant",
          "[kernels][conv1d]") {
  kernel_test::for_each_variant(check_conv1d_dot);
}

TEST_CASE("conv1d: GemmPanels packed once give the per-call packing's bits, and are what is read",
          "[kernels][conv1d]") {
  // The public entry points (the active variant), bf16 weights widened once.
  izwi::detail::ThreadPool pool(2);
  const std::size_t m = 21, kernel = 3, in = 23, n = 70, k = kernel * in;
  const auto input = kernel_test::random_floats((m + kernel - 1) * in, 3);
  const auto w = kernel_test::make_weights(DType::bf16, n, k, 4);
  std::vector<const float*> taps(m * kernel);
  for (std::size_t r = 0; r < m; ++r)
    for (std::size_t j = 0; j < kernel; ++j) taps[r * kernel + j] = input.data() + (r + j) * in;
  std::vector<float> plain(m * n), packed(m * n);
  kc::conv1d_gemm(taps.data(), m, kernel, in, w.matrix, plain.data(), n, pool);
  kc::GemmPanels panels = kc::pack_gemm_panels(w.matrix);
  REQUIRE(panels.rows == n);
  REQUIRE(panels.cols == k);
  REQUIRE(panels.floats.size() == 128 * k);  // two panels of 64 columns
  kc::WeightMatrix shape_only = w.matrix;
  shape_only.data = nullptr;
  kc::conv1d_gemm(taps.data(), m, kernel, in, shape_only, packed.data(), n, pool, &panels);
  REQUIRE(same_bits(packed.data(), plain.data(), plain.size()));
  // The panels are what is read: doubled (exactly) panels double the result.
  for (float& v : panels.floats) v *= 2.0f;
  kc::conv1d_gemm(taps.data(), m, kernel, in, shape_only, packed.data(), n, pool, &panels);
  for (std::size_t i = 0; i < plain.size(); ++i) REQUIRE(packed[i] == 2.0f * plain[i]);
}

TEST_CASE("conv1d: the implicit-im2col GEMM equals matmul_batch_invariant on im2col rows bit for bit, every variant",
          "[kernels][conv1d]") {
  kernel_test::for_each_variant(check_conv1d_gemm);
}

TEST_CASE("conv1d: snake_beta against a double-precision sine, every variant", "[kernels][conv1d]") {
  kernel_test::for_each_variant(check_snake_beta);
  // The public entry point (the active variant).
  const float x = 0.5f, alpha = 2.0f, inv_beta = 0.25f;
  float y = 0.0f;
  kc::snake_beta(&x, &y, 1, 1, nullptr, &alpha, &inv_beta);
  REQUIRE(std::fabs(y - (0.5 + 0.25 * std::sin(1.0) * std::sin(1.0))) < 1e-6);
}

TEST_CASE("conv1d: transposed-convolution overlap-add equals the documented sum bit for bit, every variant",
          "[kernels][conv1d]") {
  kernel_test::for_each_variant(check_overlap_add);
}

namespace {

/// The codec GEMM on AMX (conv1d_gemm_bf16) of `kernels` on one shape and
/// thread count: against a double sum of the bf16-rounded operands (only f32
/// summation error allowed), against the variant's f32 conv1d_gemm within the
/// roundings' 2^-8 · Σ|x·w|, the padding untouched, and the same bits when
/// the rows come in two calls and one row at a time.
void check_conv1d_gemm_bf16(const kc::KernelTable& kernels, std::size_t m, std::size_t kernel, std::size_t in,
                            std::size_t n, std::size_t dilation, izwi::detail::ThreadPool& pool,
                            std::vector<float>& y) {
  INFO("m " << m << " kernel " << kernel << " in " << in << " n " << n << " threads " << pool.size());
  const std::size_t ctx = (kernel - 1) * dilation, k = kernel * in, ldy = n + 3;
  const auto input = kernel_test::random_floats((m + ctx) * in, static_cast<std::uint32_t>(m + 7 * n));
  const auto w = kernel_test::make_weights(DType::f32, n, k, 9);
  std::vector<const float*> taps(m * kernel);
  for (std::size_t r = 0; r < m; ++r)
    for (std::size_t j = 0; j < kernel; ++j) taps[r * kernel + j] = input.data() + (r + j * dilation) * in;
  const std::size_t k_blocks = (k + 31) / 32, panel_values = k_blocks * 64 * 32;
  std::vector<std::uint16_t> panels((n + 63) / 64 * panel_values, 0x7fc0);
  kernels.pack_gemm_panels_bf16(w.matrix, panels.data());
  for (std::size_t c = 0; c < n; ++c)  // column c, value k-1: panel c / 64, tile (kb, c % 64 / 16), pair row, lane
    REQUIRE(panels[c / 64 * panel_values + ((k - 1) / 32 * 4 + c % 64 / 16) * 512 + (k - 1) % 32 / 2 * 32 +
                   2 * (c % 16) + (k - 1) % 2] == f32_to_bf16(w.values[c * k + k - 1]));
  y.assign(m * ldy, 5.0f);
  std::vector<float> y32(m * ldy, 5.0f);
  kernels.conv1d_gemm_bf16(taps.data(), m, kernel, in, n, panels.data(), y.data(), ldy, pool);
  kernels.conv1d_gemm(taps.data(), m, kernel, in, w.matrix, nullptr, y32.data(), ldy, pool);
  const auto rounded = [](float v) { return double(bf16_to_f32(f32_to_bf16(v))); };
  for (std::size_t r = 0; r < m; ++r) {
    for (std::size_t o = n; o < ldy; ++o) REQUIRE(y[r * ldy + o] == 5.0f);
    for (std::size_t o = 0; o < n; ++o) {
      double ref = 0, mag = 0, mag32 = 0;
      for (std::size_t kk = 0; kk < k; ++kk) {
        const float x = taps[r * kernel + kk / in][kk % in], wv = w.values[o * k + kk];
        ref += rounded(x) * rounded(wv);
        mag += std::fabs(rounded(x) * rounded(wv));
        mag32 += std::fabs(double(x) * wv);
      }
      const double sum_error = double(k) * std::ldexp(1.0, -23) * (mag + 1e-30);
      REQUIRE(std::fabs(y[r * ldy + o] - ref) <= sum_error);
      REQUIRE(std::fabs(y[r * ldy + o] - y32[r * ldy + o]) <= std::ldexp(1.0, -8) * mag32 + 2 * sum_error);
    }
  }
  const std::size_t half = m / 2;
  std::vector<float> split(m * ldy, 5.0f), single(ldy, 5.0f);
  kernels.conv1d_gemm_bf16(taps.data(), half, kernel, in, n, panels.data(), split.data(), ldy, pool);
  kernels.conv1d_gemm_bf16(taps.data() + half * kernel, m - half, kernel, in, n, panels.data(),
                           split.data() + half * ldy, ldy, pool);
  REQUIRE(same_bits(split.data(), y.data(), y.size()));
  for (const std::size_t r : {std::size_t{0}, m / 3, m - 1}) {
    kernels.conv1d_gemm_bf16(taps.data() + r * kernel, 1, kernel, in, n, panels.data(), single.data(), ldy, pool);
    REQUIRE(same_bits(single.data(), y.data() + r * ldy, ldy));
  }
}

}  // namespace

TEST_CASE("conv1d: the bf16 GEMM on AMX or vdpbf16ps against rounded operands and f32, the same bits in any split "
          "or thread count",
          "[kernels][conv1d]") {
  // Only the "avx512" table with AMX or AVX512_BF16 has it; every other
  // variant (and the emulated CPUs) keeps the f32 GEMM alone.
  kernel_test::for_each_variant([&](const kc::KernelTable& kernels) {
    const std::string_view extensions(kernels.extensions);
    const bool bf16 = extensions.find("amx-bf16") != std::string_view::npos ||
                      extensions.find("avx512-bf16") != std::string_view::npos;
    REQUIRE((kernels.conv1d_gemm_bf16 != nullptr) == bf16);
    REQUIRE((kernels.pack_gemm_panels_bf16 != nullptr) == bf16);
    if (std::string_view(kernels.name) != "avx512") REQUIRE_FALSE(bf16);
  });
  const kc::KernelTable* avx512 = kc::kernels_for("avx512");
  if (avx512 == nullptr || avx512->conv1d_gemm_bf16 == nullptr) {
    // Worded as for_each_variant's variant skips (see matmul_test.cpp).
    WARN("kernel variant avx512's bf16 codec GEMM skipped: this CPU lacks AVX-512, or AMX-BF16 (or the tile state) "
         "and AVX512_BF16");
    return;
  }
  struct Shape {
    std::size_t m, kernel, in, n, dilation;
  };
  // Ragged k, n and row blocks; an odd last row block (33 rows); 3 panels;
  // the last crosses passes of packed rows (about 2M bf16 values each).
  std::vector<Shape> shapes{{1, 3, 5, 3, 1}, {7, 7, 17, 37, 3}, {33, 1, 40, 96, 1}, {70, 7, 64, 130, 2}};
  if (!kernel_test::active_variant_only()) shapes.push_back({1300, 7, 600, 70, 2});
  for (const Shape sh : shapes) {
    std::vector<float> one, three;
    izwi::detail::ThreadPool pool1(1), pool3(3);
    check_conv1d_gemm_bf16(*avx512, sh.m, sh.kernel, sh.in, sh.n, sh.dilation, pool1, one);
    check_conv1d_gemm_bf16(*avx512, sh.m, sh.kernel, sh.in, sh.n, sh.dilation, pool3, three);
    REQUIRE(same_bits(one.data(), three.data(), one.size()));
  }
}
