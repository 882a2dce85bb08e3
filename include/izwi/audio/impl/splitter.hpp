#pragma once
// Bodies of include/izwi/audio/splitter.hpp.

#include <izwi/core/error.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace izwi::audio {

namespace detail {

inline std::size_t seconds_to_samples(double seconds, int rate) {
  return static_cast<std::size_t>(std::llround(seconds * rate));
}

inline std::vector<AudioChunk> split_quiet(std::span<const float> samples, std::span<const float> probabilities,
                                           std::size_t window_samples, const SplitOptions& o) {
  if (o.sample_rate <= 0) throw izwi::invalid_argument("sample_rate", "sample rate must be positive");
  if (!(o.max_chunk_s > 0)) throw izwi::invalid_argument("max_chunk_s", "maximum chunk length must be positive");
  if (!(o.target_chunk_s > 0) || o.target_chunk_s > o.max_chunk_s)
    throw izwi::invalid_argument("target_chunk_s", "target chunk length must be positive and at most max_chunk_s");
  if (!(o.search_window_s >= 0)) throw izwi::invalid_argument("search_window_s", "search window must not be negative");
  if (!(o.hop_ms > 0)) throw izwi::invalid_argument("hop_ms", "hop must be positive");
  if (!probabilities.empty() && window_samples == 0)
    throw izwi::invalid_argument("window_samples", "window must hold at least one sample");

  const std::size_t n = samples.size();
  const std::size_t max_len = std::max<std::size_t>(1, seconds_to_samples(o.max_chunk_s, o.sample_rate));
  const std::size_t target = std::min(max_len, std::max<std::size_t>(1, seconds_to_samples(o.target_chunk_s, o.sample_rate)));
  const std::size_t search = seconds_to_samples(o.search_window_s, o.sample_rate);
  const std::size_t hop = std::max<std::size_t>(1, seconds_to_samples(o.hop_ms / 1000.0, o.sample_rate));
  const std::size_t half_window = seconds_to_samples(o.energy_window_ms / 2000.0, o.sample_rate);

  // Prefix sums of squares: the mean square of any span in O(1).
  std::vector<double> energy(n + 1, 0.0);
  for (std::size_t i = 0; i < n; ++i) energy[i + 1] = energy[i] + static_cast<double>(samples[i]) * samples[i];
  const auto mean_square = [&](std::size_t centre) {
    const std::size_t a = centre > half_window ? centre - half_window : 0;
    const std::size_t b = std::min(n, centre + half_window + 1);
    return (energy[b] - energy[a]) / static_cast<double>(b - a);
  };
  const auto probability = [&](std::size_t position) -> double {
    const std::size_t i = position / window_samples;
    return i < probabilities.size() ? probabilities[i] : 1.0;  // unknown counts as speech
  };

  std::vector<AudioChunk> chunks;
  std::size_t start = 0;
  while (start < n) {
    if (n - start <= max_len) {
      chunks.push_back({start, n});
      break;
    }
    const std::size_t lo = start + std::max<std::size_t>(1, target > search ? target - search : 1);
    const std::size_t hi = start + std::min(max_len, target + search);  // < n, as n - start > max_len
    const std::size_t aim = start + target;

    // First pass: the least speech-like probability in range (if any).
    double best_probability = std::numeric_limits<double>::infinity();
    if (!probabilities.empty())
      for (std::size_t c = lo; c <= hi; c += hop) best_probability = std::min(best_probability, probability(c));

    std::size_t cut = aim;
    double best_energy = std::numeric_limits<double>::infinity();
    std::size_t best_distance = std::numeric_limits<std::size_t>::max();
    for (std::size_t c = lo; c <= hi; c += hop) {
      if (!probabilities.empty() && probability(c) > best_probability + o.probability_tie) continue;
      const double e = mean_square(c);
      const std::size_t distance = c > aim ? c - aim : aim - c;
      if (e < best_energy || (e == best_energy && distance < best_distance)) {
        best_energy = e;
        best_distance = distance;
        cut = c;
      }
    }
    chunks.push_back({start, cut});
    start = cut;
  }
  return chunks;
}

}  // namespace detail

inline std::vector<AudioChunk> split_at_quiet_points(std::span<const float> samples, const SplitOptions& options) {
  return detail::split_quiet(samples, {}, 0, options);
}

inline std::vector<AudioChunk> split_at_quiet_points(std::span<const float> samples, std::span<const float> speech_probabilities,
                                                     std::size_t window_samples, const SplitOptions& options) {
  if (speech_probabilities.empty())
    throw izwi::invalid_argument("speech_probabilities", "no probabilities given; use the energy-only overload");
  return detail::split_quiet(samples, speech_probabilities, window_samples, options);
}

}  // namespace izwi::audio
