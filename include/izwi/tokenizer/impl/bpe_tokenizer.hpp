#pragma once
// Bodies of izwi/tokenizer/bpe_tokenizer.hpp.

#include <izwi/tokenizer/bpe_tokenizer.hpp>
#include <izwi/tokenizer/detail/byte_level.hpp>
#include <izwi/tokenizer/detail/json_cursor.hpp>
#include <izwi/tokenizer/detail/json_value.hpp>
#include <izwi/tokenizer/detail/qwen2_split.hpp>
#include <izwi/tokenizer/detail/unicode.hpp>
#include <izwi/tokenizer/detail/utf8.hpp>

#include <algorithm>
#include <fstream>
#include <limits>
#include <system_error>

namespace izwi::tokenizer {

namespace detail {

/// Checks the parts of tokenizer.json that say how text is prepared, refusing
/// what this tokenizer does not implement rather than encoding differently.
struct PipelineConfig {
  bool nfc = false;

  static PipelineConfig check(const JsonCursor& in, const JsonValue* normalizer, const JsonValue* pre_tokenizer,
                              const JsonValue* decoder, const JsonValue* post_processor) {
    PipelineConfig config;
    if (normalizer && !normalizer->is_null()) {
      const JsonValue* n = normalizer;
      if (n->type() == "Sequence") {
        const JsonValue* list = n->find("normalizers");
        if (!list || list->elements.size() != 1)
          in.fail_semantic("normalizer: only NFC (alone or in a one-element Sequence) is supported");
        n = &list->elements[0];
      }
      if (n->type() != "NFC")
        in.fail_semantic("normalizer: type '" + std::string(n->type()) + "' is not supported (NFC or none)");
      config.nfc = true;
    }

    if (!pre_tokenizer || pre_tokenizer->type() != "Sequence")
      in.fail_semantic("pre_tokenizer: expected a Sequence of Split (the Qwen2 pattern) and ByteLevel");
    const JsonValue* steps = pre_tokenizer->find("pretokenizers");
    if (!steps || steps->elements.size() != 2)
      in.fail_semantic("pre_tokenizer: expected a Sequence of Split (the Qwen2 pattern) and ByteLevel");
    const JsonValue& split = steps->elements[0];
    const JsonValue* pattern = split.find("pattern");
    const JsonValue* regex = pattern ? pattern->find("Regex") : nullptr;
    if (split.type() != "Split" || !regex || !regex->is_string(qwen2_split_pattern))
      in.fail_semantic("pre_tokenizer: the Split step's pattern is not the Qwen2 pattern; only that pattern is implemented");
    const JsonValue* behavior = split.find("behavior");
    if (!behavior || !behavior->is_string("Isolated") || split.flag("invert", false))
      in.fail_semantic("pre_tokenizer: the Split step must have behavior Isolated and invert false");
    const JsonValue& byte_level = steps->elements[1];
    if (byte_level.type() != "ByteLevel" || byte_level.flag("use_regex", true) || byte_level.flag("add_prefix_space", false))
      in.fail_semantic("pre_tokenizer: the second step must be ByteLevel with use_regex false and add_prefix_space false");

    if (decoder && !decoder->is_null() && decoder->type() != "ByteLevel")
      in.fail_semantic("decoder: type '" + std::string(decoder->type()) + "' is not supported (ByteLevel or none)");
    if (post_processor && !post_processor->is_null() && post_processor->type() != "ByteLevel")
      in.fail_semantic("post_processor: type '" + std::string(post_processor->type()) +
                       "' is not supported (ByteLevel or none): it would add tokens this tokenizer does not");
    return config;
  }
};

inline std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

/// Whether cp counts as a word character for single_word added tokens (\w).
inline bool is_word_code_point(char32_t cp) noexcept {
  const CharClass k = char_class(cp);
  return k == CharClass::letter || k == CharClass::number || cp == U'_';
}

}  // namespace detail

inline BpeTokenizer BpeTokenizer::from_file(const std::filesystem::path& tokenizer_json) {
  const std::string name = tokenizer_json.string();
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(tokenizer_json, ec);
  if (ec) throw tokenizer_error(name, "cannot read: " + ec.message());
  std::ifstream in(tokenizer_json, std::ios::binary);
  if (!in) throw tokenizer_error(name, "cannot open");
  std::string text(static_cast<std::size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(size));
  if (static_cast<std::uintmax_t>(in.gcount()) != size) throw tokenizer_error(name, "short read");
  return from_json(text, name);
}

inline BpeTokenizer BpeTokenizer::from_json(std::string_view json_text, std::string source_name) {
  detail::JsonCursor in(json_text, source_name);
  BpeTokenizer tok;
  tok.source_ = std::move(source_name);

  detail::JsonValue normalizer, pre_tokenizer, decoder, post_processor;
  bool have_model = false, have_pre_tokenizer = false;
  std::vector<std::pair<std::string, TokenId>> vocab;
  std::vector<std::pair<std::string, std::string>> merge_parts;

  std::string key, model_key, str;
  in.begin_object();
  while (in.next_member(key)) {
    if (key == "normalizer") {
      normalizer = detail::read_json_value(in);
    } else if (key == "pre_tokenizer") {
      pre_tokenizer = detail::read_json_value(in);
      have_pre_tokenizer = true;
    } else if (key == "decoder") {
      decoder = detail::read_json_value(in);
    } else if (key == "post_processor") {
      post_processor = detail::read_json_value(in);
    } else if (key == "added_tokens") {
      in.begin_array();
      while (in.next_element()) {
        AddedToken t;
        bool have_id = false, have_content = false;
        in.begin_object();
        while (in.next_member(model_key)) {
          if (model_key == "id") {
            const std::int64_t id = in.read_integer();
            if (id < 0 || id > std::numeric_limits<TokenId>::max()) in.fail("added token id out of range");
            t.id = static_cast<TokenId>(id);
            have_id = true;
          } else if (model_key == "content") {
            in.read_string_into(t.content);
            have_content = true;
          } else if (model_key == "special") t.special = in.read_bool();
          else if (model_key == "lstrip") t.lstrip = in.read_bool();
          else if (model_key == "rstrip") t.rstrip = in.read_bool();
          else if (model_key == "single_word") t.single_word = in.read_bool();
          else if (model_key == "normalized") t.normalized = in.read_bool();
          else in.skip_value();
        }
        if (!have_id || !have_content || t.content.empty()) in.fail("an added token needs an id and a non-empty content");
        tok.added_.push_back(std::move(t));
      }
    } else if (key == "model") {
      have_model = true;
      in.begin_object();
      while (in.next_member(model_key)) {
        if (model_key == "type") {
          in.read_string_into(str);
          if (str != "BPE") in.fail_semantic("model: type '" + str + "' is not supported (BPE)");
        } else if (model_key == "vocab") {
          in.begin_object();
          std::string token;
          while (in.next_member(token)) {
            const std::int64_t id = in.read_integer();
            if (id < 0 || id > std::numeric_limits<TokenId>::max()) in.fail("vocabulary id out of range");
            vocab.emplace_back(token, static_cast<TokenId>(id));
          }
        } else if (model_key == "merges") {
          in.begin_array();
          while (in.next_element()) {
            if (in.peek() == detail::JsonCursor::Kind::string) {
              // Older files: "left right" in one string.
              in.read_string_into(str);
              const std::size_t space = str.find(' ');
              if (space == std::string::npos || str.find(' ', space + 1) != std::string::npos)
                in.fail("a merge must be \"left right\" with exactly one space");
              merge_parts.emplace_back(str.substr(0, space), str.substr(space + 1));
            } else {
              in.begin_array();
              std::string parts[2];
              int count = 0;
              while (in.next_element()) {
                if (count == 2) in.fail("a merge must have exactly two parts");
                in.read_string_into(parts[count++]);
              }
              if (count != 2) in.fail("a merge must have exactly two parts");
              merge_parts.emplace_back(std::move(parts[0]), std::move(parts[1]));
            }
          }
        } else if (model_key == "byte_fallback") {
          if (!in.try_null() && in.read_bool()) in.fail_semantic("model: byte_fallback is not supported");
        } else if (model_key == "ignore_merges") {
          if (!in.try_null()) tok.ignore_merges_ = in.read_bool();
        } else if (model_key == "continuing_subword_prefix" || model_key == "end_of_word_suffix") {
          if (!in.try_null()) {
            in.read_string_into(str);
            if (!str.empty()) in.fail_semantic("model: " + model_key + " is not supported");
          }
        } else if (model_key == "dropout") {
          if (!in.try_null()) {
            const std::string p = in.read_number_text();
            if (std::stod(p) != 0.0) in.fail_semantic("model: dropout is not supported (it makes encoding random)");
          }
        } else {
          in.skip_value();  // unk_token, fuse_unk: without byte fallback every byte has a symbol
        }
      }
    } else {
      in.skip_value();  // version, truncation, padding
    }
  }
  in.expect_end();
  if (!have_model) in.fail_semantic("no \"model\" section");
  if (!have_pre_tokenizer) in.fail_semantic("no \"pre_tokenizer\" section");
  tok.nfc_ = detail::PipelineConfig::check(in, &normalizer, &pre_tokenizer, &decoder, &post_processor).nfc;

  // --- tables -----------------------------------------------------------------
  const auto& alphabet = detail::byte_level_alphabet();
  TokenId max_id = -1;
  for (const auto& [s, id] : vocab) max_id = std::max(max_id, id);
  for (const auto& t : tok.added_) max_id = std::max(max_id, t.id);
  // Ids index a table: refuse a file that would make it absurdly large.
  constexpr TokenId max_supported_id = (1 << 24) - 1;
  if (max_id > max_supported_id)
    in.fail_semantic("token id " + std::to_string(max_id) + " is larger than " + std::to_string(max_supported_id));
  tok.tokens_.resize(static_cast<std::size_t>(max_id) + 1);
  tok.vocab_index_.reserve(vocab.size());
  const auto spelling_of = [&tok](TokenId id) {
    return std::string_view(tok.tokens_[static_cast<std::size_t>(id)].spelling);
  };
  for (auto& [spelling, id] : vocab) {
    TokenEntry& e = tok.tokens_[static_cast<std::size_t>(id)];
    if (e.flags & TokenEntry::present)
      in.fail_semantic("vocabulary: id " + std::to_string(id) + " is given to both " + detail::quoted(e.spelling) +
                       " and " + detail::quoted(spelling));
    // Decoded bytes: each code point of the spelling is one byte of the
    // alphabet. A spelling outside the alphabet decodes to itself (as in HF).
    std::string bytes;
    bool in_alphabet = true;
    for (std::size_t pos = 0; pos < spelling.size();) {
      const int b = alphabet.byte_of(detail::decode_utf8_unchecked(spelling, pos));
      if (b < 0) {
        in_alphabet = false;
        break;
      }
      bytes.push_back(static_cast<char>(b));
    }
    e.bytes = in_alphabet ? std::move(bytes) : spelling;
    e.flags = TokenEntry::present;
    e.spelling = std::move(spelling);
    if (!tok.vocab_index_.insert(e.spelling, id, spelling_of))
      in.fail_semantic("vocabulary: token " + detail::quoted(e.spelling) + " appears twice");
  }
  for (std::size_t i = 0; i < tok.added_.size(); ++i) {
    const AddedToken& t = tok.added_[i];
    TokenEntry& e = tok.tokens_[static_cast<std::size_t>(t.id)];
    if (!(e.flags & TokenEntry::present)) e.spelling = t.content;
    e.bytes = t.content;  // added tokens decode to their text, not through the byte alphabet
    e.flags |= TokenEntry::present | TokenEntry::added | (t.special ? TokenEntry::special : 0);
    tok.added_by_first_byte_[static_cast<unsigned char>(t.content[0])].push_back(static_cast<std::uint32_t>(i));
  }
  for (auto& list : tok.added_by_first_byte_)
    std::stable_sort(list.begin(), list.end(), [&](std::uint32_t a, std::uint32_t b) {
      return tok.added_[a].content.size() > tok.added_[b].content.size();
    });

  for (int b = 0; b < 256; ++b) {
    const TokenId id = tok.find_vocab(alphabet.utf8_of_byte[b]);
    if (id < 0)
      in.fail_semantic("vocabulary: the byte-level symbol for byte " + std::to_string(b) + " (" +
                       detail::quoted(alphabet.utf8_of_byte[b]) + ") is missing; not a byte-level BPE vocabulary");
    tok.byte_token_[b] = id;
  }

  tok.merges_.reserve(merge_parts.size());
  tok.merge_rules_.reserve(merge_parts.size());
  std::string joined;
  for (std::size_t rank = 0; rank < merge_parts.size(); ++rank) {
    const std::string& left = merge_parts[rank].first;  // not a structured binding: clang 14 cannot capture those
    const std::string& right = merge_parts[rank].second;
    auto id_of = [&](const std::string& s) {
      const TokenId id = tok.find_vocab(s);
      if (id < 0)
        in.fail_semantic("merge " + std::to_string(rank) + " (" + detail::quoted(left) + " " + detail::quoted(right) +
                         "): " + detail::quoted(s) + " is not in the vocabulary");
      return id;
    };
    const TokenId left_id = id_of(left);
    const TokenId right_id = id_of(right);
    joined.assign(left).append(right);
    tok.merges_.insert(left_id, right_id, {static_cast<std::uint32_t>(rank), id_of(joined)});
    tok.merge_rules_.emplace_back(left_id, right_id);
  }
  return tok;
}

inline int BpeTokenizer::find_added(std::string_view text, std::size_t from, bool special_too, std::size_t& begin,
                                    std::size_t& end) const {
  for (std::size_t pos = from; pos < text.size(); ++pos) {
    const auto& candidates = added_by_first_byte_[static_cast<unsigned char>(text[pos])];
    for (const std::uint32_t index : candidates) {  // longest first
      const AddedToken& t = added_[index];
      if (t.special && !special_too) continue;
      if (text.compare(pos, t.content.size(), t.content) != 0) continue;
      std::size_t b = pos, e = pos + t.content.size();
      if (t.single_word) {
        // Not glued to a word character on either side.
        bool glued = false;
        if (b > 0) {
          std::size_t p = b - 1;
          while (p > 0 && (static_cast<unsigned char>(text[p]) & 0xC0) == 0x80) --p;
          std::size_t q = p;
          glued = detail::is_word_code_point(detail::decode_utf8_unchecked(text, q));
        }
        if (!glued && e < text.size()) {
          std::size_t q = e;
          glued = detail::is_word_code_point(detail::decode_utf8_unchecked(text, q));
        }
        if (glued) continue;
      }
      // lstrip/rstrip: the token also takes the whitespace around it.
      if (t.lstrip)
        while (b > from && (text[b - 1] == ' ' || text[b - 1] == '\t' || text[b - 1] == '\n' || text[b - 1] == '\r')) --b;
      if (t.rstrip)
        while (e < text.size() && (text[e] == ' ' || text[e] == '\t' || text[e] == '\n' || text[e] == '\r')) ++e;
      begin = b;
      end = e;
      return static_cast<int>(index);
    }
  }
  return -1;
}

inline void BpeTokenizer::encode_piece(std::string_view piece, std::vector<TokenId>& out,
                                       std::vector<TokenId>& symbols) const {
  if (ignore_merges_) {
    std::string spelled;
    const auto& alphabet = detail::byte_level_alphabet();
    for (const char c : piece) spelled += alphabet.utf8_of_byte[static_cast<unsigned char>(c)];
    if (const TokenId id = find_vocab(spelled); id >= 0) {
      out.push_back(id);
      return;
    }
  }
  symbols.clear();
  for (const char c : piece) symbols.push_back(byte_token_[static_cast<unsigned char>(c)]);
  detail::bpe_merge(merges_, symbols);
  out.insert(out.end(), symbols.begin(), symbols.end());
}

inline void BpeTokenizer::encode_section(std::string_view section, std::vector<TokenId>& out,
                                         std::string& normalized, detail::SplitScratch& scratch,
                                         std::vector<TokenId>& symbols) const {
  if (section.empty()) return;
  std::string_view text = section;
  if (nfc_) {
    normalized.clear();
    detail::append_nfc(normalized, section);
    text = normalized;
  }
  detail::qwen2_split(text, scratch, [&](std::string_view piece) { encode_piece(piece, out, symbols); });
}

inline void BpeTokenizer::encode_into(std::string_view text, std::vector<TokenId>& out,
                                      const EncodeOptions& options) const {
  if (const std::size_t bad = detail::utf8_first_invalid(text); bad != std::string_view::npos)
    throw izwi::invalid_argument("text", "text to encode is not valid UTF-8 (byte " + std::to_string(bad) + ")");
  if (text.size() >= std::numeric_limits<std::uint32_t>::max())
    throw izwi::invalid_argument("text", "text to encode is 4 GiB or longer");
  std::string normalized;
  detail::SplitScratch scratch;
  std::vector<TokenId> symbols;
  std::size_t pos = 0;
  if (!added_.empty()) {
    std::size_t begin = 0, end = 0;
    for (;;) {
      const int index = find_added(text, pos, options.parse_special_tokens, begin, end);
      if (index < 0) break;
      encode_section(text.substr(pos, begin - pos), out, normalized, scratch, symbols);
      out.push_back(added_[static_cast<std::size_t>(index)].id);
      pos = end;
    }
  }
  encode_section(text.substr(pos), out, normalized, scratch, symbols);
}

inline std::vector<TokenId> BpeTokenizer::encode(std::string_view text, const EncodeOptions& options) const {
  std::vector<TokenId> ids;
  ids.reserve(text.size() / 3 + 4);
  encode_into(text, ids, options);
  return ids;
}

inline std::string BpeTokenizer::decode(std::span<const TokenId> ids, const DecodeOptions& options) const {
  std::string bytes;
  for (const TokenId id : ids) {
    if (id < 0 || static_cast<std::size_t>(id) >= tokens_.size()) continue;
    const TokenEntry& e = tokens_[static_cast<std::size_t>(id)];
    if (options.skip_special_tokens && (e.flags & TokenEntry::special)) continue;
    bytes += e.bytes;
  }
  if (detail::utf8_first_invalid(bytes) == std::string_view::npos) return bytes;
  std::string text;
  text.reserve(bytes.size() + 8);
  detail::append_utf8_lossy(text, bytes);
  return text;
}

inline std::optional<TokenId> BpeTokenizer::token_to_id(std::string_view token) const {
  if (const TokenId id = find_vocab(token); id >= 0) return id;
  for (const AddedToken& t : added_)
    if (t.content == token) return t.id;
  return std::nullopt;
}

inline std::string_view BpeTokenizer::id_to_token(TokenId id) const noexcept {
  if (id < 0 || static_cast<std::size_t>(id) >= tokens_.size()) return {};
  return tokens_[static_cast<std::size_t>(id)].spelling;
}

inline std::string_view BpeTokenizer::token_bytes(TokenId id) const noexcept {
  if (id < 0 || static_cast<std::size_t>(id) >= tokens_.size()) return {};
  return tokens_[static_cast<std::size_t>(id)].bytes;
}

inline bool BpeTokenizer::is_added(TokenId id) const noexcept {
  return id >= 0 && static_cast<std::size_t>(id) < tokens_.size() &&
         (tokens_[static_cast<std::size_t>(id)].flags & TokenEntry::added);
}

inline bool BpeTokenizer::is_special(TokenId id) const noexcept {
  return id >= 0 && static_cast<std::size_t>(id) < tokens_.size() &&
         (tokens_[static_cast<std::size_t>(id)].flags & TokenEntry::special);
}

}  // namespace izwi::tokenizer
