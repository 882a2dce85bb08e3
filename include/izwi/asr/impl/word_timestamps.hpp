#pragma once
// Body of izwi/asr/word_timestamps.hpp.

#include <algorithm>
#include <cmath>

#include "izwi/models/whisper_alignment.hpp"
#include "izwi/models/whisper_request.hpp"
#include "izwi/models/whisper_runner.hpp"

namespace izwi::asr {

inline std::vector<Word> word_timestamps(const Whisper& model, std::span<const float> samples_16k,
                                         const Transcription& result, bool translate, std::size_t num_threads) {
  std::vector<Word> words;
  WhisperRunner runner(model, {.num_threads = num_threads});
  for (std::size_t first = 0; first < result.segments.size();) {
    // One window: the segments that share its seek.
    const std::size_t seek = result.segments[first].seek;
    std::size_t last = first;
    std::vector<TokenId> tokens;
    double end_seconds = 0;
    for (; last < result.segments.size() && result.segments[last].seek == seek; ++last) {
      const Segment& s = result.segments[last];
      tokens.insert(tokens.end(), s.tokens.begin(), s.tokens.end());
      end_seconds = std::max(end_seconds, s.end);
    }
    const std::size_t begin = std::min(seek * samples_per_frame, samples_16k.size());
    const auto end_sample = static_cast<std::size_t>(std::ceil(end_seconds * static_cast<double>(sample_rate)));
    const std::size_t end = std::clamp(end_sample, begin, std::min(samples_16k.size(), begin + samples_per_window));
    const std::size_t num_frames = std::clamp<std::size_t>((end - begin + samples_per_frame - 1) / samples_per_frame, 2,
                                                           frames_per_window);
    first = last;
    if (std::none_of(tokens.begin(), tokens.end(), [&](TokenId t) { return t < model.special_tokens().eot; })) continue;

    const std::span<const float> window = samples_16k.subspan(begin, end - begin);
    runner.start(::izwi::detail::whisper::window_log_mel(model.config().n_mels, window));
    WhisperWordOptions options;
    options.language = result.language.empty() ? "en" : result.language;
    options.translate = translate;
    options.num_frames = num_frames;
    options.time_offset = static_cast<double>(begin) / static_cast<double>(sample_rate);
    for (WhisperWord& w : whisper_word_timestamps(runner, tokens, options)) {
      std::string text = std::move(w.word);
      text.erase(0, text.find_first_not_of(' '));
      if (text.empty()) continue;
      words.push_back({std::move(text), w.start, w.end, w.probability});
    }
  }
  return words;
}

}  // namespace izwi::asr
