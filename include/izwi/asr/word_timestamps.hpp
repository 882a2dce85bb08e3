#pragma once
// Word timestamps of a finished transcription (timestamp_granularities[]=word):
// openai-whisper's add_word_timestamps, after the fact. Each decoded window
// (the segments that share a seek) is encoded again on a WhisperRunner and
// its tokens aligned through the alignment heads' cross-attention
// (whisper_align_words: median filter, DTW, punctuation merged). The
// extra cost is one encoder pass and one decoder pass per window — what
// OpenAI's documentation means by "word timestamps incur additional latency".
//
// Then, segment by segment, openai-whisper's adjustments at segment
// boundaries (adjust_words_at_segment_boundary): with d the window's median
// word duration (at most 0.7 s), a first word that follows a pause longer
// than 4d and is longer than 2d (or whose next word ends over 4d after it
// starts) is cut to 2d, splitting a long second word with it; a segment's
// first word starting over 0.5 s before the segment does is moved to it, and
// its last word ending over 0.5 s after the segment does is cut back to it;
// otherwise the segment takes its first word's start and its last word's end.

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "izwi/asr/transcriber.hpp"
#include "izwi/models/whisper.hpp"

namespace izwi::asr {

/// The words of `result` in audio order; moves each segment's start and end
/// as openai-whisper does when it computes word timestamps (see above).
/// `samples_16k` is the audio the transcription decoded; each window spans
/// its segments (from seek to the last segment's end, at most 30 s).
/// `translate`: the transcription was a translation. `num_threads`: the
/// runner's (0: all cores).
std::vector<Word> word_timestamps(const Whisper& model, std::span<const float> samples_16k, Transcription& result,
                                  bool translate = false, std::size_t num_threads = 0);

/// openai-whisper's adjustment of one segment's words (in add_word_timestamps,
/// "truncate long words at segment boundaries"), in place: `words` are the
/// segment's (non-empty text), `segment_start`/`segment_end` its times,
/// `median_duration` the window's median word duration (≤ 0.7 s),
/// `last_speech` where the speech before the segment ended. Returns the new
/// last_speech: the segment's end (unchanged when it has no words).
double adjust_words_at_segment_boundary(std::vector<Word>& words, double& segment_start, double& segment_end,
                                        double median_duration, double last_speech);

}  // namespace izwi::asr

#include "izwi/asr/impl/word_timestamps.hpp"
