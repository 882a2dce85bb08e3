#pragma once
// Bodies of izwi/tokenizer/bpe_tokenizer.hpp.

#include <izwi/io/json.hpp>
#include <izwi/tokenizer/bpe_tokenizer.hpp>
#include <izwi/tokenizer/detail/byte_level.hpp>
#include <izwi/tokenizer/detail/qwen2_split.hpp>
#include <izwi/tokenizer/detail/unicode.hpp>
#include <izwi/tokenizer/detail/utf8.hpp>

#include <boost/json/monotonic_resource.hpp>

#include <algorithm>
#include <fstream>
#include <limits>
#include <system_error>

namespace izwi::tokenizer {

namespace detail {

using io::JsonArray;
using io::JsonObject;
using io::JsonValue;

[[noreturn]] inline void refuse(const std::string& file, const std::string& problem) {
  throw tokenizer_error(file, problem);
}

/// The "type" member of an object, or "".
inline std::string_view json_type(const JsonValue* value) noexcept {
  const JsonValue* type = value ? io::json_find(*value, "type") : nullptr;
  return type ? io::json_string(*type).value_or("") : std::string_view();
}

/// A boolean member, `fallback` when absent, null or not a boolean.
inline bool json_flag(const JsonValue& value, std::string_view key, bool fallback) noexcept {
  const JsonValue* v = io::json_find(value, key);
  return v && v->is_bool() ? v->get_bool() : fallback;
}

/// Checks the parts of tokenizer.json that say how text is prepared, refusing
/// what this tokenizer does not implement rather than encoding differently.
struct PipelineConfig {
  bool nfc = false;

  static PipelineConfig check(const std::string& file, const JsonValue* normalizer, const JsonValue* pre_tokenizer,
                              const JsonValue* decoder, const JsonValue* post_processor) {
    PipelineConfig config;
    if (normalizer && !normalizer->is_null()) {
      const JsonValue* n = normalizer;
      if (json_type(n) == "Sequence") {
        const JsonValue* list = io::json_find(*n, "normalizers");
        if (!list || !list->is_array() || list->get_array().size() != 1)
          refuse(file, "normalizer: only NFC (alone or in a one-element Sequence) is supported");
        n = &list->get_array()[0];
      }
      if (json_type(n) != "NFC")
        refuse(file, "normalizer: type '" + std::string(json_type(n)) + "' is not supported (NFC or none)");
      config.nfc = true;
    }
    check_pre_tokenizer(file, pre_tokenizer);
    if (decoder && !decoder->is_null() && json_type(decoder) != "ByteLevel")
      refuse(file, "decoder: type '" + std::string(json_type(decoder)) + "' is not supported (ByteLevel or none)");
    if (post_processor && !post_processor->is_null() && json_type(post_processor) != "ByteLevel")
      refuse(file, "post_processor: type '" + std::string(json_type(post_processor)) +
                       "' is not supported (ByteLevel or none): it would add tokens this tokenizer does not");
    return config;
  }

