#include <catch2/catch.hpp>

#include <izwi/audio/stft.hpp>
#include <izwi/audio/window.hpp>
#include <izwi/core/error.hpp>

#include <cmath>
#include <complex>
#include <numbers>
#include <random>
#include <vector>

using namespace izwi::audio;

namespace {

std::vector<float> noise_and_tone(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 0.1f);
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = dist(rng) + 0.5f * static_cast<float>(std::sin(2.0 * std::numbers::pi * 440.0 * static_cast<double>(i) / 16000.0));
  }
  return x;
}

std::complex<double> dft_bin(const std::vector<double>& frame, std::size_t k) {
  std::complex<double> sum;
  const std::size_t n = frame.size();
  for (std::size_t j = 0; j < n; ++j) {
    const double angle = -2.0 * std::numbers::pi * static_cast<double>((k * j) % n) / static_cast<double>(n);
    sum += frame[j] * std::complex<double>(std::cos(angle), std::sin(angle));
  }
  return sum;
}

}  // namespace

TEST_CASE("hann_window is torch.hann_window: periodic by default, symmetric on request", "[window]") {
  const auto periodic = hann_window(400);
  REQUIRE(periodic.size() == 400);
  CHECK(periodic[0] == 0.0f);
  CHECK(periodic[200] == Approx(1.0f).margin(1e-7));
  CHECK(periodic[100] == Approx(0.5f).margin(1e-7));
  for (std::size_t n = 1; n < 400; ++n) CHECK(periodic[n] == Approx(periodic[400 - n]).margin(1e-7));

  const auto symmetric = hann_window(5, WindowSymmetry::symmetric);
  const std::vector<float> expected{0.0f, 0.5f, 1.0f, 0.5f, 0.0f};
  for (std::size_t n = 0; n < 5; ++n) CHECK(symmetric[n] == Approx(expected[n]).margin(1e-7));
  CHECK(hann_window(1) == std::vector<float>{1.0f});
  CHECK(hann_window(0).empty());
}

TEST_CASE("stft frames follow torch.stft: centred, reflect-padded, onesided, unnormalised", "[stft]") {
  const std::size_t n_fft = 16, hop = 4;
  const auto window = hann_window(n_fft);
  const Stft transform({.n_fft = n_fft, .hop_length = hop, .padding = StftPadding::reflect}, window);
  const auto x = noise_and_tone(37, 1);
  const auto spectrum = transform.forward(x);
  REQUIRE(spectrum.n_frames == 1 + 37 / hop);
  REQUIRE(spectrum.n_bins == n_fft / 2 + 1);

  // Frame t by hand: x mirrored without its edge sample (x[-1] = x[1]), centred on t * hop.
  auto mirrored = [&](long i) {
    const long n = static_cast<long>(x.size());
    if (i < 0) i = -i;
    if (i >= n) i = 2 * (n - 1) - i;
    return static_cast<double>(x[static_cast<std::size_t>(i)]);
  };
  double worst = 0;
  for (std::size_t t = 0; t < spectrum.n_frames; ++t) {
    std::vector<double> frame(n_fft);
    for (std::size_t j = 0; j < n_fft; ++j) {
      frame[j] = window[j] * mirrored(static_cast<long>(t * hop + j) - static_cast<long>(n_fft / 2));
    }
    for (std::size_t k = 0; k < spectrum.n_bins; ++k) {
      worst = std::max(worst, std::abs(std::complex<double>(spectrum.at(t, k)) - dft_bin(frame, k)));
    }
  }
  INFO("max |Stft - hand-made frames| = " << worst);
  CHECK(worst < 1e-5);

  const auto power = transform.power(x);
  REQUIRE(power.values.size() == spectrum.values.size());
  for (std::size_t i = 0; i < power.values.size(); ++i) {
    CHECK(power.values[i] == Approx(std::norm(spectrum.values[i])).epsilon(1e-6).margin(1e-9));
  }

  const Stft uncentred({.n_fft = n_fft, .hop_length = hop, .padding = StftPadding::none}, window);
  CHECK(uncentred.frame_count(15) == 0);
  CHECK(uncentred.frame_count(16) == 1);
  CHECK(uncentred.frame_count(37) == 1 + (37 - 16) / 4);
  CHECK(transform.frame_count(0) == 0);
}

