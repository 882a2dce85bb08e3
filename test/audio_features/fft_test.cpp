#include <catch2/catch.hpp>

#include <izwi/audio/fft.hpp>
#include <izwi/core/error.hpp>

#include <cmath>
#include <complex>
#include <numbers>
#include <random>
#include <thread>
#include <vector>

using izwi::audio::RealFft;

namespace {

std::vector<float> random_signal(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(n);
  for (float& v : x) v = dist(rng);
  return x;
}

// The DFT by its definition, in double: the yardstick for FFTW's output.
std::vector<std::complex<double>> direct_dft(const std::vector<float>& x) {
  const std::size_t n = x.size();
  std::vector<std::complex<double>> out(n / 2 + 1);
  for (std::size_t k = 0; k < out.size(); ++k) {
    std::complex<double> sum;
    for (std::size_t j = 0; j < n; ++j) {
      const double angle = -2.0 * std::numbers::pi * static_cast<double>((k * j) % n) / static_cast<double>(n);
      sum += static_cast<double>(x[j]) * std::complex<double>(std::cos(angle), std::sin(angle));
    }
    out[k] = sum;
  }
  return out;
}

}  // namespace

TEST_CASE("real_fft forward matches the direct DFT for sizes that occur (400, 512, 1280) and odd ones",
          "[fft]") {
  for (std::size_t n : {400u, 512u, 1280u, 7u, 1u}) {
    const auto x = random_signal(n, static_cast<unsigned>(n));
    const RealFft fft(n);
    REQUIRE(fft.bins() == n / 2 + 1);
    std::vector<std::complex<float>> out(fft.bins());
    fft.forward(x, out);
    const auto expected = direct_dft(x);
    double worst = 0;
    for (std::size_t k = 0; k < out.size(); ++k) {
      worst = std::max(worst, std::abs(std::complex<double>(out[k]) - expected[k]));
    }
    // Sums of n terms of magnitude <= 1: float rounding gives ~1e-6 * sqrt(n) * log n.
    INFO("n = " << n << ", max |FFTW - DFT| = " << worst);
    CHECK(worst < 1e-4 * std::sqrt(static_cast<double>(n)));
  }
}

TEST_CASE("real_fft inverse undoes forward, aligned or not", "[fft]") {
  for (std::size_t n : {400u, 512u, 1280u, 9u}) {
    const RealFft fft(n);
    // One float of offset defeats FFTW's alignment, exercising the unaligned plans.
    std::vector<float> storage = random_signal(n + 1, 7);
    const std::span<const float> x(storage.data() + 1, n);
    std::vector<std::complex<float>> bins(fft.bins() + 1);
    const std::span<std::complex<float>> unaligned_bins(bins.data() + 1, fft.bins());
    fft.forward(x, unaligned_bins);
    const std::vector<std::complex<float>> spectrum(unaligned_bins.begin(), unaligned_bins.end());
    std::vector<float> back(n);
    fft.inverse(spectrum, back);
    CHECK(std::equal(spectrum.begin(), spectrum.end(), unaligned_bins.begin()));  // input preserved
    float worst = 0;
    for (std::size_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(back[i] - x[i]));
    INFO("n = " << n << ", max |x - irfft(rfft(x))| = " << worst);
    CHECK(worst < 1e-6f);

    // The aligned path gives the same numbers to rounding.
    izwi::audio::FftBuffer<float> aligned_in(n);
    izwi::audio::FftBuffer<std::complex<float>> aligned_out(fft.bins());
    std::copy(x.begin(), x.end(), aligned_in.data());
    fft.forward(aligned_in.span(), aligned_out.span());
    float diff = 0;
    for (std::size_t k = 0; k < fft.bins(); ++k) diff = std::max(diff, std::abs(aligned_out[k] - spectrum[k]));
    CHECK(diff < 1e-4f);
  }
}

TEST_CASE("real_fft rejects bad sizes and mismatched buffers with invalid_argument", "[fft]") {
  CHECK_THROWS_AS(RealFft(0), izwi::invalid_argument);
  CHECK_THROWS_AS(RealFft(RealFft::max_size + 1), izwi::invalid_argument);
  const RealFft fft(16);
  std::vector<float> in(15);
  std::vector<std::complex<float>> out(9);
  CHECK_THROWS_AS(fft.forward(in, out), izwi::invalid_argument);
  std::vector<float> back(16);
  std::vector<std::complex<float>> short_spectrum(8);
  CHECK_THROWS_AS(fft.inverse(short_spectrum, back), izwi::invalid_argument);
}

TEST_CASE("real_fft plans and transforms from many threads at once", "[fft][threads]") {
  // Each thread plans sizes others plan too (the planner must be serialised)
  // and transforms concurrently with the others (the executor is shared).
  const std::vector<std::size_t> sizes{96, 100, 120, 144, 160, 200, 240, 256};
  std::vector<float> worst(8, 1.0f);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      float w = 0;
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        const std::size_t n = sizes[(i + t) % sizes.size()];
        const RealFft fft(n);
        const auto x = random_signal(n, static_cast<unsigned>(t * 100 + i));
        std::vector<std::complex<float>> bins(fft.bins());
        std::vector<float> back(n);
        for (int repeat = 0; repeat < 20; ++repeat) {
          fft.forward(x, bins);
          fft.inverse(bins, back);
        }
        for (std::size_t j = 0; j < n; ++j) w = std::max(w, std::abs(back[j] - x[j]));
      }
      worst[t] = w;
    });
  }
  for (auto& thread : threads) thread.join();
  for (float w : worst) CHECK(w < 1e-6f);
}

TEST_CASE("real_fft plans only the direction and alignment it runs", "[fft]") {
  // Planning is lazy per plan (FFTW_MEASURE costs ~0.2 s a plan at n = 400 in
  // double): a forward-only caller on aligned buffers, as the Whisper log-mel
  // is, must leave the other three plans unmade. 392 is a size no other test
  // in this executable uses, so its plans start empty.
  using izwi::audio::RealFftDouble;
  using izwi::audio::detail::real_fft_plan_kind;
  constexpr std::size_t n = 392;
  const RealFftDouble fft(n);
  auto& plans = izwi::audio::detail::real_fft_plans_for<double>(n);
  const auto made = [&](real_fft_plan_kind k) { return plans.slots[static_cast<std::size_t>(k)].load() != nullptr; };
  CHECK_FALSE(made(real_fft_plan_kind::forward_aligned));

  izwi::audio::FftBuffer<double> x(n);
  izwi::audio::FftBuffer<std::complex<double>> bins(fft.bins());
  for (std::size_t i = 0; i < n; ++i) x.data()[i] = std::sin(0.1 * static_cast<double>(i));
  fft.forward(x.span(), bins.span());
  CHECK(made(real_fft_plan_kind::forward_aligned));
  CHECK_FALSE(made(real_fft_plan_kind::forward_unaligned));
  CHECK_FALSE(made(real_fft_plan_kind::inverse_aligned));
  CHECK_FALSE(made(real_fft_plan_kind::inverse_unaligned));

  // The lazily made inverse still undoes the forward.
  izwi::audio::FftBuffer<double> back(n);
  fft.inverse(bins.span(), back.span());
  CHECK(made(real_fft_plan_kind::inverse_aligned));
  double worst = 0;
  for (std::size_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(back.data()[i] - x.data()[i]));
  CHECK(worst < 1e-12);
}
