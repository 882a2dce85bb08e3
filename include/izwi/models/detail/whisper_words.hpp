#pragma once
// Text steps of word timestamps, as openai-whisper defines them: grouping
// tokens into words (at spaces and punctuation, or at every whole character
// for languages written without spaces) and merging punctuation into the
// word it belongs to.

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "izwi/core/ids.hpp"

namespace izwi::detail::whisper {

/// A word and the tokens it was decoded from.
struct TokenWord {
  std::string word;
  std::vector<TokenId> tokens;
};

/// True when `bytes` ends inside a UTF-8 sequence that more bytes could
/// complete, and is well formed before it: the token group is waiting for the
/// rest of a character that a byte-level BPE token split.
inline bool utf8_awaits_continuation(std::string_view bytes) {
  std::size_t i = 0;
  while (i < bytes.size()) {
    const auto lead = static_cast<unsigned char>(bytes[i]);
    const std::size_t length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
    if (length == 0) return false;  // not a lead byte: broken, no byte can mend it
    std::size_t k = 1;
    for (; k < length && i + k < bytes.size(); ++k)
      if ((static_cast<unsigned char>(bytes[i + k]) & 0xC0) != 0x80) return false;
    if (i + k == bytes.size() && k < length) return true;
    i += length;
  }
  return false;
}

/// Groups tokens so that each group decodes to whole characters: a group ends
/// when its bytes are not waiting for a continuation (openai-whisper's
/// split_tokens_on_unicode). `bytes_of(token)` spells a token.
template <class BytesOf>
std::vector<TokenWord> split_on_characters(std::span<const TokenId> tokens, BytesOf&& bytes_of) {
  std::vector<TokenWord> groups;
  TokenWord current;
  for (TokenId t : tokens) {
    current.tokens.push_back(t);
    current.word += bytes_of(t);
    if (!utf8_awaits_continuation(current.word)) groups.push_back(std::move(current)), current = {};
  }
  if (!current.tokens.empty()) groups.push_back(std::move(current));
  return groups;
}

inline std::string_view strip_ascii_spaces(std::string_view s) {
  constexpr std::string_view spaces = " \t\n\r\v\f";
  const std::size_t first = s.find_first_not_of(spaces);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(spaces) - first + 1);
}

/// Python's `part in whole` for strings: a substring test (the empty string is in every string).
inline bool contains(std::string_view whole, std::string_view part) { return whole.find(part) != std::string_view::npos; }

/// Words of a language written with spaces (openai-whisper's
/// split_tokens_on_spaces): character groups joined until one starts with a
/// space, is punctuation, or is a special token (id >= `first_special`).
template <class BytesOf>
std::vector<TokenWord> split_on_spaces(std::span<const TokenId> tokens, TokenId first_special, BytesOf&& bytes_of) {
  // Python's string.punctuation, tested as Python tests `x in string.punctuation`.
  constexpr std::string_view ascii_punctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
  std::vector<TokenWord> words;
  for (TokenWord& group : split_on_characters(tokens, bytes_of)) {
    const bool special = group.tokens.front() >= first_special;
    const bool with_space = !group.word.empty() && group.word.front() == ' ';
    const bool punctuation = contains(ascii_punctuation, strip_ascii_spaces(group.word));
    if (special || with_space || punctuation || words.empty()) {
      words.push_back(std::move(group));
    } else {
      words.back().word += group.word;
      words.back().tokens.insert(words.back().tokens.end(), group.tokens.begin(), group.tokens.end());
    }
  }
  return words;
}

/// openai-whisper's split_to_word_tokens: at characters for languages
/// written without spaces (zh, ja, th, lo, my, yue), else at spaces.
template <class BytesOf>
std::vector<TokenWord> split_words(std::string_view language, std::span<const TokenId> tokens, TokenId first_special,
                                   BytesOf&& bytes_of) {
  for (std::string_view code : {"zh", "ja", "th", "lo", "my", "yue"})
    if (language == code) return split_on_characters(tokens, bytes_of);
  return split_on_spaces(tokens, first_special, bytes_of);
}

