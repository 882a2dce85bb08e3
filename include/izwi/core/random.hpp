#pragma once
// The per-request random generator. Each request owns one, seeded from its
// SamplingParams::seed, and only that request's sampling advances it: so a
// seeded request yields the same tokens whatever else shares the batch, and a
// preempted request resumes the same stream (the state survives preemption).

#include <cstdint>
#include <limits>

namespace izwi {

/// xoshiro256** (Blackman & Vigna): 32 bytes of state, fast, statistically
/// strong, and fully specified, so results do not depend on the standard library.
/// Satisfies UniformRandomBitGenerator.
class SequenceRng {
 public:
  using result_type = std::uint64_t;

  explicit SequenceRng(std::uint64_t seed = 0) noexcept { reseed(seed); }

  /// State from seed through SplitMix64, as the algorithm's authors recommend.
  void reseed(std::uint64_t seed) noexcept {
    for (auto& word : state_) {
      seed += 0x9e3779b97f4a7c15ULL;
      std::uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      word = z ^ (z >> 31);
    }
  }

  static constexpr result_type min() noexcept { return 0; }
  static constexpr result_type max() noexcept { return std::numeric_limits<result_type>::max(); }

  result_type operator()() noexcept {
    const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const std::uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }

  /// Uniform in [0, 1) with 24 random bits: exactly representable as float.
  float uniform_float() noexcept { return static_cast<float>((*this)() >> 40) * 0x1.0p-24f; }

  friend bool operator==(const SequenceRng&, const SequenceRng&) = default;

 private:
  static constexpr std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
  std::uint64_t state_[4]{};
};

}  // namespace izwi
