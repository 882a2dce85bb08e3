#pragma once
// Word timestamps: bodies (the steps are listed in whisper_alignment.hpp).

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>

#include "izwi/core/error.hpp"
#include "izwi/models/detail/whisper_dtw.hpp"
#include "izwi/models/detail/whisper_words.hpp"

namespace izwi {

namespace detail::whisper {

struct AlignmentHeadPreset {
  std::string_view name;
  std::initializer_list<std::pair<std::uint32_t, std::uint32_t>> heads;
};

/// openai-whisper's published alignment heads per model (its _ALIGNMENT_HEADS;
/// whisper.cpp carries the same as its dtw presets).
inline std::span<const AlignmentHeadPreset> alignment_head_presets() {
  static const AlignmentHeadPreset presets[] = {
      {"tiny.en", {{1, 0}, {2, 0}, {2, 5}, {3, 0}, {3, 1}, {3, 2}, {3, 3}, {3, 4}}},
      {"tiny", {{2, 2}, {3, 0}, {3, 2}, {3, 3}, {3, 4}, {3, 5}}},
      {"base.en", {{3, 3}, {4, 7}, {5, 1}, {5, 5}, {5, 7}}},
      {"base", {{3, 1}, {4, 2}, {4, 3}, {4, 7}, {5, 1}, {5, 2}, {5, 4}, {5, 6}}},
      {"small.en", {{6, 6}, {7, 0}, {7, 3}, {7, 8}, {8, 2}, {8, 5}, {8, 7}, {9, 0}, {9, 4}, {9, 8},
                    {9, 10}, {10, 0}, {10, 1}, {10, 2}, {10, 3}, {10, 6}, {10, 11}, {11, 2}, {11, 4}}},
      {"small", {{5, 3}, {5, 9}, {8, 0}, {8, 4}, {8, 7}, {8, 8}, {9, 0}, {9, 7}, {9, 9}, {10, 5}}},
      {"medium.en", {{11, 4}, {14, 1}, {14, 12}, {14, 14}, {15, 4}, {16, 0}, {16, 4}, {16, 9}, {17, 12},
                     {17, 14}, {18, 7}, {18, 10}, {18, 15}, {20, 0}, {20, 3}, {20, 9}, {20, 14}, {21, 12}}},
      {"medium", {{13, 15}, {15, 4}, {15, 15}, {16, 1}, {20, 0}, {23, 4}}},
      {"large-v1", {{9, 19}, {11, 2}, {11, 4}, {11, 17}, {22, 7}, {22, 11}, {22, 17}, {23, 2}, {23, 15}}},
      {"large-v2", {{10, 12}, {13, 17}, {16, 11}, {16, 12}, {16, 13}, {17, 15}, {17, 16}, {18, 4},
                    {18, 11}, {18, 19}, {19, 11}, {21, 2}, {21, 3}, {22, 3}, {22, 9}, {22, 12},
                    {23, 5}, {23, 7}, {23, 13}, {25, 5}, {26, 1}, {26, 12}, {27, 15}}},
      {"large-v3", {{7, 0}, {10, 17}, {12, 18}, {13, 12}, {16, 1}, {17, 14}, {19, 11}, {21, 4}, {24, 1}, {25, 6}}},
      {"large-v3-turbo", {{2, 4}, {2, 11}, {3, 3}, {3, 6}, {3, 11}, {3, 14}}},
  };
  return presets;
}

/// The published shape whose configuration `c` has, or "" (none, or
/// large-v1/large-v2, which only their weights tell apart).
inline std::string_view recognised_shape(const WhisperConfig& c) {
  for (std::string_view name : {"tiny", "tiny.en", "base", "base.en", "small", "small.en", "medium", "medium.en",
                                "large-v3", "large-v3-turbo"}) {
    const WhisperConfig p = WhisperConfig::preset(name);
    if (p.d_model == c.d_model && p.decoder_layers == c.decoder_layers && p.encoder_layers == c.encoder_layers &&
        p.decoder_heads == c.decoder_heads && p.n_mels == c.n_mels && p.vocab_size == c.vocab_size)
      return name;
  }
  return {};
}

/// Rows [first_row, first_row + rows) of the heads' mean after standardising
/// and median filtering each head: weights [heads][tokens][frames] → [rows][frames].
inline std::vector<float> alignment_matrix(std::vector<float>& weights, std::size_t heads, std::size_t tokens,
                                           std::size_t frames, std::size_t filter_width, std::size_t first_row,
                                           std::size_t rows) {
  std::vector<float> matrix(rows * frames, 0.0f);
  for (std::size_t h = 0; h < heads; ++h) {
    float* head = weights.data() + h * tokens * frames;
    standardize_columns(head, tokens, frames);
    median_filter_rows(head, tokens, frames, filter_width);
    for (std::size_t i = 0; i < rows * frames; ++i) matrix[i] += head[first_row * frames + i];
  }
  for (float& m : matrix) m /= static_cast<float>(heads);
  return matrix;
}

/// Probability of `token` under the softmax of logits [0, text_end) (the text vocabulary).
inline double text_token_probability(std::span<const float> logits, TokenId token, TokenId text_end) {
  const auto n = static_cast<std::size_t>(text_end);
  const float top = *std::max_element(logits.begin(), logits.begin() + static_cast<std::ptrdiff_t>(n));
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i] - top));
  return std::exp(static_cast<double>(logits[static_cast<std::size_t>(token)] - top)) / sum;
}

