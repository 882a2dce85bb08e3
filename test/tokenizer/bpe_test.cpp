// BPE loading and merging on small tokenizer.json files written here, so
// each rule of the format can be checked in isolation; and the two merge
// loops (rescan for short words, heap for long ones) against each other.

#include <catch2/catch.hpp>

#include <izwi/tokenizer/bpe_tokenizer.hpp>
#include <izwi/tokenizer/detail/byte_level.hpp>

#include <random>
#include <string>
#include <vector>

#include "tokenizer_test_support.hpp"

using izwi::TokenId;
using izwi::tokenizer::BpeTokenizer;
using izwi::tokenizer::tokenizer_error;
using Ids = std::vector<TokenId>;
using izwi_tokenizer_test::json_string;

namespace {

const std::string qwen2_pre_tokenizer =
    R"({"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},"behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false}]})";

struct Spec {
  std::vector<std::string> extra_tokens;                    ///< ids 256, 257, ... (byte-level spelling)
  std::vector<std::pair<std::string, std::string>> merges;  ///< in rank order
  std::string added_tokens = "[]";
  std::string normalizer = R"({"type":"NFC"})";
  std::string pre_tokenizer = qwen2_pre_tokenizer;
  std::string model_extra;  ///< more members of "model", each starting with ','
  std::string byte_fallback = "false";  ///< JSON value of model.byte_fallback
  std::string ignore_merges = "false";  ///< JSON value of model.ignore_merges
  bool merges_as_strings = false;
  bool drop_byte = false;  ///< leave the symbol of byte 0x00 out
};

/// A tokenizer.json whose ids 0..255 are the byte symbols in byte order.
std::string make_tokenizer_json(const Spec& spec) {
  const auto& alphabet = izwi::tokenizer::detail::byte_level_alphabet();
  std::string vocab;
  for (int b = spec.drop_byte ? 1 : 0; b < 256; ++b)
    vocab += (vocab.empty() ? "" : ",") + json_string(alphabet.utf8_of_byte[b]) + ":" + std::to_string(b);
  for (std::size_t i = 0; i < spec.extra_tokens.size(); ++i)
    vocab += "," + json_string(spec.extra_tokens[i]) + ":" + std::to_string(256 + i);
  std::string merges;
  for (const auto& [l, r] : spec.merges) {
    if (!merges.empty()) merges += ",";
    merges += spec.merges_as_strings ? json_string(l + " " + r) : "[" + json_string(l) + "," + json_string(r) + "]";
  }
  return R"({"version":"1.0","truncation":null,"padding":null,"added_tokens":)" + spec.added_tokens +
         R"(,"normalizer":)" + spec.normalizer + R"(,"pre_tokenizer":)" + spec.pre_tokenizer +
         R"(,"post_processor":{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false})"
         R"(,"decoder":{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false})"
         R"(,"model":{"type":"BPE","dropout":null,"unk_token":null,"continuing_subword_prefix":"","end_of_word_suffix":"","fuse_unk":false,"byte_fallback":)" + spec.byte_fallback +
         R"(,"ignore_merges":)" + spec.ignore_merges + R"(,"vocab":{)" +
         vocab + R"(},"merges":[)" + merges + "]" + spec.model_extra + "}}";
}

BpeTokenizer load(const Spec& spec) { return BpeTokenizer::from_json(make_tokenizer_json(spec), "test.json"); }

}  // namespace

TEST_CASE("bpe applies merges lowest rank first", "[tokenizer][bpe]") {
  Spec spec;
  spec.extra_tokens = {"ab", "bc", "abc"};  // 256, 257, 258
  spec.merges = {{"b", "c"}, {"a", "b"}, {"a", "bc"}};
  const BpeTokenizer tok = load(spec);
  CHECK(tok.vocab_size() == 259);
  CHECK(tok.merge_count() == 3);
  CHECK(tok.encode("abc") == Ids{258});       // b+c first, then a+bc
  CHECK(tok.encode("ab") == Ids{256});
  CHECK(tok.encode("abcab") == Ids{258, 256});

  Spec other = spec;
  other.merges = {{"a", "b"}, {"b", "c"}, {"a", "bc"}};  // a+b first: "ab"+"c", and (ab, c) is no rule
  CHECK(load(other).encode("abc") == Ids{256, 'c'});
}

TEST_CASE("bpe merges the leftmost pair among equal ranks", "[tokenizer][bpe]") {
  Spec spec;
  spec.extra_tokens = {"aa"};
  spec.merges = {{"a", "a"}};
  const BpeTokenizer tok = load(spec);
  CHECK(tok.encode("aaa") == Ids{256, 'a'});
  CHECK(tok.encode("aaaa") == Ids{256, 256});
  // Long words take the heap path: the same rule must hold there.
  const Ids long_word = tok.encode(std::string(101, 'a'));
  REQUIRE(long_word.size() == 51);
  CHECK(std::count(long_word.begin(), long_word.end(), 256) == 50);
  CHECK(long_word.back() == 'a');
}

