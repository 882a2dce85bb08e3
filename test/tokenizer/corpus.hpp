#pragma once
// The comparison corpus: hand-picked edge cases followed by strings built
// deterministically (fixed seed) from fragments of many kinds -- English,
// CJK, emoji (ZWJ sequences, flags, skin tones), code, numbers, whitespace
// runs with newlines and tabs, added tokens, mixed scripts, decomposed
// characters that NFC composes, long words. Nothing here comes from izwi's
// output: the expected ids come from the reference at test time.
//
// Left out on purpose: U+0085 and U+FEFF, the two code points on which
// JavaScript's \s differs from Unicode White_Space (docs/tokenizer.md).

#include <cstdint>
#include <string>
#include <vector>

namespace izwi_tokenizer_test {

inline std::vector<std::string> hand_picked_cases() {
  return {
      "Hello world",
      "Hello, world! How's it going? I'm fine; you'll see. We've, they're, she'd.",
      "IT'S SHOUTING: WE'LL, THEY'RE, I'VE, HE'D, I'M",
      "'s 't 're 've 'm 'll 'd 'x 'S 'Ll",
      "don't'sneak'sure",
      "   leading spaces",
      "trailing spaces   ",
      "a  b   c    d",
      "line1\nline2\n\nline4\n\n\n",
      "crlf\r\nline\r\n\r\nend",
      "\t\ttabs\tand\t spaces \t\n",
      "  \n  \n  x",
      " \n",
      "\n",
      " ",
      "x \n\n y",
      "12345 678 9",
      "3.14159 2,718 1e10 -42 +7 0x1F 1_000_000",
      "٣٤٥ ¹²³ Ⅻ ½",
      "你好，世界！今天天气很好。",
      "日本語のテキストです。カタカナとひらがな。",
      "한국어 텍스트입니다.",
      "Emoji: 😀👍🏽👨‍👩‍👧‍👦🇯🇵🏳️‍🌈 ❤️",
      "def f(x):\n    return x ** 2  # square\n",
      "for (int i = 0; i < n; ++i) { sum += a[i]; }",
      "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n",
      "<think>\nreasoning\n</think>\n\nanswer",
      "<|endoftext|><|endoftext|>",
      "text<|im_end|>more<|fim_prefix|>x<|fim_suffix|>y<|fim_middle|>",
      "<|im_start|<|im_start|>>",
      "<tool_call>\n{\"name\": \"f\"}\n</tool_call>",
      "cafe\xcc\x81 re\xcc\x81sume\xcc\x81 A\xcc\x8angstro\xcc\x88m",
      "\xe1\x84\x92\xe1\x85\xa1\xe1\x86\xab\xe1\x84\x80\xe1\x85\xb3\xe1\x86\xaf",
      "Ω Å ﬁ ｆｕｌｌｗｉｄｔｈ",
      "Привет, мир! Γειά σου Κόσμε! שלום עולם! مرحبا بالعالم! नमस्ते दुनिया! สวัสดีชาวโลก!",
      "Supercalifragilisticexpialidocious pneumonoultramicroscopicsilicovolcanoconiosis",
      "!!!???...,,,;;;:::---___===+++***&&&%%%$$$###@@@",
      "!!!\n\n???\r\n",
      " ~~~ ``` ''' \"\"\"",
      "a\u00a0b\u2003c\u3000d\u2009e",
      "mixed中文English混合123数字",
      "https://example.com/path?query=1&b=2#frag",
      "user@example.com, +1 (555) 123-4567",
      "    indented\n        more\n    back",
      "\u200bzero\u200cwidth\u200djoiner",
  };
}

/// Deterministic corpus of at least `count` strings (hand-picked first).
inline std::vector<std::string> tokenizer_corpus(std::size_t count = 1200) {
  std::vector<std::string> corpus = hand_picked_cases();
  const std::vector<std::vector<std::string>> pools = {
      // English words and phrases
      {"the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "Tokenizer", "streaming", "BATCH", "Qwen3",
       "isn't", "we'll", "THEY'RE", "o'clock", "rock'n'roll", "e.g.", "U.S.A.", "naïve", "coöperate", "façade"},
      // CJK and Japanese
      {"中文", "测试", "机器学习", "自然语言处理", "日本語", "東京", "ひらがな", "カタカナ", "한국어", "서울", "漢字", "鑫", "𠀀",
       "。", "，", "「引用」", "（括号）"},
      // emoji
      {"😀", "🤖", "👍🏽", "👨‍👩‍👧‍👦", "🇯🇵", "🇺🇸", "🏳️‍🌈", "❤️", "🔥🔥🔥", "🧬", "✨", "☕", "🙂🙃", "🫠"},
      // code
      {"int main() {", "}", "return 0;", "std::vector<int>", "x->y", "a && b || !c", "#include <iostream>",
       "def __init__(self):", "lambda x: x+1", "console.log(`${x}`);", "SELECT * FROM t WHERE id=1;", "<div class=\"a\">",
       "// comment", "/* block */", "i++", "==", "!==", "=>", "::", "0xFF", "\\n", "\\t"},
      // numbers
      {"0", "7", "42", "1234567890", "3.14", "1,000,000", "-273.15", "2024-01-31", "12:34:56", "1e-9", "٣", "४२", "²",
       "½", "Ⅻ", "99%", "$5.00", "€10", "#1"},
      // whitespace
      {" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", " \n", "\n ", "  \n\n  ", "\t \n", "\u00a0", "\u3000",
       "\u2002", "        "},
      // added tokens
      {"<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>", "</tool_call>",
       "<|vision_start|>", "<|image_pad|>", "<tool_response>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>"},
      // other scripts
      {"Привет", "мир", "Γειά", "Κόσμε", "שלום", "مرحبا", "नमस्ते", "สวัสดี", "ሰላም", "Ελληνικά", "Türkçe", "Tiếng Việt",
       "ქართული", "Հայերեն", "தமிழ்", "ગુજરાતી"},
      // decomposed characters NFC composes
      {"e\xcc\x81", "a\xcc\x8a", "o\xcc\x88", "n\xcc\x83", "c\xcc\xa7", "A\xcc\x8a", "\xe1\x84\x80\xe1\x85\xa1",
       "\xe1\x84\x92\xe1\x85\xa1\xe1\x86\xab", "\xe2\x84\xab", "\xe2\x84\xa6", "u\xcc\x88\xcc\x81", "\xe0\xa4\x95\xe0\xa4\xbc"},
      // punctuation
      {".", ",", "!", "?", "...", "—", "–", "'", "\"", "(", ")", "[", "]", "{", "}", "«", "»", "¿", "¡", "…", "·", "@",
       "&", "*", "/", "\\", "|", "~", "^", "`"},
  };
  std::uint64_t state = 0x9E3779B97F4A7C15ull;  // splitmix64, fixed seed
  auto next = [&state]() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  auto pick = [&](const std::vector<std::string>& pool) -> const std::string& { return pool[next() % pool.size()]; };
  const std::vector<std::string> separators = {" ", " ", " ", "", "\n", "  ", "\t", ", ", ". ", "\n\n", " \n"};

  while (corpus.size() < count) {
    const std::uint64_t shape = next() % 10;
    std::string s;
    if (shape == 0) {
      // A long word: a letter run of 50-400 characters, sometimes with a prefix.
      const std::string unit = pick({"a", "ab", "xyz", "é", "字", "ж", "Ab"});
      const std::size_t n = 50 + next() % 350;
      if (next() % 2) s = " ";
      for (std::size_t i = 0; i < n; ++i) s += unit;
    } else if (shape == 1) {
      // A whitespace run of 2-200 mixed spaces, tabs and newlines between words.
      s = pick(pools[0]);
      const std::size_t n = 2 + next() % 198;
      for (std::size_t i = 0; i < n; ++i) s += pick({" ", " ", " ", "\t", "\n", "\r\n"});
      s += pick(pools[0]);
    } else if (shape == 2) {
      // Digits runs: \p{N} splits one digit at a time.
      const std::size_t n = 1 + next() % 40;
      for (std::size_t i = 0; i < n; ++i) s += static_cast<char>('0' + next() % 10);
      s += pick(separators);
      s += pick(pools[4]);
    } else {
      // A sentence of 1-24 fragments from one pool or several.
      const bool mixed = next() % 2 == 0;
      const std::size_t home = next() % pools.size();
      const std::size_t n = 1 + next() % 24;
      for (std::size_t i = 0; i < n; ++i) {
        const auto& pool = mixed ? pools[next() % pools.size()] : pools[home];
        s += pick(pool);
        if (next() % 3 != 0) s += pick(separators);
      }
    }
    corpus.push_back(std::move(s));
  }
  return corpus;
}

}  // namespace izwi_tokenizer_test
