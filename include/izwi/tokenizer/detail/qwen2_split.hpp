#pragma once
// The Qwen2/Qwen3 pre-tokenizer split, a hand-written matcher for the pattern
//
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// with the regex semantics (leftmost-first alternation, greedy quantifiers
// with backtracking) worked out per alternative. Every position matches one
// of the last alternatives, so the pieces cover the text with no gaps.
// std::regex cannot express \p{L}/\p{N}, and a general engine would be
// slower than this single pass over code points.

#include <izwi/tokenizer/detail/unicode.hpp>
#include <izwi/tokenizer/detail/utf8.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace izwi::tokenizer::detail {

/// The pattern as tokenizer.json spells it (pre_tokenizer Split, "Regex").
inline constexpr std::string_view qwen2_split_pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

/// Reusable buffers, so splitting allocates only when a longer text arrives.
struct SplitScratch {
  std::vector<char32_t> code_points;
  std::vector<CharClass> classes;
  std::vector<std::uint32_t> offsets;  ///< byte offset of each code point, plus the end
};

/// Length in code points of the match at i (always >= 1 when i < n).
inline std::size_t qwen2_match_length(const char32_t* cp, const CharClass* cls, std::size_t i, std::size_t n) noexcept {
  auto is_crlf = [](char32_t c) { return c == U'\r' || c == U'\n'; };
  auto run_end = [&](std::size_t from, CharClass k) {
    while (from < n && cls[from] == k) ++from;
    return from;
  };
  const char32_t c = cp[i];
  const CharClass k = cls[i];

  // (?i:'s|'t|'re|'ve|'m|'ll|'d)
  if (c == U'\'' && i + 1 < n) {
    const char32_t a = cp[i + 1] | 0x20;  // ASCII lower case; non-letters never match below
    if (cp[i + 1] < 0x80) {
      if (a == U's' || a == U't' || a == U'm' || a == U'd') return 2;
      if (i + 2 < n && cp[i + 2] < 0x80) {
        const char32_t b = cp[i + 2] | 0x20;
        if ((a == U'r' || a == U'v') && b == U'e') return 3;
        if (a == U'l' && b == U'l') return 3;
      }
    }
  }
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (k == CharClass::letter) return run_end(i, CharClass::letter) - i;
  if (k != CharClass::number && !is_crlf(c) && i + 1 < n && cls[i + 1] == CharClass::letter)
    return run_end(i + 1, CharClass::letter) - i;
  // \p{N}
  if (k == CharClass::number) return 1;
  //  ?[^\s\p{L}\p{N}]+[\r\n]*
  std::size_t start = n;
  if (k == CharClass::other) start = i;
  else if (c == U' ' && i + 1 < n && cls[i + 1] == CharClass::other) start = i + 1;
  if (start != n) {
    std::size_t end = run_end(start, CharClass::other);
    while (end < n && is_crlf(cp[end])) ++end;
    return end - i;
  }
  // Only whitespace is left. W = the whitespace run at i.
  const std::size_t w_end = run_end(i, CharClass::whitespace);
  // \s*[\r\n]+ : backtracks to the last line break inside W.
  for (std::size_t j = w_end; j > i; --j)
    if (is_crlf(cp[j - 1])) return j - i;
  // \s+(?!\S) : all of W at the end of the text, else W less its last character.
  if (w_end == n) return w_end - i;
  if (w_end - i >= 2) return w_end - 1 - i;
  // \s+
  return w_end - i;
}

/// Splits valid UTF-8 `text` and calls piece(std::string_view) for each piece in order.
template <class OnPiece>
void qwen2_split(std::string_view text, SplitScratch& scratch, OnPiece&& piece) {
  auto& cps = scratch.code_points;
  auto& cls = scratch.classes;
  auto& offs = scratch.offsets;
  cps.clear();
  cls.clear();
  offs.clear();
  for (std::size_t pos = 0; pos < text.size();) {
    offs.push_back(static_cast<std::uint32_t>(pos));
    const char32_t c = decode_utf8_unchecked(text, pos);
    cps.push_back(c);
    cls.push_back(char_class(c));
  }
  offs.push_back(static_cast<std::uint32_t>(text.size()));
  const std::size_t n = cps.size();
  for (std::size_t i = 0; i < n;) {
    const std::size_t len = qwen2_match_length(cps.data(), cls.data(), i, n);
    piece(text.substr(offs[i], offs[i + len] - offs[i]));
    i += len;
  }
}

}  // namespace izwi::tokenizer::detail