TEST_CASE("bpe reads merges written as \"left right\" strings", "[tokenizer][bpe]") {
  Spec spec;
  spec.extra_tokens = {"Ġw", "Ġwo"};
  spec.merges = {{"Ġ", "w"}, {"Ġw", "o"}};
  spec.merges_as_strings = true;
  const BpeTokenizer tok = load(spec);
  CHECK(tok.encode(" wo") == Ids{257});
  CHECK(tok.decode(Ids{257}) == " wo");
}

TEST_CASE("bpe honours ignore_merges: a piece in the vocabulary is taken whole", "[tokenizer][bpe]") {
  Spec spec;
  spec.extra_tokens = {"ab", "abc"};  // "abc" is reachable by no merge
  spec.merges = {{"a", "b"}};
  CHECK(load(spec).encode("abc") == Ids{256, 'c'});
  spec.ignore_merges = "true";
  CHECK(load(spec).encode("abc") == Ids{257});
}

TEST_CASE("added tokens: longest match, lstrip, rstrip, single_word", "[tokenizer][bpe]") {
  Spec spec;
  spec.added_tokens =
      R"([{"id":300,"content":"<x>","special":true},{"id":301,"content":"<x>>","special":false},)"
      R"({"id":302,"content":"[L]","lstrip":true},{"id":303,"content":"[R]","rstrip":true},)"
      R"({"id":304,"content":"tok","single_word":true}])";
  const BpeTokenizer tok = load(spec);
  CHECK(tok.vocab_size() == 305);
  CHECK(tok.encode("a<x>>b") == Ids{'a', 301, 'b'});
  CHECK(tok.encode("a<x>b") == Ids{'a', 300, 'b'});
  CHECK(tok.encode("a  [L]b") == Ids{'a', 302, 'b'});
  CHECK(tok.encode("a[R]  b") == Ids{'a', 303, 'b'});
  CHECK(tok.encode("a tok b") == Ids{'a', ' ', 304, ' ', 'b'});  // byte ids are byte values here
  CHECK(tok.encode("atok") == Ids{'a', 't', 'o', 'k'});
  CHECK(tok.decode(Ids{'a', 300, 301}) == "a<x><x>>");
  CHECK(tok.decode(Ids{'a', 300, 301}, {.skip_special_tokens = true}) == "a<x>>");
  CHECK(tok.is_special(300));
  CHECK_FALSE(tok.is_special(301));
}

TEST_CASE("loading refuses what it does not implement, naming the file and the part", "[tokenizer][bpe]") {
  Spec missing_merge;
  missing_merge.merges = {{"a", "zz"}};
  CHECK_THROWS_WITH(load(missing_merge), Catch::StartsWith("test.json: merge 0") && Catch::Contains("'zz' is not in the vocabulary"));

  Spec missing_join;
  missing_join.merges = {{"a", "b"}};
  CHECK_THROWS_WITH(load(missing_join), Catch::Contains("'ab' is not in the vocabulary"));

  Spec nfkc;
  nfkc.normalizer = R"({"type":"NFKC"})";
  CHECK_THROWS_WITH(load(nfkc), Catch::Contains("normalizer: type 'NFKC' is not supported"));

  Spec gpt2;
  gpt2.pre_tokenizer = R"({"type":"ByteLevel","add_prefix_space":false,"use_regex":true})";
  CHECK_THROWS_WITH(load(gpt2), Catch::StartsWith("test.json: pre_tokenizer"));

  Spec other_pattern;
  other_pattern.pre_tokenizer = qwen2_pre_tokenizer;
  other_pattern.pre_tokenizer.replace(other_pattern.pre_tokenizer.find("\\\\p{N}|"), 7, "\\\\p{N}{1,3}|");
  CHECK_THROWS_WITH(load(other_pattern), Catch::Contains("not the Qwen2 pattern"));

  Spec no_byte;
  no_byte.drop_byte = true;
  CHECK_THROWS_WITH(load(no_byte), Catch::Contains("byte 0") && Catch::Contains("not a byte-level BPE vocabulary"));

  Spec fallback;
  fallback.byte_fallback = "true";
  CHECK_THROWS_WITH(load(fallback), Catch::Contains("byte_fallback is not supported"));

  Spec duplicate;
  duplicate.extra_tokens = {"x"};  // "x" is already byte 0x78
  CHECK_THROWS_WITH(load(duplicate), Catch::Contains("duplicate key 'x'"));

  std::string wordpiece = make_tokenizer_json(Spec{});
  wordpiece.replace(wordpiece.find(R"("type":"BPE")"), 12, R"("type":"WordPiece")");
  CHECK_THROWS_WITH(BpeTokenizer::from_json(wordpiece, "wp.json"), Catch::Contains("model: type 'WordPiece' is not supported"));
}