/// openai-whisper's median word duration (add_word_timestamps): the median
/// of the non-zero durations of the aligned words, at most 0.7 s; 0 when
/// every word has zero length. `Word` has `start` and `end`.
template <class Word>
double median_word_duration(const std::vector<Word>& words) {
  std::vector<double> durations;
  for (const Word& w : words)
    if (w.end - w.start != 0) durations.push_back(w.end - w.start);
  if (durations.empty()) return 0.0;
  std::sort(durations.begin(), durations.end());
  const std::size_t n = durations.size();
  const double median = n % 2 ? durations[n / 2] : (durations[n / 2 - 1] + durations[n / 2]) / 2;
  return std::min(0.7, median);
}

/// openai-whisper's cut of implausibly long words at sentence ends (in
/// add_word_timestamps, before merging punctuation): with d the median of the
/// non-zero word durations, at most 0.7 s, a word (after the first) longer
/// than 2d ends 2d after its start when it is a sentence mark itself, or
/// starts 2d before its end when the word before it is one. `Word` has
/// `word`, `start` and `end`.
template <class Word>
void truncate_long_words_at_sentence_ends(std::vector<Word>& words) {
  if (std::none_of(words.begin(), words.end(), [](const Word& w) { return w.end - w.start != 0; })) return;
  const double longest = 2 * median_word_duration(words);
  constexpr std::string_view sentence_end_marks = ".\u3002!\uff01?\uff1f";
  for (std::size_t i = 1; i < words.size(); ++i) {
    if (words[i].end - words[i].start <= longest) continue;
    if (contains(sentence_end_marks, words[i].word))
      words[i].end = words[i].start + longest;
    else if (contains(sentence_end_marks, words[i - 1].word))
      words[i].start = words[i].end - longest;
  }
}

/// openai-whisper's defaults for merge_punctuation().
inline constexpr std::string_view prepend_punctuations = "\"'\u201c\u00bf([{-";
inline constexpr std::string_view append_punctuations = "\"'.\u3002,\uff0c!\uff01?\uff1f:\uff1a\u201d)]}\u3001";

/// Moves opening punctuation (a word " (" or " “" …) onto the word after it
/// and closing punctuation onto the word before it, leaving empty words
/// behind (callers drop them; each word keeps its own times). `Word` has
/// `word` (its text) and `tokens`. Membership is Python's substring test, as in
/// openai-whisper's merge_punctuations.
template <class Word>
void merge_punctuation(std::vector<Word>& words, std::string_view prepended = prepend_punctuations,
                       std::string_view appended = append_punctuations) {
  if (words.size() < 2) return;
  auto move_text = [](Word& from, Word& to, bool in_front) {
    to.word = in_front ? from.word + to.word : to.word + from.word;
    to.tokens.insert(in_front ? to.tokens.begin() : to.tokens.end(), from.tokens.begin(), from.tokens.end());
    from.word.clear();
    from.tokens.clear();
  };
  // Opening punctuation, right to left: "following" is the nearest word that kept its text.
  std::size_t following = words.size() - 1;
  for (std::size_t i = words.size() - 1; i-- > 0;) {
    Word& previous = words[i];
    if (!previous.word.empty() && previous.word.front() == ' ' && contains(prepended, strip_ascii_spaces(previous.word)))
      move_text(previous, words[following], true);
    else
      following = i;
  }
  // Closing punctuation, left to right: "previous" is the nearest word that kept its text.
  std::size_t previous = 0;
  for (std::size_t j = 1; j < words.size(); ++j) {
    Word& next = words[j];
    const bool previous_ends_with_space = !words[previous].word.empty() && words[previous].word.back() == ' ';
    if (!previous_ends_with_space && contains(appended, next.word))
      move_text(next, words[previous], false);
    else
      previous = j;
  }
}

}  // namespace izwi::detail::whisper
