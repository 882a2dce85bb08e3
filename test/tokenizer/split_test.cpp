// The Qwen2 split pattern, piece by piece, on cases that exercise each
// alternative and the backtracking of \s*[\r\n]+ and \s+(?!\S).

#include <catch2/catch.hpp>

#include <izwi/tokenizer/detail/qwen2_split.hpp>

#include <string>
#include <vector>

namespace {
std::vector<std::string> split(std::string_view text) {
  izwi::tokenizer::detail::SplitScratch scratch;
  std::vector<std::string> pieces;
  izwi::tokenizer::detail::qwen2_split(text, scratch, [&](std::string_view p) { pieces.emplace_back(p); });
  return pieces;
}
using Pieces = std::vector<std::string>;
}  // namespace

TEST_CASE("qwen2 split: words take one leading non-letter, contractions split off", "[tokenizer][split]") {
  CHECK(split("Hello world") == Pieces{"Hello", " world"});
  CHECK(split("it's") == Pieces{"it", "'s"});
  CHECK(split("WE'LL they'Re I'd") == Pieces{"WE", "'LL", " they", "'Re", " I", "'d"});
  CHECK(split("'sure") == Pieces{"'s", "ure"});  // leftmost-first: the contraction wins
  CHECK(split("'hello") == Pieces{"'hello"});
  CHECK(split("(hello)") == Pieces{"(hello", ")"});
  CHECK(split("\thello") == Pieces{"\thello"});
  CHECK(split("\nhello") == Pieces{"\n", "hello"});  // a line break never prefixes a word
}

TEST_CASE("qwen2 split: numbers one digit at a time, in every script", "[tokenizer][split]") {
  CHECK(split("2024") == Pieces{"2", "0", "2", "4"});
  CHECK(split(" 12") == Pieces{" ", "1", "2"});
  CHECK(split("x٣²") == Pieces{"x", "٣", "²"});
  CHECK(split("abc123def") == Pieces{"abc", "1", "2", "3", "def"});
}

TEST_CASE("qwen2 split: punctuation runs take one leading space and trailing line breaks", "[tokenizer][split]") {
  CHECK(split("a, b") == Pieces{"a", ",", " b"});
  CHECK(split(" ...!\n\nx") == Pieces{" ...!\n\n", "x"});
  CHECK(split("a  ++b") == Pieces{"a", " ", " ++", "b"});
  CHECK(split("😀😀 🤖") == Pieces{"😀😀", " 🤖"});
}

TEST_CASE("qwen2 split: whitespace runs", "[tokenizer][split]") {
  CHECK(split("a   b") == Pieces{"a", "  ", " b"});       // \s+(?!\S) leaves the last space to the word
  CHECK(split("a   ") == Pieces{"a", "   "});            // at the end the whole run goes
  CHECK(split("a \n\n b") == Pieces{"a", " \n\n", " b"});  // \s*[\r\n]+ stops after the last line break
  CHECK(split("a\r\n\r\n  \tb") == Pieces{"a", "\r\n\r\n", "  ", "\tb"});
  CHECK(split("a \n 1") == Pieces{"a", " \n", " ", "1"});
  CHECK(split(" ") == Pieces{" "});
  CHECK(split("") == Pieces{});
  // Unicode White_Space (as Oniguruma / Rust regex): NBSP, ideographic space, NEL.
  CHECK(split("a\u00a0\u00a0b") == Pieces{"a", "\u00a0", "\u00a0b"});
  CHECK(split("a\u3000b") == Pieces{"a", "\u3000b"});
  CHECK(split("a\u0085\u0085b") == Pieces{"a", "\u0085", "\u0085b"});
}

TEST_CASE("qwen2 split: letters are Unicode letters, p{L} (CJK, combining marks are not letters)", "[tokenizer][split]") {
  CHECK(split("你好世界") == Pieces{"你好世界"});
  CHECK(split("日本語のテキスト") == Pieces{"日本語のテキスト"});
  // U+0301 (a combining mark, category Mn) is neither a letter nor a number.
  CHECK(split("e\xcc\x81t") == Pieces{"e", "\xcc\x81t"});
}

TEST_CASE("qwen2 split: pieces always cover the text", "[tokenizer][split]") {
  const std::string text = "Mixed: 中文 text, 123 numbers!\n\n\tTabs  and\r\n emoji 👨‍👩‍👧 'll end   ";
  std::string joined;
  for (const auto& p : split(text)) {
    CHECK_FALSE(p.empty());
    joined += p;
  }
  CHECK(joined == text);
}