TEST_CASE("stft then inverse Stft reconstructs the signal", "[stft][istft]") {
  struct shape {
    std::size_t n_fft, hop, n;
  };
  for (const shape s : {shape{400, 160, 16000}, shape{512, 128, 12345}, shape{1280, 320, 24000},
                        shape{400, 100, 401}}) {
    for (const auto padding : {StftPadding::reflect, StftPadding::zeros}) {
      const auto window = hann_window(s.n_fft);
      const Stft transform({.n_fft = s.n_fft, .hop_length = s.hop, .padding = padding}, window);
      const auto x = noise_and_tone(s.n, static_cast<unsigned>(s.n));
      const auto spectrum = transform.forward(x);
      const auto y = transform.inverse(spectrum, x.size());
      REQUIRE(y.size() == x.size());
      float worst = 0;
      for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(y[i] - x[i]));
      INFO("n_fft " << s.n_fft << ", hop " << s.hop << ", " << s.n << " samples: max |istft(Stft(x)) - x| = "
                    << worst);
      CHECK(worst < 2e-6f);  // signal peak ~0.9; float rounding only
      // Without a length: hop * (frames - 1) samples, the floor of n to a hop multiple.
      CHECK(transform.inverse(spectrum).size() == s.hop * (spectrum.n_frames - 1));
    }
  }
}

TEST_CASE("inverse Stft of an uncentred transform reconstructs where the window overlap is nonzero",
          "[stft][istft]") {
  // Hann analysis windows are zero at their first sample, so the very
  // first output sample of an uncentred transform cannot be recovered:
  // torch.istft refuses it, and so does izwi.
  const std::size_t n_fft = 64, hop = 16;
  const Stft transform({.n_fft = n_fft, .hop_length = hop, .padding = StftPadding::none}, hann_window(n_fft));
  const auto x = noise_and_tone(1000, 3);
  const auto spectrum = transform.forward(x);
  CHECK_THROWS_AS(transform.inverse(spectrum), izwi::invalid_argument);

  // A window with no zero (Hann raised by 0.1) recovers every sample the frames reach.
  auto raised = hann_window(n_fft);
  for (float& w : raised) w += 0.1f;
  const Stft raised_transform({.n_fft = n_fft, .hop_length = hop, .padding = StftPadding::none}, raised);
  const auto y = raised_transform.inverse(raised_transform.forward(x));
  REQUIRE(y.size() == n_fft + hop * (spectrum.n_frames - 1));
  float worst = 0;
  for (std::size_t i = 0; i < y.size(); ++i) worst = std::max(worst, std::abs(y[i] - x[i]));
  INFO("max error " << worst);
  CHECK(worst < 2e-6f);
}

TEST_CASE("stft rejects bad options and windows that leave gaps", "[stft]") {
  const auto window = hann_window(400);
  CHECK_THROWS_AS(Stft({.n_fft = 400, .hop_length = 0}, window), izwi::invalid_argument);
  CHECK_THROWS_AS(Stft({.n_fft = 0, .hop_length = 160}, window), izwi::invalid_argument);
  CHECK_THROWS_AS(Stft({.n_fft = 200, .hop_length = 100}, window), izwi::invalid_argument);  // window too long
  // A hop longer than the window: samples between frames are covered by no window.
  const Stft gappy({.n_fft = 400, .hop_length = 500}, window);
  const auto spectrum = gappy.forward(std::vector<float>(5000, 0.25f));
  CHECK_THROWS_AS(gappy.inverse(spectrum), izwi::invalid_argument);
  const Stft other({.n_fft = 512, .hop_length = 128}, hann_window(512));
  CHECK_THROWS_AS(other.inverse(spectrum), izwi::invalid_argument);  // bins do not match

  // A shorter window is centred in the frame, zero-padded (torch.stft).
  const Stft padded({.n_fft = 8, .hop_length = 2}, std::vector<float>{1.0f, 1.0f, 1.0f, 1.0f});
  const std::vector<float> expected{0, 0, 1, 1, 1, 1, 0, 0};
  CHECK(std::vector<float>(padded.window().begin(), padded.window().end()) == expected);
}