  static void check_pre_tokenizer(const std::string& file, const JsonValue* pre_tokenizer) {
    const std::string expected = "pre_tokenizer: expected a Sequence of Split (the Qwen2 pattern) and ByteLevel";
    if (!pre_tokenizer || json_type(pre_tokenizer) != "Sequence") refuse(file, expected);
    const JsonValue* steps = io::json_find(*pre_tokenizer, "pretokenizers");
    if (!steps || !steps->is_array() || steps->get_array().size() != 2) refuse(file, expected);
    const JsonValue& split = steps->get_array()[0];
    const JsonValue* pattern = io::json_find(split, "pattern");
    const JsonValue* regex = pattern ? io::json_find(*pattern, "Regex") : nullptr;
    if (json_type(&split) != "Split" || !regex || io::json_string(*regex) != qwen2_split_pattern)
      refuse(file, "pre_tokenizer: the Split step's pattern is not the Qwen2 pattern; only that pattern is implemented");
    const JsonValue* behavior = io::json_find(split, "behavior");
    if (!behavior || io::json_string(*behavior) != "Isolated" || json_flag(split, "invert", false))
      refuse(file, "pre_tokenizer: the Split step must have behavior Isolated and invert false");
    const JsonValue& byte_level = steps->get_array()[1];
    if (json_type(&byte_level) != "ByteLevel" || json_flag(byte_level, "use_regex", true) ||
        json_flag(byte_level, "add_prefix_space", false))
      refuse(file, "pre_tokenizer: the second step must be ByteLevel with use_regex false and add_prefix_space false");
  }
};

inline std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

/// A token id: a non-negative integer that fits a TokenId. `where()` names
/// the value in an error (built only then: the vocabulary has ~150k ids).
template <class Where>
TokenId read_token_id(const std::string& file, const JsonValue& value, const Where& where) {
  const std::optional<std::int64_t> id = io::json_integer(value);
  if (!id) refuse(file, where() + ": expected an integer id, found " + io::json_kind_phrase(value));
  if (*id < 0 || *id > std::numeric_limits<TokenId>::max())
    refuse(file, where() + ": id " + std::to_string(*id) + " out of range");
  return static_cast<TokenId>(*id);
}

inline bool read_flag(const std::string& file, const JsonValue& value, const std::string& where) {
  if (!value.is_bool()) refuse(file, where + ": expected true or false, found " + io::json_kind_phrase(value));
  return value.get_bool();
}

/// tokenizer.json's "added_tokens" (absent or null: none).
inline std::vector<AddedToken> read_added_tokens(const std::string& file, const JsonValue* list) {
  std::vector<AddedToken> added;
  if (list == nullptr || list->is_null()) return added;
  if (!list->is_array()) refuse(file, "added_tokens: expected an array, found " + io::json_kind_phrase(*list));
  for (std::size_t i = 0; i < list->get_array().size(); ++i) {
    const std::string where = "added_tokens[" + std::to_string(i) + "]";
    const JsonObject* entry = list->get_array()[i].if_object();
    if (entry == nullptr) refuse(file, where + ": expected an object");
    AddedToken t;
    bool have_id = false, have_content = false;
    for (const auto& member : *entry) {
      const std::string_view key(member.key().data(), member.key().size());
      const std::string field = where + "." + std::string(key);
      if (key == "id") {
        t.id = read_token_id(file, member.value(), [&] { return field; });
        have_id = true;
      } else if (key == "content") {
        const auto content = io::json_string(member.value());
        if (!content) refuse(file, field + ": expected a string");
        t.content = std::string(*content);
        have_content = true;
      } else if (key == "special") t.special = read_flag(file, member.value(), field);
      else if (key == "lstrip") t.lstrip = read_flag(file, member.value(), field);
      else if (key == "rstrip") t.rstrip = read_flag(file, member.value(), field);
      else if (key == "single_word") t.single_word = read_flag(file, member.value(), field);
      else if (key == "normalized") t.normalized = read_flag(file, member.value(), field);
    }
    if (!have_id || !have_content || t.content.empty()) refuse(file, where + ": an added token needs an id and a non-empty content");
    added.push_back(std::move(t));
  }
  return added;
}

/// tokenizer.json's "model" section: its tables, after refusing the options
/// this tokenizer does not implement.
struct BpeModelSection {
  const JsonObject* vocab = nullptr;   ///< spelling -> id
  const JsonArray* merges = nullptr;   ///< by rank
  bool ignore_merges = false;

