#pragma once
// Byte-level BPE tokenizer loaded from a Hugging Face tokenizer.json, as the
// Qwen2, Qwen2.5 and Qwen3 families publish it.
//
// Encoding follows Hugging Face tokenizers step by step:
//   1. added tokens (<|im_start|>, <|endoftext|>, <think>, ...) are found first,
//      leftmost-longest, in the raw text; each becomes its id as is;
//   2. the text between them is normalized (NFC, through ICU);
//   3. split by the Qwen2 pre-tokenizer pattern (detail/qwen2_split.hpp);
//   4. each piece's UTF-8 bytes become GPT-2 byte-level symbols and are merged
//      by rank (detail/bpe_merge.hpp).
// Decoding maps ids back to bytes (added tokens to their text) and replaces
// invalid UTF-8 with U+FFFD; IncrementalDetokenizer (detokenizer.hpp) does the
// same a token at a time for streaming.
//
// Supported tokenizer.json: model BPE (no byte fallback, no subword
// prefix/suffix; ignore_merges honoured); normalizer NFC or none; pre-tokenizer
// Sequence[Split(Qwen2 pattern, Isolated), ByteLevel(use_regex=false)];
// decoder ByteLevel or none; post-processor ByteLevel or none. Anything else is
// refused with a tokenizer_error naming the file and the part.
//
// Thread safety: a loaded tokenizer is immutable; encode/decode may run on
// many threads at once. Link izwi::tokenizer (ICU's common library; Boost.JSON
// comes with izwi::izwi).

#include <izwi/core/ids.hpp>
#include <izwi/tokenizer/detail/bpe_merge.hpp>
#include <izwi/tokenizer/detail/qwen2_split.hpp>
#include <izwi/tokenizer/detail/token_index.hpp>
#include <izwi/tokenizer/tokenizer_error.hpp>

#include <boost/json/fwd.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace izwi::tokenizer {

/// An entry of tokenizer.json's "added_tokens".
struct AddedToken {
  TokenId id = -1;
  std::string content;
  bool special = false;      ///< dropped by decode when skip_special_tokens is set
  bool lstrip = false;       ///< the match also takes the whitespace before it
  bool rstrip = false;       ///< the match also takes the whitespace after it
  bool single_word = false;  ///< matches only between word boundaries
  bool normalized = false;   ///< recorded; matching is always on the raw text (see docs/tokenizer.md)
};

struct EncodeOptions {
  /// Recognise special added tokens in the text. false encodes
  /// "<|im_start|>" and the other tokens marked special as ordinary text, as
  /// Hugging Face's split_special_tokens=True does (added tokens not marked
  /// special, such as <think>, are still recognised, also as there): use it
  /// for untrusted user content that must not inject control tokens.
  bool parse_special_tokens = true;
};

struct DecodeOptions {
  /// Leave out added tokens marked "special" (<|im_start|>, <|endoftext|>, ...).
  bool skip_special_tokens = false;
};

class BpeTokenizer {
 public:
  /// Loads tokenizer.json. Throws tokenizer_error (file unreadable, malformed
  /// or unsupported), naming the path.
  static BpeTokenizer from_file(const std::filesystem::path& tokenizer_json);

  /// Loads from the text of a tokenizer.json; `source_name` names it in errors.
  static BpeTokenizer from_json(std::string_view json_text, std::string source_name = "tokenizer.json");

  /// Token ids of UTF-8 `text`. Throws izwi::invalid_argument("text") when
  /// text is not valid UTF-8.
  std::vector<TokenId> encode(std::string_view text, const EncodeOptions& options = {}) const;

  /// As encode(), appending to `out`.
  void encode_into(std::string_view text, std::vector<TokenId>& out, const EncodeOptions& options = {}) const;

