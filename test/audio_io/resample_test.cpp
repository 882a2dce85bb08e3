// Resampling: streaming equals one-shot exactly, lengths follow
// resampled_frames, sines stay sines, and content above the new Nyquist
// frequency is removed.

#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "audio_io/audio_test_support.hpp"
#include "izwi/audio/resample.hpp"

using namespace izwi::audio;
using namespace izwi::audio::test;

namespace {

double rms(std::span<const float> x) {
  double s = 0;
  for (float v : x) s += double(v) * v;
  return x.empty() ? 0 : std::sqrt(s / x.size());
}

// Pushes `x` in random-sized chunks (seeded) and concatenates output + flush.
std::vector<float> resample_in_chunks(std::span<const float> x, std::uint32_t from, std::uint32_t to,
                                      std::uint32_t channels, unsigned seed, std::size_t max_chunk) {
  StreamingResampler r(from, to, channels);
  std::mt19937 rng(seed);
  std::vector<float> out;
  std::size_t at = 0;
  while (at < x.size()) {
    std::size_t frames = std::uniform_int_distribution<std::size_t>(0, max_chunk)(rng);
    std::size_t n = std::min(frames * channels, x.size() - at);
    r.push(x.subspan(at, n), out);
    at += n;
  }
  auto tail = r.flush();
  out.insert(out.end(), tail.begin(), tail.end());
  return out;
}

}  // namespace

TEST_CASE("resampled_frames rounds frames * to / from", "[audio_io][resample]") {
  CHECK(resampled_frames(485100, 44100, 16000) == 176000);
  CHECK(resampled_frames(16000, 16000, 24000) == 24000);
  CHECK(resampled_frames(3, 44100, 16000) == 1);       // 1.088
  CHECK(resampled_frames(1, 16000, 24000) == 2);       // 1.5 rounds up
  CHECK(resampled_frames(0, 8000, 48000) == 0);
  CHECK(resampled_frames(std::size_t{1} << 40, 768000, 8000) == ((std::size_t{1} << 40) + 48) / 96);
}

TEST_CASE("streaming resampling equals one-shot resampling, sample for sample", "[audio_io][resample]") {
  struct rates { std::uint32_t from, to, channels; };
  for (rates r : {rates{44100, 16000, 1}, rates{16000, 24000, 1}, rates{24000, 48000, 2},
                  rates{48000, 44100, 2}, rates{16000, 16000, 1}}) {
    INFO(r.from << " -> " << r.to << " Hz, " << r.channels << " ch");
    std::vector<float> x = chirp(static_cast<std::size_t>(r.from) * 3 / 2 * r.channels, r.from, 50, r.from / 3.0);
    const auto whole = resample(x, r.from, r.to, r.channels);
    REQUIRE(whole.size() == resampled_frames(x.size() / r.channels, r.from, r.to) * r.channels);
    for (unsigned seed : {1u, 2u}) {
      const auto chunked = resample_in_chunks(x, r.from, r.to, r.channels, seed, seed == 1 ? 37 : 5000);
      REQUIRE(chunked.size() == whole.size());
      CHECK(chunked == whole);
    }
  }
}

TEST_CASE("a resampled sine is the same sine at the new rate", "[audio_io][resample]") {
  struct rates { std::uint32_t from, to; double freq; };
  for (rates r : {rates{44100, 16000, 1000.0}, rates{16000, 24000, 3000.0}, rates{24000, 16000, 440.0}}) {
    INFO(r.from << " -> " << r.to << " Hz, " << r.freq << " Hz sine");
    const auto x = sine(r.from * 2, r.from, r.freq, 0.5);
    const auto y = resample(x, r.from, r.to);
    const auto want = sine(y.size(), r.to, r.freq, 0.5);
    // Away from the edges (where the filter sees the signal start and stop),
    // SOXR_HQ's error is far below s16 resolution.
    double max_error = 0;
    for (std::size_t i = r.to / 10; i + r.to / 10 < y.size(); ++i)
      max_error = std::max(max_error, double(std::fabs(y[i] - want[i])));
    INFO("max error " << max_error);
    CHECK(max_error < 1e-4);
  }
}

TEST_CASE("downsampling removes content above the new Nyquist frequency", "[audio_io][resample]") {
  // 10 kHz cannot exist at 16 kHz (Nyquist 8 kHz): it must be filtered, not aliased to 6 kHz.
  const auto x = sine(44100, 44100, 10000.0, 0.5);
  const auto y = resample(x, 44100, 16000);
  const std::span<const float> middle(y.data() + 1600, y.size() - 3200);
  INFO("rms " << rms(middle));
  CHECK(rms(middle) < 1e-4);
}

TEST_CASE("identity resampling copies, and the streaming state machine is checked",
          "[audio_io][resample]") {
  const auto x = chirp(1000, 16000, 100, 4000);
  CHECK(resample(x, 16000, 16000) == x);
  StreamingResampler r(44100, 16000);
  r.push(x);
  r.flush();
  CHECK_THROWS_AS(r.push(x), izwi::invalid_argument);
  r.reset();
  std::vector<float> again = r.push(x);
  auto tail = r.flush();
  again.insert(again.end(), tail.begin(), tail.end());
  CHECK(again == resample(x, 44100, 16000));  // reset forgets the first stream

  StreamingResampler moved = std::move(r);
  CHECK(moved.from_rate() == 44100);
  CHECK_THROWS_AS(StreamingResampler(0, 16000), izwi::invalid_argument);
  CHECK_THROWS_AS(resample(x, 16000, 1'000'000), izwi::invalid_argument);
  CHECK_THROWS_AS(resample(std::span<const float>(x.data(), 999), 16000, 8000, 2), izwi::invalid_argument);
}