TEST_CASE("loading refuses malformed JSON with a line and column", "[tokenizer][bpe]") {
  const std::string good = make_tokenizer_json(Spec{});
  CHECK_NOTHROW(BpeTokenizer::from_json(good, "t.json"));
  CHECK_THROWS_AS(BpeTokenizer::from_json(good.substr(0, good.size() / 2), "t.json"), tokenizer_error);
  CHECK_THROWS_WITH(BpeTokenizer::from_json("{\"model\": {\"vocab\": {\"a\": 1,}}}", "t.json"),
                    Catch::StartsWith("t.json: line 1, column"));
  CHECK_THROWS_WITH(BpeTokenizer::from_json(good + "x", "t.json"), Catch::Contains("unexpected bytes after"));
  CHECK_THROWS_WITH(BpeTokenizer::from_json("{\"added_tokens\": [{\"id\": 1.5, \"content\": \"a\"}]}", "t.json"),
                    Catch::Contains("expected an integer"));
  CHECK_THROWS_WITH(BpeTokenizer::from_json("{\"a\": \"\\ud800\"}", "t.json"), Catch::Contains("surrogate"));
  CHECK_THROWS_WITH(BpeTokenizer::from_json("{\"a\": \"\xff\"}", "t.json"), Catch::Contains("invalid UTF-8"));
  CHECK_THROWS_WITH(BpeTokenizer::from_json(std::string(200, '[') + std::string(200, ']'), "t.json"),
                    Catch::Contains("expected an object"));
  CHECK_THROWS_WITH(BpeTokenizer::from_json("{\"x\":" + std::string(300, '[') + std::string(300, ']') + "}", "t.json"),
                    Catch::Contains("nesting deeper"));
  CHECK_THROWS_WITH(BpeTokenizer::from_file("/nonexistent/tokenizer.json"),
                    Catch::StartsWith("/nonexistent/tokenizer.json: cannot read"));
}

TEST_CASE("the rescan and heap merge loops agree on random rules and words", "[tokenizer][bpe]") {
  using izwi::tokenizer::detail::MergeTable;
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 50; ++trial) {
    // Random rules over a 6-symbol alphabet; merged ids are fresh.
    MergeTable rules;
    rules.reserve(64);
    TokenId next_id = 6;
    std::vector<TokenId> known = {0, 1, 2, 3, 4, 5};
    for (std::uint32_t rank = 0; rank < 40; ++rank) {
      const TokenId l = known[rng() % known.size()], r = known[rng() % known.size()];
      rules.insert(l, r, {rank, next_id});
      known.push_back(next_id++);
    }
    for (int w = 0; w < 20; ++w) {
      std::vector<TokenId> word(1 + rng() % 24);
      for (auto& s : word) s = static_cast<TokenId>(rng() % 6);
      std::vector<TokenId> a = word, b = word;
      izwi::tokenizer::detail::bpe_merge_rescan(rules, a);
      izwi::tokenizer::detail::bpe_merge_heap(rules, b);
      REQUIRE(a == b);
    }
  }
}

TEST_CASE("loading a damaged tokenizer.json either succeeds or throws tokenizer_error, never crashes",
          "[tokenizer][bpe]") {
  Spec spec;
  spec.extra_tokens = {"ab", "abc"};
  spec.merges = {{"a", "b"}, {"ab", "c"}};
  spec.added_tokens = R"([{"id":300,"content":"<x>","special":true}])";
  const std::string good = make_tokenizer_json(spec);
  std::mt19937 rng(99);
  int loaded = 0, refused = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::string damaged = good;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = rng() % damaged.size();
      switch (rng() % 3) {
        case 0: damaged[at] = static_cast<char>(rng() % 256); break;       // overwrite a byte
        case 1: damaged.erase(at, 1 + rng() % 8); break;                  // drop a few bytes
        default: damaged.insert(at, 1, "{}[]\",:0\\u"[rng() % 11]); break;  // insert syntax
      }
    }
    try {
      const BpeTokenizer tok = BpeTokenizer::from_json(damaged, "damaged.json");
      ++loaded;
      (void)tok.decode(tok.encode("abc <x> abcab"));
    } catch (const tokenizer_error&) {
      ++refused;
    }
  }
  CHECK(loaded + refused == 400);
  CHECK(refused > 300);  // most damage is caught
}