/// Steps 1-4 for one decoder input.
struct TokenAlignment {
  /// Per aligned row (first_row, first_row + rows): the audio position where
  /// the warping path first reaches it.
  std::vector<std::size_t> row_starts;
  std::span<const float> logits;  ///< [sequence][vocab], the runner's: valid until its next pass
};

/// Runs `sequence` through the runner taking the alignment heads'
/// attention over the first `softmax_positions` encoder positions, keeps the
/// first `frames` of them (openai-whisper: softmax_positions == frames;
/// whisper.cpp takes the softmax over the whole window, then cuts), and warps
/// rows [first_row, first_row + rows) against time.
inline TokenAlignment align_tokens(WhisperRunner& runner, std::span<const TokenId> sequence, std::size_t first_row,
                                   std::size_t rows, const WhisperAlignmentHeads& heads, std::size_t frames,
                                   std::size_t softmax_positions, std::size_t filter_width) {
  std::vector<float> weights;
  const std::span<const float> logits = runner.feed_with_alignment(sequence, heads, softmax_positions, weights);
  const std::size_t tokens = sequence.size();
  if (softmax_positions != frames)  // keep the first `frames` columns of every row
    for (std::size_t r = 0; r < heads.size() * tokens; ++r)
      std::copy_n(weights.begin() + static_cast<std::ptrdiff_t>(r * softmax_positions), frames,
                  weights.begin() + static_cast<std::ptrdiff_t>(r * frames));
  std::vector<float> matrix = alignment_matrix(weights, heads.size(), tokens, frames, filter_width, first_row, rows);
  for (float& m : matrix) m = -m;  // the path follows the most attention
  return {dtw_row_starts(dtw_path(matrix.data(), rows, frames), rows), logits};
}

}  // namespace detail::whisper

inline WhisperAlignmentHeads whisper_alignment_heads_preset(std::string_view name) {
  if (name == "large") name = "large-v3";
  if (name == "turbo") name = "large-v3-turbo";
  std::string known;
  for (const auto& preset : detail::whisper::alignment_head_presets()) {
    if (preset.name == name) return {preset.heads.begin(), preset.heads.end()};
    known += (known.empty() ? "" : ", ") + std::string(preset.name);
  }
  throw izwi::invalid_argument("alignment_heads", "no alignment-head preset '" + std::string(name) +
                                                      "' (known: " + known + ", large, turbo)");
}

