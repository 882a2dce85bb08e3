// Splitter: cuts land in the known quiet gaps of synthetic audio, chunks tile
// the signal and never exceed the maximum.

#include <izwi/audio/splitter.hpp>

#include "vad_test_support.hpp"

#include <random>

using izwi::audio::AudioChunk;
using izwi::audio::SplitOptions;

namespace {

constexpr int rate = 16000;

// Loud noise ("speech") with near-silent gaps of 0.3 s starting at `gaps` seconds.
std::vector<float> loud_with_gaps(double seconds, const std::vector<double>& gaps) {
  std::mt19937 rng(3);
  std::normal_distribution<float> noise(0.0f, 0.2f);
  std::vector<float> x(static_cast<std::size_t>(seconds * rate));
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double t = static_cast<double>(i) / rate;
    bool quiet = false;
    for (double g : gaps) quiet = quiet || (t >= g && t < g + 0.3);
    x[i] = noise(rng) * (quiet ? 0.005f : 1.0f);
  }
  return x;
}

void check_tiling(const std::vector<AudioChunk>& chunks, std::size_t total, double max_s) {
  REQUIRE(!chunks.empty());
  CHECK(chunks.front().start == 0);
  CHECK(chunks.back().end == total);
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    CHECK(chunks[i].length() > 0);
    CHECK(chunks[i].length() <= static_cast<std::size_t>(max_s * rate));
    if (i) CHECK(chunks[i].start == chunks[i - 1].end);
  }
}

bool inside_gap(std::size_t cut, double gap) {
  const double t = static_cast<double>(cut) / rate;
  return t >= gap && t <= gap + 0.3;
}

}  // namespace

TEST_CASE("splitter cuts inside the quiet gaps near the target length", "[splitter]") {
  const auto x = loud_with_gaps(100, {27.0, 55.0, 83.0});
  const auto chunks = izwi::audio::split_at_quiet_points(x);
  check_tiling(chunks, x.size(), 30);
  REQUIRE(chunks.size() == 4);
  CHECK(inside_gap(chunks[0].end, 27.0));
  CHECK(inside_gap(chunks[1].end, 55.0));
  CHECK(inside_gap(chunks[2].end, 83.0));
}

TEST_CASE("splitter never exceeds the maximum, even when the only gap is beyond it", "[splitter]") {
  const auto x = loud_with_gaps(70, {33.0});
  const auto chunks = izwi::audio::split_at_quiet_points(x);
  check_tiling(chunks, x.size(), 30);
  CHECK(chunks[0].end <= 30u * rate);
  // A longer maximum lets the cut reach the gap.
  SplitOptions wider;
  wider.target_chunk_s = 30;
  wider.max_chunk_s = 35;
  const auto relaxed = izwi::audio::split_at_quiet_points(x, wider);
  check_tiling(relaxed, x.size(), 35);
  CHECK(inside_gap(relaxed[0].end, 33.0));
}

TEST_CASE("splitter: short audio is one chunk, empty is none, bad options throw", "[splitter]") {
  const std::vector<float> x(10 * rate, 0.1f);
  CHECK(izwi::audio::split_at_quiet_points(x) == std::vector<AudioChunk>{{0, x.size()}});
  CHECK(izwi::audio::split_at_quiet_points({}).empty());
  SplitOptions bad;
  bad.target_chunk_s = 40;
  CHECK_THROWS_AS(izwi::audio::split_at_quiet_points(x, bad), izwi::invalid_argument);
  bad = {};
  bad.hop_ms = 0;
  CHECK_THROWS_AS(izwi::audio::split_at_quiet_points(x, bad), izwi::invalid_argument);
}

TEST_CASE("splitter with speech probabilities prefers the least speech-like window", "[splitter]") {
  // Uniform loudness, so only the probabilities can tell: low at 26.0-26.5 s.
  std::mt19937 rng(5);
  std::normal_distribution<float> noise(0.0f, 0.1f);
  std::vector<float> x(60 * rate);
  for (auto& v : x) v = noise(rng);
  std::vector<float> p((x.size() + 511) / 512, 0.95f);
  for (std::size_t i = 26 * rate / 512; i < 26 * rate / 512 + 15; ++i) p[i] = 0.02f;
  const auto chunks = izwi::audio::split_at_quiet_points(x, p, 512);
  check_tiling(chunks, x.size(), 30);
  const double cut = static_cast<double>(chunks[0].end) / rate;
  CHECK(cut >= 26.0);
  CHECK(cut <= 26.5);
}
