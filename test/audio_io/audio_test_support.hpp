#pragma once
// Helpers shared by the audio I/O tests: fixture access, test signals, a
// hand-written WAV reader/writer independent of libsndfile, and alignment-aware
// correlation for lossy codecs.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "izwi/audio/decode.hpp"

// Catch2 v2 has no SKIP: say so in the output and leave the test case.
#define IZWI_SKIP_WITHOUT_FIXTURES()                                                     \
  do {                                                                                   \
    if (!::izwi::audio::test::have_fixtures()) {                                         \
      WARN("skipped: fixtures missing at " << ::izwi::audio::test::fixture("").string()); \
      return;                                                                            \
    }                                                                                    \
  } while (false)

namespace izwi::audio::test {

/// Runs `f` and returns the DecodeError it throws (fails the test otherwise).
template <class F>
DecodeError expect_decode_error(F&& f) {
  try {
    f();
  } catch (const DecodeError& e) {
    return e;
  }
  FAIL("expected a DecodeError");
  return DecodeError(DecodeProblem::corrupt, "unreachable");
}

/// ../shared/fixtures beside the clone, or $IZWI_FIXTURES_DIR when set (a
/// worktree has no ../shared beside it).
inline std::filesystem::path fixture(const std::string& name) {
  const char* dir = std::getenv("IZWI_FIXTURES_DIR");
  return std::filesystem::path(dir && *dir ? dir : IZWI_FIXTURES_DIR) / "audio" / name;
}

inline bool have_fixtures() { return std::filesystem::exists(fixture("jfk.wav")); }

inline std::vector<std::byte> read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  std::memcpy(out.data(), chars.data(), chars.size());
  return out;
}

/// A linear chirp from f0 to f1 Hz over the signal, amplitude `amp`.
inline std::vector<float> chirp(std::size_t frames, double rate, double f0, double f1,
                                double amp = 0.5) {
  std::vector<float> x(frames);
  const double seconds = frames / rate;
  for (std::size_t i = 0; i < frames; ++i) {
    const double t = i / rate;
    x[i] = static_cast<float>(amp * std::sin(2 * M_PI * (f0 * t + 0.5 * (f1 - f0) / seconds * t * t)));
  }
  return x;
}

inline std::vector<float> sine(std::size_t frames, double rate, double freq, double amp = 0.5,
                               double phase = 0.0) {
  std::vector<float> x(frames);
  for (std::size_t i = 0; i < frames; ++i)
    x[i] = static_cast<float>(amp * std::sin(2 * M_PI * freq * i / rate + phase));
  return x;
}

/// Normalised correlation of a[i] with b[i + lag] over their overlap.
inline double correlation_at(std::span<const float> a, std::span<const float> b, long lag) {
  double ab = 0, aa = 0, bb = 0;
  for (long i = 0; i < static_cast<long>(a.size()); ++i) {
    const long j = i + lag;
    if (j < 0 || j >= static_cast<long>(b.size())) continue;
    ab += double(a[i]) * b[j];
    aa += double(a[i]) * a[i];
    bb += double(b[j]) * b[j];
  }
  return aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : 0.0;
}

struct alignment {
  long lag = 0;
  double correlation = 0;
};

/// The lag in [min_lag, max_lag] at which b best matches a (codec delay).
/// The search correlates a window of at most 8000 samples from the middle of
/// a (enough to lock onto a delay, and cheap under sanitizers); the returned
/// correlation is over the whole overlap at that lag.
inline alignment best_alignment(std::span<const float> a, std::span<const float> b, long min_lag,
                                long max_lag) {
  const std::size_t window = std::min<std::size_t>(a.size(), 8000);
  const std::size_t start = (a.size() - window) / 2;
  alignment best{min_lag, -2};
  for (long lag = min_lag; lag <= max_lag; ++lag) {
    const long shifted = static_cast<long>(start) + lag;
    if (shifted < 0 || shifted >= static_cast<long>(b.size())) continue;
    const double c = correlation_at(a.subspan(start, window), b.subspan(static_cast<std::size_t>(shifted)), 0);
    if (c > best.correlation) best = {lag, c};
  }
  best.correlation = correlation_at(a, b, best.lag);
  return best;
}

/// Independent WAV reader for PCM 16-bit files: walks the RIFF chunks by hand.
struct simple_wav {
  std::uint32_t rate = 0, channels = 0, bits = 0, format_tag = 0;
  std::vector<float> samples;  // s16 / 32768
};

inline std::uint32_t le(const std::byte* p, int n) {
  std::uint32_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<std::uint32_t>(p[i]) << (8 * i);
  return v;
}

inline simple_wav read_simple_wav(std::span<const std::byte> b) {
  simple_wav w;
  std::size_t at = 12;
  while (at + 8 <= b.size()) {
    const std::string id(reinterpret_cast<const char*>(b.data() + at), 4);
    std::uint32_t size = le(b.data() + at + 4, 4);
    if (id == "fmt ") {
      w.format_tag = le(b.data() + at + 8, 2);
      w.channels = le(b.data() + at + 10, 2);
      w.rate = le(b.data() + at + 12, 4);
      w.bits = le(b.data() + at + 22, 2);
    } else if (id == "data") {
      if (size == 0xFFFFFFFFu || at + 8 + size > b.size()) size = static_cast<std::uint32_t>(b.size() - at - 8);
      for (std::size_t i = 0; i + 1 < size; i += 2)
        w.samples.push_back(static_cast<std::int16_t>(le(b.data() + at + 8 + i, 2)) / 32768.0f);
      break;
    }
    at += 8 + size + (size & 1);
  }
  return w;
}

/// Builds a WAV file by hand: `bits` 8 (unsigned), 16, 24, 32 (signed int) or
/// 32 float (`is_float`), from integer sample codes or floats.
inline std::vector<std::byte> make_wav(std::uint32_t rate, std::uint32_t channels, std::uint32_t bits,
                                       bool is_float, std::span<const std::byte> data,
                                       std::uint32_t declared_data_size = 0xFFFFFFFEu,
                                       std::uint16_t format_tag = 0) {
  std::vector<std::byte> out;
  auto put = [&out](std::uint32_t v, int n) {
    for (int i = 0; i < n; ++i) out.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xFF));
  };
  auto tag = [&out](const char* t) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::byte>(t[i]));
  };
  const std::uint32_t data_size =
      declared_data_size == 0xFFFFFFFEu ? static_cast<std::uint32_t>(data.size()) : declared_data_size;
  tag("RIFF");
  put(36 + static_cast<std::uint32_t>(data.size()), 4);
  tag("WAVE");
  tag("fmt ");
  put(16, 4);
  put(format_tag ? format_tag : (is_float ? 3 : 1), 2);
  put(channels, 2);
  put(rate, 4);
  put(rate * channels * bits / 8, 4);
  put(channels * bits / 8, 2);
  put(bits, 2);
  tag("data");
  put(data_size, 4);
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

inline std::vector<std::byte> as_bytes_vector(std::string_view s) {
  std::vector<std::byte> out(s.size());
  std::memcpy(out.data(), s.data(), s.size());
  return out;
}

}  // namespace izwi::audio::test
