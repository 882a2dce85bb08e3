#pragma once
// Body of izwi/asr/word_timestamps.hpp.

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>
#include <vector>

#include "izwi/models/whisper_alignment.hpp"
#include "izwi/models/whisper_request.hpp"
#include "izwi/models/whisper_runner.hpp"

namespace izwi::asr {

inline double adjust_words_at_segment_boundary(std::vector<Word>& words, double& segment_start, double& segment_end,
                                               double median_duration, double last_speech) {
  if (words.empty()) return last_speech;
  const double max_duration = 2 * median_duration;
  // After a pause, the first word (and a long second one) cut to at most 2d.
  Word& first = words.front();
  if (first.end - last_speech > median_duration * 4 &&
      (first.end - first.start > max_duration ||
       (words.size() > 1 && words[1].end - first.start > max_duration * 2))) {
    if (words.size() > 1 && words[1].end - words[1].start > max_duration) {
      const double boundary = std::max(words[1].end / 2, words[1].end - max_duration);
      first.end = words[1].start = boundary;
    }
    first.start = std::max(0.0, first.end - max_duration);
  }
  // The segment's own start when the first word is too long, else the word's.
  if (segment_start < first.end && segment_start - 0.5 > first.start)
    first.start = std::max(0.0, std::min(first.end - median_duration, segment_start));
  else
    segment_start = first.start;
  // The segment's own end when the last word is too long, else the word's.
  Word& last = words.back();
  if (segment_end > last.start && segment_end + 0.5 < last.end)
    last.end = std::max(last.start + median_duration, segment_end);
  else
    segment_end = last.end;
  return segment_end;
}

namespace detail {

/// The aligned words of one window dealt to its segments by their text
/// tokens (openai-whisper's order), each segment's adjusted; returns the last segment's last_speech.
inline double deal_words_to_segments(std::span<Segment> segments, WhisperWordAlignment& aligned, TokenId eot,
                                     double last_speech, std::vector<Word>& out) {
  std::size_t next = 0;
  for (Segment& segment : segments) {
    const auto text_tokens = static_cast<std::size_t>(
        std::count_if(segment.tokens.begin(), segment.tokens.end(), [&](TokenId t) { return t >= 0 && t < eot; }));
    std::vector<Word> words;
    for (std::size_t taken = 0; next < aligned.words.size() && taken < text_tokens; ++next) {
      WhisperWord& w = aligned.words[next];
      taken += w.tokens.size();
      std::string text = std::move(w.word);
      text.erase(0, text.find_first_not_of(' '));
      if (!text.empty()) words.push_back({std::move(text), w.start, w.end, w.probability});
    }
    last_speech = adjust_words_at_segment_boundary(words, segment.start, segment.end, aligned.median_duration, last_speech);
    out.insert(out.end(), std::make_move_iterator(words.begin()), std::make_move_iterator(words.end()));
  }
  return last_speech;
}

}  // namespace detail

inline std::vector<Word> word_timestamps(const Whisper& model, std::span<const float> samples_16k,
                                         Transcription& result, bool translate, std::size_t num_threads) {
  std::vector<Word> words;
  WhisperRunner runner(model, {.num_threads = num_threads});
  double last_speech = 0;
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
    const std::span<Segment> window_segments(result.segments.data() + first, last - first);
    first = last;
    const std::size_t begin = std::min(seek * samples_per_frame, samples_16k.size());
    const auto end_sample = static_cast<std::size_t>(std::ceil(end_seconds * static_cast<double>(sample_rate)));
    const std::size_t end = std::clamp(end_sample, begin, std::min(samples_16k.size(), begin + samples_per_window));
    const std::size_t num_frames = std::clamp<std::size_t>((end - begin + samples_per_frame - 1) / samples_per_frame, 2,
                                                           frames_per_window);
    if (std::none_of(tokens.begin(), tokens.end(), [&](TokenId t) { return t < model.special_tokens().eot; })) continue;

    const std::span<const float> window = samples_16k.subspan(begin, end - begin);
    runner.start(::izwi::detail::whisper::window_log_mel(model.config().n_mels, window));
    WhisperWordOptions options;
    options.language = result.language.empty() ? "en" : result.language;
    options.translate = translate;
    options.num_frames = num_frames;
    options.time_offset = static_cast<double>(begin) / static_cast<double>(sample_rate);
    WhisperWordAlignment aligned = whisper_align_words(runner, tokens, options);
    const std::size_t before = words.size();
    detail::deal_words_to_segments(window_segments, aligned, model.special_tokens().eot, last_speech, words);
    // openai-whisper's transcribe() carries the last word's end to the next window.
    if (words.size() > before) last_speech = words.back().end;
  }
  return words;
}

}  // namespace izwi::asr