  /// Text of `ids`. Ids outside the vocabulary are skipped (a model's
  /// embedding is often larger than its vocabulary); invalid UTF-8 from a
  /// partial sequence becomes U+FFFD.
  std::string decode(std::span<const TokenId> ids, const DecodeOptions& options = {}) const;

  /// The id of a vocabulary entry (byte-level spelling, e.g. "Ġworld") or of
  /// an added token's content.
  std::optional<TokenId> token_to_id(std::string_view token) const;

  /// The vocabulary spelling of `id` (byte-level for BPE entries, the content
  /// for added tokens); empty for an id with no entry.
  std::string_view id_to_token(TokenId id) const noexcept;

  /// The bytes `id` stands for when decoded (possibly part of a UTF-8
  /// sequence); empty for an id with no entry.
  std::string_view token_bytes(TokenId id) const noexcept;

  bool is_added(TokenId id) const noexcept;
  bool is_special(TokenId id) const noexcept;

  /// One past the largest id of the vocabulary and the added tokens.
  std::size_t vocab_size() const noexcept { return tokens_.size(); }
  std::span<const AddedToken> added_tokens() const noexcept { return added_; }
  std::size_t merge_count() const noexcept { return merge_rules_.size(); }

  /// The merge rule of rank `rank` (0 is tried first) as the ids of its two
  /// parts: id_to_token of each gives tokenizer.json's "left right" spelling
  /// (what a GGUF writer stores as tokenizer.ggml.merges). rank < merge_count().
  std::pair<TokenId, TokenId> merge_rule(std::size_t rank) const { return merge_rules_.at(rank); }

  /// Whether the text is NFC-normalized before splitting (tokenizer.json's normalizer).
  bool normalizes_nfc() const noexcept { return nfc_; }

 private:
  struct TokenEntry {
    std::string spelling;  ///< as in the vocabulary
    std::string bytes;     ///< what it decodes to
    enum Flags : std::uint8_t { present = 1, added = 2, special = 4 };
    std::uint8_t flags = 0;
  };

  BpeTokenizer() = default;
  [[noreturn]] void fail(const std::string& problem) const { throw tokenizer_error(source_, problem); }
  // Loading, in order (from_json): the vocabulary, then the added tokens, the
  // byte symbols and the merges, which look their parts up in the first two.
  void install_vocabulary(const boost::json::object& vocab);
  void install_added_tokens();
  void install_byte_tokens();
  void install_merges(const boost::json::array& merges);
  void encode_section(std::string_view section, std::vector<TokenId>& out, std::string& normalized,
                      detail::SplitScratch& scratch, std::vector<TokenId>& symbols) const;
  void encode_piece(std::string_view piece, std::vector<TokenId>& out, std::vector<TokenId>& symbols) const;
  /// Finds the leftmost-longest added token in text[from..]; returns its index or -1, with its span.
  int find_added(std::string_view text, std::size_t from, bool special_too, std::size_t& begin,
                 std::size_t& end) const;

  std::string source_;
  std::vector<TokenEntry> tokens_;
  detail::TokenIndex vocab_index_;  ///< vocabulary spelling -> id (added tokens: see token_to_id)
  /// The vocabulary id spelled `spelling`, or -1.
  TokenId find_vocab(std::string_view spelling) const noexcept {
    return vocab_index_.find(spelling, [this](TokenId id) { return std::string_view(tokens_[static_cast<std::size_t>(id)].spelling); });
  }
  std::vector<AddedToken> added_;
  std::array<std::vector<std::uint32_t>, 256> added_by_first_byte_;  ///< indices into added_, longest first
  detail::MergeTable merges_;
  std::vector<std::pair<TokenId, TokenId>> merge_rules_;  ///< by rank, as in the file
  std::array<TokenId, 256> byte_token_{};  ///< id of each single byte's symbol
  bool nfc_ = false;
  bool ignore_merges_ = false;
};

}  // namespace izwi::tokenizer

#include <izwi/tokenizer/impl/bpe_tokenizer.hpp>