inline WhisperAlignmentHeads whisper_alignment_heads(const Whisper& model, std::string_view preset) {
  if (!preset.empty()) return whisper_alignment_heads_preset(preset);
  if (!model.generation_config().alignment_heads.empty()) return model.generation_config().alignment_heads;
  if (const std::string_view shape = detail::whisper::recognised_shape(model.config()); !shape.empty())
    return whisper_alignment_heads_preset(shape);
  const WhisperConfig& c = model.config();
  WhisperAlignmentHeads upper_half;
  for (std::uint32_t layer = c.decoder_layers / 2; layer < c.decoder_layers; ++layer)
    for (std::uint32_t head = 0; head < c.decoder_heads; ++head) upper_half.emplace_back(layer, head);
  return upper_half;
}

inline std::vector<WhisperWord> whisper_word_timestamps(WhisperRunner& runner, std::span<const TokenId> tokens,
                                                        const WhisperWordOptions& options) {
  return whisper_align_words(runner, tokens, options).words;
}

inline WhisperWordAlignment whisper_align_words(WhisperRunner& runner, std::span<const TokenId> tokens,
                                                const WhisperWordOptions& options) {
  namespace dw = detail::whisper;
  const Whisper& model = runner.model();
  const tokenizer::WhisperTokenizer* tok = model.tokenizer();
  if (tok == nullptr) throw izwi::invalid_argument("model", "word timestamps need the model's tokenizer");
  const std::size_t window_frames = 2 * std::size_t{model.config().n_audio_ctx};
  if (options.num_frames < 2 || options.num_frames > window_frames)
    throw izwi::invalid_argument("num_frames", "word timestamps need 2 to " + std::to_string(window_frames) +
                                                   " mel frames, got " + std::to_string(options.num_frames));
  const TokenId eot = model.special_tokens().eot;
  std::vector<TokenId> text;
  for (TokenId t : tokens)
    if (t >= 0 && t < eot) text.push_back(t);
  if (text.empty()) return {};

  // [sot sequence, <|notimestamps|>, text, <|endoftext|>]; the row of
  // <|notimestamps|> predicts text[0], the last text token's <|endoftext|>.
  std::vector<TokenId> sequence = tok->sot_sequence(options.language, options.translate, false);
  const std::size_t first_row = sequence.size() - 1, aligned_rows = text.size() + 1;
  sequence.insert(sequence.end(), text.begin(), text.end());
  sequence.push_back(eot);

  const WhisperAlignmentHeads heads = whisper_alignment_heads(model, options.alignment_heads_preset);
  const std::size_t frames = options.num_frames / 2, vocab = model.vocab_size();
  const dw::TokenAlignment aligned =
      dw::align_tokens(runner, sequence, first_row, aligned_rows, heads, frames, frames, options.median_filter_width);
  const std::vector<std::size_t>& token_starts = aligned.row_starts;
  const std::span<const float> logits = aligned.logits;

  std::vector<double> probability(text.size());
  for (std::size_t i = 0; i < text.size(); ++i)
    probability[i] = dw::text_token_probability(logits.subspan((first_row + i) * vocab, vocab), text[i], eot);

  std::vector<TokenId> with_end = text;
  with_end.push_back(eot);
  std::vector<dw::TokenWord> groups =
      dw::split_words(options.language, with_end, eot, [&](TokenId t) { return tok->token_text(t); });
  groups.pop_back();  // the <|endoftext|> group

  constexpr double seconds_per_position = 0.02;  // an encoder position covers 2 mel frames of 10 ms
  std::vector<WhisperWord> words;
  std::size_t first = 0;
  for (dw::TokenWord& group : groups) {
    const std::size_t last = first + group.tokens.size();
    double sum = 0;
    for (std::size_t i = first; i < last; ++i) sum += probability[i];
    WhisperWord w;
    w.word = std::move(group.word);
    w.tokens = std::move(group.tokens);
    w.start = options.time_offset + static_cast<double>(token_starts[first]) * seconds_per_position;
    w.end = options.time_offset + static_cast<double>(token_starts[last]) * seconds_per_position;
    w.probability = sum / static_cast<double>(last - first);
    words.push_back(std::move(w));
    first = last;
  }
  const double median = dw::median_word_duration(words);
  dw::truncate_long_words_at_sentence_ends(words);
  dw::merge_punctuation(words);
  std::erase_if(words, [](const WhisperWord& w) { return w.word.empty(); });
  return {std::move(words), median};
}

}  // namespace izwi
