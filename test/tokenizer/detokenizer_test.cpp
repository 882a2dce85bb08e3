// Streaming detokenization: never a broken UTF-8 sequence, and the pieces
// add up to decode() of the same ids.

#include <catch2/catch.hpp>

#include <izwi/concepts/executor.hpp>
#include <izwi/tokenizer/detail/utf8.hpp>
#include <izwi/tokenizer/detokenizer.hpp>

#include <random>

#include "tokenizer_test_support.hpp"

using izwi::TokenId;
using izwi::tokenizer::BpeTokenizer;
using izwi::tokenizer::IncrementalDetokenizer;
using Ids = std::vector<TokenId>;

namespace {
bool valid_utf8(std::string_view s) {
  return izwi::tokenizer::detail::utf8_first_invalid(s) == std::string_view::npos;
}

/// The shape the engine asks of an executor's detokenizer (concepts/executor.hpp).
struct ExecutorWithDetokenizer {
  const BpeTokenizer* tokenizer;
  IncrementalDetokenizer make_detokenizer() const { return IncrementalDetokenizer(*tokenizer); }
};
static_assert(izwi::HasDetokenizer<ExecutorWithDetokenizer>);
}  // namespace

TEST_CASE("detokenizer holds a character split across tokens until it completes", "[tokenizer][detokenizer]") {
  IZWI_REQUIRE_QWEN3_OR_SKIP();
  const BpeTokenizer& tok = *izwi_tokenizer_test::qwen3();
  const Ids ids = tok.encode("x𓀀y");  // the hieroglyph is three tokens of 2, 1 and 1 bytes
  REQUIRE(ids.size() == 5);
  IncrementalDetokenizer d(tok);
  CHECK(d.append(ids[0]) == "x");
  CHECK(d.append(ids[1]) == "");
  CHECK(d.pending_bytes() == 2);
  CHECK(d.append(ids[2]) == "");
  CHECK(d.pending_bytes() == 3);
  CHECK(d.append(ids[3]) == "𓀀");
  CHECK(d.pending_bytes() == 0);
  CHECK(d.append(ids[4]) == "y");
  CHECK(d.flush() == "");
}

TEST_CASE("detokenizer: an unfinished sequence becomes U+FFFD at flush, an impossible one at once",
          "[tokenizer][detokenizer]") {
  IZWI_REQUIRE_QWEN3_OR_SKIP();
  const BpeTokenizer& tok = *izwi_tokenizer_test::qwen3();
  const Ids ids = tok.encode("𓀀");
  IncrementalDetokenizer d(tok);
  CHECK(d.append(ids[0]) == "");
  CHECK(d.flush() == "\xef\xbf\xbd");
  // The lead bytes followed by an added token: the sequence can never finish.
  d.reset();
  CHECK(d.append(ids[0]) == "");
  CHECK(d.append(151644) == "\xef\xbf\xbd<|im_start|>");
  // Unknown ids and skipped special tokens contribute nothing.
  CHECK(d.append(151900) == "");
  CHECK(d.append(-5) == "");
  IncrementalDetokenizer skipping(tok, {.skip_special_tokens = true});
  CHECK(skipping.append(151644) == "");
  CHECK(skipping.append(151667) == "<think>");  // added, not special
}

TEST_CASE("detokenizer pieces are valid UTF-8 and add up to decode() (random ids)", "[tokenizer][detokenizer]") {
  IZWI_REQUIRE_QWEN3_OR_SKIP();
  const BpeTokenizer& tok = *izwi_tokenizer_test::qwen3();
  std::mt19937 rng(42);
  // Random ids from the whole embedding range (past the vocabulary too):
  // random byte-level tokens break UTF-8 sequences all the time.
  for (int round = 0; round < 200; ++round) {
    Ids ids(1 + rng() % 60);
    for (auto& id : ids) id = static_cast<TokenId>(rng() % 151936);
    for (const bool skip : {false, true}) {
      IncrementalDetokenizer d(tok, {.skip_special_tokens = skip});
      std::string streamed;
      for (const TokenId id : ids) {
        const std::string_view piece = d.append(id);
        REQUIRE(valid_utf8(piece));
        streamed += piece;
      }
      streamed += d.flush();
      REQUIRE(streamed == tok.decode(ids, {.skip_special_tokens = skip}));
    }
  }
  // And on real text: streaming gives the text back.
  const std::string text = "Streaming 中文 and emoji 👨‍👩‍👧‍👦🇯🇵 with <think> tags </think> and\n\nnewlines.";
  IncrementalDetokenizer d(tok);
  std::string streamed;
  for (const TokenId id : tok.encode(text)) streamed += d.append(id);
  CHECK(streamed == text);
  CHECK(d.pending_bytes() == 0);
}