  static BpeModelSection read(const std::string& file, const JsonValue& model) {
    if (!model.is_object()) refuse(file, "model: expected an object, found " + io::json_kind_phrase(model));
    static const JsonObject no_vocab;
    static const JsonArray no_merges;
    BpeModelSection section{&no_vocab, &no_merges, false};
    for (const auto& member : model.get_object()) {
      const std::string key(member.key());
      const JsonValue& value = member.value();
      if (key == "type") {
        const std::string_view type = io::json_string(value).value_or("");
        if (type != "BPE") refuse(file, "model: type '" + std::string(type) + "' is not supported (BPE)");
      } else if (key == "vocab") {
        if (!value.is_object()) refuse(file, "model.vocab: expected an object, found " + io::json_kind_phrase(value));
        section.vocab = &value.get_object();
      } else if (key == "merges") {
        if (!value.is_array()) refuse(file, "model.merges: expected an array, found " + io::json_kind_phrase(value));
        section.merges = &value.get_array();
      } else if (value.is_null()) {
        continue;  // every option below means "off" when null
      } else if (key == "byte_fallback") {
        if (read_flag(file, value, "model.byte_fallback")) refuse(file, "model: byte_fallback is not supported");
      } else if (key == "ignore_merges") {
        section.ignore_merges = read_flag(file, value, "model.ignore_merges");
      } else if (key == "continuing_subword_prefix" || key == "end_of_word_suffix") {
        if (io::json_string(value).value_or("x") != "") refuse(file, "model: " + key + " is not supported");
      } else if (key == "dropout") {
        const std::optional<double> p = io::json_number(value);
        if (!p) refuse(file, "model.dropout: expected a number, found " + io::json_kind_phrase(value));
        if (*p != 0.0) refuse(file, "model: dropout is not supported (it makes encoding random)");
      }
      // unk_token, fuse_unk: without byte fallback every byte has a symbol.
    }
    return section;
  }
};

/// A merge rule: "left right" (older files) or ["left", "right"].
inline std::pair<std::string_view, std::string_view> read_merge(const std::string& file, const JsonValue& rule,
                                                                std::size_t rank) {
  const std::string where = "model.merges[" + std::to_string(rank) + "]";
  if (const auto text = io::json_string(rule)) {
    const std::size_t space = text->find(' ');
    if (space == std::string_view::npos || text->find(' ', space + 1) != std::string_view::npos)
      refuse(file, where + ": a merge must be \"left right\" with exactly one space");
    return {text->substr(0, space), text->substr(space + 1)};
  }
  const JsonArray* parts = rule.if_array();
  if (parts == nullptr || parts->size() != 2 || !(*parts)[0].is_string() || !(*parts)[1].is_string())
    refuse(file, where + ": a merge must have exactly two parts, \"left right\" or [\"left\", \"right\"]");
  return {*io::json_string((*parts)[0]), *io::json_string((*parts)[1])};
}

/// Parses tokenizer.json into a tree allocated from `arena`; malformed JSON is
/// a tokenizer_error with the line and column.
inline JsonValue parse_tokenizer_json(std::string_view json_text, const std::string& file,
                                      boost::json::monotonic_resource& arena) {
  try {
    JsonValue doc = io::parse_json(json_text, file, &arena);
    if (!doc.is_object()) refuse(file, "expected an object at the top level, found " + io::json_kind_phrase(doc));
    return doc;
  } catch (const io::json_error& e) {
    throw tokenizer_error(file, "line " + std::to_string(e.line()) + ", column " + std::to_string(e.column()) + ": " +
                                    e.problem());
  }
}

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
  // The tree lives only while the tables are built: one arena, freed at once.
  boost::json::monotonic_resource arena;
  const detail::JsonValue doc = detail::parse_tokenizer_json(json_text, source_name, arena);
  const detail::JsonObject& root = doc.get_object();
  BpeTokenizer tok;
  tok.source_ = std::move(source_name);

