#pragma once
// Word timestamps of a finished transcription (timestamp_granularities[]=word):
// openai-whisper's add_word_timestamps, after the fact. Each decoded window
// (the segments that share a seek) is encoded again on a WhisperRunner and
// its tokens aligned through the alignment heads' cross-attention
// (whisper_word_timestamps: median filter, DTW, punctuation merged). The
// extra cost is one encoder pass and one decoder pass per window — what
// OpenAI's documentation means by "word timestamps incur additional latency".

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "izwi/asr/transcriber.hpp"
#include "izwi/models/whisper.hpp"

namespace izwi::asr {

/// The words of `result` in audio order. `samples_16k` is the audio the
/// transcription decoded; each window spans its segments (from seek to the
/// last segment's end, at most 30 s). `translate`: the transcription was a
/// translation. `num_threads`: the runner's (0: all cores).
std::vector<Word> word_timestamps(const Whisper& model, std::span<const float> samples_16k, const Transcription& result,
                                  bool translate = false, std::size_t num_threads = 0);

}  // namespace izwi::asr

#include "izwi/asr/impl/word_timestamps.hpp"
