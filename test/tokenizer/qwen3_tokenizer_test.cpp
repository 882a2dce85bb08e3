// The real Qwen3 tokenizer.json: loading, known ids, added tokens, decoding.

#include <catch2/catch.hpp>

#include <izwi/tokenizer/bpe_tokenizer.hpp>
#include <izwi/tokenizer/detail/unicode.hpp>
#include <izwi/tokenizer/detail/utf8.hpp>

#include <algorithm>
#include <random>

#include "tokenizer_test_support.hpp"

using izwi::TokenId;
using izwi::tokenizer::BpeTokenizer;
using Ids = std::vector<TokenId>;

TEST_CASE("qwen3 tokenizer.json loads with its vocabulary, merges and added tokens", "[tokenizer][qwen3]") {
  IZWI_REQUIRE_QWEN3_OR_SKIP();
  const BpeTokenizer& tok = *izwi_tokenizer_test::qwen3();
  CHECK(tok.vocab_size() == 151669);
  CHECK(tok.merge_count() == 151387);
  CHECK(tok.added_tokens().size() == 26);
  CHECK(tok.normalizes_nfc());
  CHECK(tok.token_to_id("<|im_start|>") == 151644);
  CHECK(tok.token_to_id("<|endoftext|>") == 151643);
  CHECK(tok.token_to_id("<think>") == 151667);
  CHECK(tok.token_to_id("Ġworld") == 1879);
  CHECK(tok.id_to_token(1879) == "Ġworld");
  CHECK(tok.token_bytes(1879) == " world");
  CHECK(tok.is_special(151644));
  CHECK_FALSE(tok.is_special(151667));  // <think> is added but not special
  CHECK(tok.is_added(151667));
  CHECK_FALSE(tok.is_added(1879));
  // Merge rules by rank, as the file lists them: [["Ġ","Ġ"],["ĠĠ","ĠĠ"],["i","n"], ...].
  const auto [l0, r0] = tok.merge_rule(0);
  CHECK(tok.id_to_token(l0) == "Ġ");
  CHECK(tok.id_to_token(r0) == "Ġ");
  const auto [l2, r2] = tok.merge_rule(2);
  CHECK(std::string(tok.id_to_token(l2)) + " " + std::string(tok.id_to_token(r2)) == "i n");
  CHECK_THROWS_AS(tok.merge_rule(tok.merge_count()), std::out_of_range);
}

TEST_CASE("qwen3 encodes known strings to the ids Hugging Face gives", "[tokenizer][qwen3]") {
  IZWI_REQUIRE_QWEN3_OR_SKIP();
  const BpeTokenizer& tok = *izwi_tokenizer_test::qwen3();
  CHECK(tok.encode("Hello world") == Ids{9707, 1879});
  CHECK(tok.encode("") == Ids{});
  // Added tokens are matched before splitting, in the raw text.
  CHECK(tok.encode("<|im_start|>user\nhi<|im_end|>") == Ids{151644, 872, 198, 6023, 151645});
  CHECK(tok.encode("a<think>b</think>") == Ids{64, 151667, 65, 151668});
  // ... unless parsing them is switched off: then they are plain text.
  const Ids plain = tok.encode("<|im_start|>", {.parse_special_tokens = false});
  CHECK(plain.size() > 1);
  CHECK(std::find(plain.begin(), plain.end(), 151644) == plain.end());
  CHECK(tok.decode(plain) == "<|im_start|>");
  // Added tokens not marked special are still recognised, as in Hugging Face.
  const Ids mixed = tok.encode("<|im_end|><think>", {.parse_special_tokens = false});
  CHECK(mixed.back() == 151667);
  CHECK(std::find(mixed.begin(), mixed.end(), 151645) == mixed.end());
}

TEST_CASE("qwen3 normalizes to NFC before splitting", "[tokenizer][qwen3]") {
  IZWI_REQUIRE_QWEN3_OR_SKIP();
  const BpeTokenizer& tok = *izwi_tokenizer_test::qwen3();
  // "é" decomposed (e + U+0301) and precomposed (U+00E9) encode alike.
  CHECK(tok.encode("caf\x65\xcc\x81") == tok.encode("caf\xc3\xa9"));
  // Hangul jamo compose to a syllable.
  CHECK(tok.encode("\xe1\x84\x92\xe1\x85\xa1\xe1\x86\xab") == tok.encode("\xed\x95\x9c"));
}

TEST_CASE("qwen3 decode round-trips and skips special tokens on request", "[tokenizer][qwen3]") {
  IZWI_REQUIRE_QWEN3_OR_SKIP();
  const BpeTokenizer& tok = *izwi_tokenizer_test::qwen3();
  const std::string text = "<|im_start|>system\nYou are 助手 🤖.<|im_end|>\n<think>\n\n</think>\n\n  tabs\t\tend";
  const Ids ids = tok.encode(text);
  CHECK(tok.decode(ids) == text);
  CHECK(tok.decode(ids, {.skip_special_tokens = true}) == "system\nYou are 助手 🤖.\n<think>\n\n</think>\n\n  tabs\t\tend");
  // Ids past the vocabulary (the embedding has 151936 rows) decode to nothing.
  CHECK(tok.decode(Ids{9707, 151900, -1, 1879}) == "Hello world");
  // Half of a multi-byte character becomes U+FFFD.
  const Ids robot = tok.encode("𓀀");  // a hieroglyph: three tokens (one per byte group)
  REQUIRE(robot.size() == 3);
  CHECK(tok.decode(Ids{robot[0]}) == "\xef\xbf\xbd");
}

TEST_CASE("encode refuses text that is not UTF-8", "[tokenizer][qwen3]") {
  IZWI_REQUIRE_QWEN3_OR_SKIP();
  const BpeTokenizer& tok = *izwi_tokenizer_test::qwen3();
  CHECK_THROWS_AS(tok.encode("ab\xff"), izwi::invalid_argument);
  CHECK_THROWS_WITH(tok.encode("ab\xc3"), Catch::Contains("not valid UTF-8") && Catch::Contains("byte 2"));
  CHECK_THROWS_AS(tok.encode("\xed\xa0\x80"), izwi::invalid_argument);  // a surrogate
}

TEST_CASE("qwen3 decode(encode(s)) == NFC(s) for random code points from every plane", "[tokenizer][qwen3]") {
  IZWI_REQUIRE_QWEN3_OR_SKIP();
  const BpeTokenizer& tok = *izwi_tokenizer_test::qwen3();
  std::mt19937 rng(2026);
  for (int round = 0; round < 300; ++round) {
    std::string text;
    const int length = 1 + static_cast<int>(rng() % 30);
    for (int i = 0; i < length; ++i) {
      char32_t cp;
      switch (rng() % 4) {
        case 0: cp = 0x20 + rng() % 0x60; break;   // ASCII
        case 1: cp = rng() % 0x3000; break;        // Latin to CJK symbols, controls and combining marks included
        case 2: cp = 0x3000 + rng() % 0xD000; break;
        default: cp = 0x10000 + rng() % 0x100000; break;
      }
      if (cp >= 0xD800 && cp <= 0xDFFF) cp = 'x';  // surrogates are not scalar values
      izwi::tokenizer::detail::append_utf8(text, cp);
    }
    std::string nfc;
    izwi::tokenizer::detail::append_nfc(nfc, text);
    const Ids ids = tok.encode(text);
    REQUIRE(tok.decode(ids) == nfc);
    for (const TokenId id : ids) REQUIRE((id >= 0 && static_cast<std::size_t>(id) < tok.vocab_size()));
  }
}
