#pragma once
// Word timestamps for Whisper, as openai-whisper computes them
// (timing.py: find_alignment and merge_punctuations):
//
//   1. the decoder runs over [<|startoftranscript|> <|lang|> <|task|>
//      <|notimestamps|>, text tokens, <|endoftext|>] on the window's audio;
//   2. the cross-attention probabilities of the alignment heads — decoder
//      heads whose attention follows the speech — are taken over the audio
//      actually present (num_frames / 2 encoder positions, softmax over those);
//   3. per head, each audio position's column is standardised over the
//      tokens, a median filter of width 7 smooths every token's row along
//      time, and the heads are averaged;
//   4. dynamic time warping on the negated matrix (rows <|notimestamps|> and
//      the text tokens) gives each token the audio position where the path
//      first reaches it: a token starts there and ends where the next starts;
//   5. tokens are grouped into words (at spaces and punctuation; at whole
//      characters for zh, ja, th, lo, my, yue), a word spanning its first
//      token's start to the start after its last token, with the mean of its
//      tokens' probabilities (softmax over the text vocabulary);
//   6. a word longer than twice the median word duration (at most 0.7 s) is
//      cut short when it is, or follows, a sentence mark (openai-whisper's
//      add_word_timestamps does so);
//   7. opening punctuation joins the next word, closing punctuation the one before.
//
// Which heads: the checkpoint's generation_config.json `alignment_heads`
// when it has them, else openai-whisper's published set for the model's
// shape (the same facts whisper.cpp hard-codes as its `dtw` presets), named
// or recognised from the configuration; a shape with no published set uses
// every head of the upper half of the decoder (openai-whisper's default).
//
//   izwi::WhisperRunner run(model);
//   run.start(mel);                                      // the window
//   auto result = izwi::whisper_greedy_decode(run, {.language = "en"});
//   auto words = izwi::whisper_word_timestamps(run, result.tokens,
//                                              {.language = "en", .num_frames = 1100});
//
// After an engine transcription the server has the window's mel and the
// generated tokens: a WhisperRunner started on that mel gives the words.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "izwi/core/ids.hpp"
#include "izwi/models/whisper.hpp"
#include "izwi/models/whisper_runner.hpp"

namespace izwi {

/// (decoder layer, head) pairs.
using WhisperAlignmentHeads = std::vector<std::pair<std::uint32_t, std::uint32_t>>;

/// openai-whisper's alignment heads of a published model: tiny, base, small,
/// medium (and their .en), large-v1, large-v2, large-v3, large-v3-turbo;
/// "large" is large-v3 and "turbo" large-v3-turbo, as openai-whisper names
/// them. Unknown names throw izwi::invalid_argument listing the known ones.
WhisperAlignmentHeads whisper_alignment_heads_preset(std::string_view name);

/// The heads word timestamps use for `model`: `preset` when not empty, else
/// the checkpoint's generation_config alignment_heads, else the published set
/// of the shape its configuration matches (large-v1 and large-v2 share a
/// configuration; such a model without a name, or an unpublished shape, gets
/// all heads of the upper half of the decoder).
WhisperAlignmentHeads whisper_alignment_heads(const Whisper& model, std::string_view preset = {});

struct WhisperWordOptions {
  /// The transcription's language code (chooses how words split, and the
  /// prompt's language token); ignored in the prompt of .en models.
  std::string language = "en";
  bool translate = false;
  /// Mel frames of audio in the window (100 per second; 3000 for a full
  /// window): alignment looks at the first num_frames / 2 encoder positions.
  std::size_t num_frames = 3000;
  /// Seconds added to every time: the window's start in the file.
  double time_offset = 0;
  /// An alignment-head preset name; empty: whisper_alignment_heads(model)'s choice.
  std::string alignment_heads_preset;
  std::size_t median_filter_width = 7;
};

struct WhisperWord {
  std::string word;             ///< as decoded, its leading space included
  double start = 0, end = 0;    ///< seconds (time_offset added)
  double probability = 0;       ///< mean probability of its tokens
  std::vector<TokenId> tokens;  ///< the tokens it was decoded from
};

/// The words of `tokens` (a transcription of the window `runner` has
/// encoded; timestamp and other special tokens among them are skipped, as
/// openai-whisper keeps only text tokens) with their times. The words'
/// texts concatenated are the decoded text. Restarts the runner's decoder
/// sequence. Throws izwi::invalid_argument for num_frames outside [2, 3000],
/// a model without a tokenizer, or more tokens than the decoder holds.
std::vector<WhisperWord> whisper_word_timestamps(WhisperRunner& runner, std::span<const TokenId> tokens,
                                                 const WhisperWordOptions& options = {});

/// The words and the median word duration of the alignment (step 6's d: the
/// median non-zero duration before punctuation merges, at most 0.7 s; 0 when
/// none), which openai-whisper's adjustments at segment boundaries use
/// (asr::adjust_words_at_segment_boundary).
struct WhisperWordAlignment {
  std::vector<WhisperWord> words;
  double median_duration = 0;
};
WhisperWordAlignment whisper_align_words(WhisperRunner& runner, std::span<const TokenId> tokens,
                                         const WhisperWordOptions& options = {});

}  // namespace izwi

#include "izwi/models/impl/whisper_alignment.hpp"