  tok.added_ = detail::read_added_tokens(tok.source_, root.if_contains("added_tokens"));
  const detail::JsonValue* model = root.if_contains("model");
  if (model == nullptr) tok.fail("no \"model\" section");
  const detail::BpeModelSection section = detail::BpeModelSection::read(tok.source_, *model);
  if (!root.contains("pre_tokenizer")) tok.fail("no \"pre_tokenizer\" section");
  tok.nfc_ = detail::PipelineConfig::check(tok.source_, root.if_contains("normalizer"), root.if_contains("pre_tokenizer"),
                                           root.if_contains("decoder"), root.if_contains("post_processor"))
                 .nfc;
  tok.ignore_merges_ = section.ignore_merges;
  tok.install_vocabulary(*section.vocab);
  tok.install_added_tokens();
  tok.install_byte_tokens();
  tok.install_merges(*section.merges);
  return tok;
}

inline void BpeTokenizer::install_vocabulary(const boost::json::object& vocab) {
  TokenId max_id = -1;
  std::vector<TokenId> ids;
  ids.reserve(vocab.size());
  for (const auto& member : vocab) {
    ids.push_back(detail::read_token_id(source_, member.value(), [&] { return "model.vocab[" + detail::quoted(member.key()) + "]"; }));
    max_id = std::max(max_id, ids.back());
  }
  for (const AddedToken& t : added_) max_id = std::max(max_id, t.id);
  // Ids index a table: refuse a file that would make it absurdly large.
  constexpr TokenId max_supported_id = (1 << 24) - 1;
  if (max_id > max_supported_id)
    fail("token id " + std::to_string(max_id) + " is larger than " + std::to_string(max_supported_id));
  tokens_.resize(static_cast<std::size_t>(max_id) + 1);
  vocab_index_.reserve(vocab.size());
  const auto spelling_of = [this](TokenId id) { return std::string_view(tokens_[static_cast<std::size_t>(id)].spelling); };
  const auto& alphabet = detail::byte_level_alphabet();
  std::size_t index = 0;
  for (const auto& member : vocab) {
    const std::string_view spelling(member.key().data(), member.key().size());
    const TokenId id = ids[index++];
    TokenEntry& e = tokens_[static_cast<std::size_t>(id)];
    if (e.flags & TokenEntry::present)
      fail("vocabulary: id " + std::to_string(id) + " is given to both " + detail::quoted(e.spelling) + " and " +
           detail::quoted(spelling));
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
    e.bytes = in_alphabet ? std::move(bytes) : std::string(spelling);
    e.flags = TokenEntry::present;
    e.spelling = std::string(spelling);
    if (!vocab_index_.insert(e.spelling, id, spelling_of)) fail("vocabulary: token " + detail::quoted(e.spelling) + " appears twice");
  }
}

inline void BpeTokenizer::install_added_tokens() {
  for (std::size_t i = 0; i < added_.size(); ++i) {
    const AddedToken& t = added_[i];
    TokenEntry& e = tokens_[static_cast<std::size_t>(t.id)];
    if (!(e.flags & TokenEntry::present)) e.spelling = t.content;
    e.bytes = t.content;  // added tokens decode to their text, not through the byte alphabet
    e.flags |= TokenEntry::present | TokenEntry::added | (t.special ? TokenEntry::special : 0);
    added_by_first_byte_[static_cast<unsigned char>(t.content[0])].push_back(static_cast<std::uint32_t>(i));
  }
  for (auto& list : added_by_first_byte_)
    std::stable_sort(list.begin(), list.end(), [&](std::uint32_t a, std::uint32_t b) {
      return added_[a].content.size() > added_[b].content.size();
    });
}

inline void BpeTokenizer::install_byte_tokens() {
  const auto& alphabet = detail::byte_level_alphabet();
  for (int b = 0; b < 256; ++b) {
    const TokenId id = find_vocab(alphabet.utf8_of_byte[b]);
    if (id < 0)
      fail("vocabulary: the byte-level symbol for byte " + std::to_string(b) + " (" +
           detail::quoted(alphabet.utf8_of_byte[b]) + ") is missing; not a byte-level BPE vocabulary");
    byte_token_[b] = id;
  }
}

inline void BpeTokenizer::install_merges(const boost::json::array& merges) {
  merges_.reserve(merges.size());
  merge_rules_.reserve(merges.size());
  std::string joined;
  for (std::size_t rank = 0; rank < merges.size(); ++rank) {
    // Plain names rather than a structured binding: the lambda below uses
    // them, and Clang before 16 cannot capture a binding.
    const std::pair<std::string_view, std::string_view> merge = detail::read_merge(source_, merges[rank], rank);
    const std::string_view left = merge.first, right = merge.second;
    const auto id_of = [&](std::string_view s) {
      const TokenId id = find_vocab(s);
      if (id < 0)
        fail("merge " + std::to_string(rank) + " (" + detail::quoted(left) + " " + detail::quoted(right) + "): " +
             detail::quoted(s) + " is not in the vocabulary");
      return id;
    };
    const TokenId left_id = id_of(left);
    const TokenId right_id = id_of(right);
    joined.assign(left).append(right);
    merges_.insert(left_id, right_id, {static_cast<std::uint32_t>(rank), id_of(joined)});
    merge_rules_.emplace_back(left_id, right_id);
  }
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
