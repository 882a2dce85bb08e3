#pragma once
// WhisperTokenizer and WhisperSpecialTokens: bodies.

#include <izwi/core/error.hpp>
#include <izwi/io/json.hpp>
#include <izwi/tokenizer/detail/byte_level.hpp>
#include <izwi/tokenizer/detail/unicode.hpp>
#include <izwi/tokenizer/detail/utf8.hpp>
#include <izwi/tokenizer/tokenizer_error.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>

namespace izwi::tokenizer {

inline WhisperSpecialTokens WhisperSpecialTokens::for_vocab_size(std::size_t vocab_size) {
  // whisper.cpp's derivation: the .en layout, shifted by one after the 50256
  // BPE tokens of the multilingual vocabulary and by the extra languages.
  if (vocab_size < 51864 || vocab_size > 51765 + 1 + whisper_languages.size())
    throw izwi::invalid_argument("vocab_size", "Whisper vocabulary size " + std::to_string(vocab_size) +
                                                   " is none of 51864 (.en), 51865 (multilingual), 51866 (large-v3)");
  WhisperSpecialTokens s;
  s.vocab_size = vocab_size;
  s.multilingual = vocab_size >= 51865;
  s.num_languages = vocab_size - 51765 - (s.multilingual ? 1 : 0);
  const TokenId shift = s.multilingual ? 1 : 0;
  const auto extra = static_cast<TokenId>(s.num_languages) - 99;
  s.eot = 50256 + shift;
  s.sot = 50257 + shift;
  s.translate = 50357 + shift + extra;
  s.transcribe = s.translate + 1;
  s.sot_lm = s.translate + 2;
  s.sot_prev = s.translate + 3;
  s.no_speech = s.translate + 4;
  s.no_timestamps = s.translate + 5;
  s.timestamp_begin = s.translate + 6;
  return s;
}

inline std::optional<TokenId> WhisperSpecialTokens::language_token(std::string_view code) const noexcept {
  for (std::size_t i = 0; i < num_languages; ++i)
    if (whisper_languages[i] == code) return sot + 1 + static_cast<TokenId>(i);
  return std::nullopt;
}

inline std::string_view WhisperSpecialTokens::language_code(TokenId id) const noexcept {
  const auto i = static_cast<std::int64_t>(id) - sot - 1;
  return i >= 0 && static_cast<std::size_t>(i) < num_languages ? whisper_languages[static_cast<std::size_t>(i)]
                                                               : std::string_view{};
}

inline std::string WhisperSpecialTokens::language_list() const {
  std::string out;
  for (std::size_t i = 0; i < num_languages; ++i) {
    if (i) out += ", ";
    out += whisper_languages[i];
  }
  return out;
}

namespace detail {

inline std::string base64_decode(std::string_view in, const std::string& file) {
  auto value = [&](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    throw tokenizer_error(file, "invalid base64 in a token");
  };
  std::string out;
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=') break;
    acc = (acc << 6) | static_cast<std::uint32_t>(value(c));
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

/// Length of the GPT-2 pre-tokenizer match at code point i:
/// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
inline std::size_t gpt2_match_length(const std::vector<char32_t>& cp, const std::vector<CharClass>& cls,
                                     std::size_t i) {
  const std::size_t n = cp.size();
  if (cp[i] == U'\'' && i + 1 < n) {
    const char32_t a = cp[i + 1];
    if (a == U's' || a == U't' || a == U'm' || a == U'd') return 2;
    if (i + 2 < n) {
      const char32_t b = cp[i + 2];
      if ((a == U'r' && b == U'e') || (a == U'v' && b == U'e') || (a == U'l' && b == U'l')) return 3;
    }
  }
  std::size_t j = i + (cp[i] == U' ' && i + 1 < n && cls[i + 1] != CharClass::whitespace ? 1 : 0);
  const CharClass first = cls[j];
  if (first != CharClass::whitespace) {
    std::size_t k = j;
    auto same = [&](CharClass c) {
      return first == CharClass::other ? c == CharClass::other : c == first;
    };
    while (k < n && same(cls[k])) ++k;
    return k - i;
  }
  // Whitespace: all of it but the last when a non-space follows (\s+(?!\S)).
  std::size_t k = i;
  while (k < n && cls[k] == CharClass::whitespace) ++k;
  if (k < n && k - i > 1) return k - i - 1;
  return k - i;
}

}  // namespace detail

inline void WhisperTokenizer::index_tokens() {
  if (tokens_.size() != special_.num_text_tokens())
    throw tokenizer_error("Whisper tokenizer", "Whisper vocabulary has " + std::to_string(tokens_.size()) + " BPE tokens; vocab_size " +
                          std::to_string(special_.vocab_size) + " needs " +
                          std::to_string(special_.num_text_tokens()));
  ranks_.reserve(tokens_.size());
  for (std::size_t i = 0; i < tokens_.size(); ++i) ranks_.emplace(tokens_[i], static_cast<TokenId>(i));
}

inline WhisperTokenizer WhisperTokenizer::from_tiktoken(const std::filesystem::path& path, std::size_t vocab_size) {
  std::ifstream in(path);
  if (!in) throw tokenizer_error(path.string(), "cannot open");
  WhisperTokenizer t;
  t.special_ = WhisperSpecialTokens::for_vocab_size(vocab_size);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto space = line.find(' ');
    if (space == std::string::npos) throw tokenizer_error(path.string(), "line without a rank: " + line);
    const long rank = std::strtol(line.c_str() + space + 1, nullptr, 10);
    if (rank != static_cast<long>(t.tokens_.size()))
      throw tokenizer_error(path.string(), "ranks are not consecutive at " + std::to_string(rank));
    t.tokens_.push_back(detail::base64_decode(std::string_view(line).substr(0, space), path.string()));
  }
  // gpt2.tiktoken lists <|endoftext|>'s rank too in some copies; keep the BPE part.
  if (t.tokens_.size() > t.special_.num_text_tokens()) t.tokens_.resize(t.special_.num_text_tokens());
  t.index_tokens();
  return t;
}

inline WhisperTokenizer WhisperTokenizer::from_vocabulary(std::vector<std::string> tokens, std::size_t vocab_size) {
  WhisperTokenizer t;
  t.special_ = WhisperSpecialTokens::for_vocab_size(vocab_size);
  t.tokens_ = std::move(tokens);
  if (t.tokens_.size() > t.special_.num_text_tokens()) t.tokens_.resize(t.special_.num_text_tokens());
  t.index_tokens();
  return t;
}

inline WhisperTokenizer WhisperTokenizer::from_vocab_json(const std::filesystem::path& path, std::size_t vocab_size) {
  return from_byte_level_vocab(io::read_json_file(path), path, vocab_size);
}

inline WhisperTokenizer WhisperTokenizer::from_tokenizer_json(const std::filesystem::path& path,
                                                              std::size_t vocab_size) {
  const io::JsonValue doc = io::read_json_file(path);
  const io::JsonValue* model = io::json_find(doc, "model");
  const io::JsonValue* vocab = model ? io::json_find(*model, "vocab") : nullptr;
  const io::JsonValue* type = model ? io::json_find(*model, "type") : nullptr;
  if (vocab == nullptr || !vocab->is_object() || type == nullptr || io::json_string(*type) != "BPE")
    throw tokenizer_error(path.string(), "not a BPE tokenizer.json with a model.vocab object");
  return from_byte_level_vocab(*vocab, path, vocab_size);
}

inline WhisperTokenizer WhisperTokenizer::from_byte_level_vocab(const io::JsonValue& doc,
                                                                const std::filesystem::path& path,
                                                                std::size_t vocab_size) {
  WhisperTokenizer t;
  t.special_ = WhisperSpecialTokens::for_vocab_size(vocab_size);
  t.tokens_.resize(t.special_.num_text_tokens());
  std::vector<bool> seen(t.tokens_.size());
  const auto& alphabet = detail::byte_level_alphabet();
  if (!doc.is_object()) throw tokenizer_error(path.string(), "the vocabulary is not a JSON object");
  for (const auto& [key, id_value] : doc.as_object()) {
    const std::string_view spelling(key.data(), key.size());
    const std::optional<std::int64_t> id_read = io::json_integer(id_value);
    if (!id_read) throw tokenizer_error(path.string(), "token '" + std::string(spelling) + "' has no integer id");
    const std::int64_t id = *id_read;
    if (id < 0 || static_cast<std::size_t>(id) >= t.tokens_.size()) continue;  // special tokens
    std::string bytes;
    for (std::size_t pos = 0; pos < spelling.size();) {
      const int b = alphabet.byte_of(detail::decode_utf8_unchecked(spelling, pos));
      if (b < 0) throw tokenizer_error(path.string(), "token '" + std::string(spelling) + "' is not byte-level");
      bytes.push_back(static_cast<char>(b));
    }
    t.tokens_[static_cast<std::size_t>(id)] = std::move(bytes);
    seen[static_cast<std::size_t>(id)] = true;
  }
  if (std::find(seen.begin(), seen.end(), false) != seen.end())
    throw tokenizer_error(path.string(), "vocabulary has gaps below id " + std::to_string(t.tokens_.size()));
  t.index_tokens();
  return t;
}

inline void WhisperTokenizer::encode_piece(std::string_view piece, std::vector<TokenId>& out) const {
  if (auto it = ranks_.find(std::string(piece)); it != ranks_.end()) {
    out.push_back(it->second);
    return;
  }
  // Parts as [begin, end) byte ranges; merge the adjacent pair whose
  // concatenation has the lowest rank until none is in the vocabulary.
  std::vector<std::size_t> bounds(piece.size() + 1);
  for (std::size_t i = 0; i <= piece.size(); ++i) bounds[i] = i;
  std::string joined;
  while (bounds.size() > 2) {
    TokenId best = std::numeric_limits<TokenId>::max();
    std::size_t best_at = 0;
    for (std::size_t i = 0; i + 2 < bounds.size(); ++i) {
      joined.assign(piece.substr(bounds[i], bounds[i + 2] - bounds[i]));
      if (auto it = ranks_.find(joined); it != ranks_.end() && it->second < best) {
        best = it->second;
        best_at = i;
      }
    }
    if (best == std::numeric_limits<TokenId>::max()) break;
    bounds.erase(bounds.begin() + static_cast<std::ptrdiff_t>(best_at) + 1);
  }
  for (std::size_t i = 0; i + 1 < bounds.size(); ++i) {
    auto it = ranks_.find(std::string(piece.substr(bounds[i], bounds[i + 1] - bounds[i])));
    if (it == ranks_.end()) throw tokenizer_error("Whisper tokenizer", "Whisper vocabulary lacks a single byte token");
    out.push_back(it->second);
  }
}

inline std::vector<TokenId> WhisperTokenizer::encode(std::string_view text) const {
  if (detail::utf8_first_invalid(text) != std::string_view::npos) throw izwi::invalid_argument("text", "text is not valid UTF-8");
  std::vector<char32_t> cps;
  std::vector<std::size_t> offsets;
  for (std::size_t pos = 0; pos < text.size();) {
    offsets.push_back(pos);
    cps.push_back(detail::decode_utf8_unchecked(text, pos));
  }
  offsets.push_back(text.size());
  std::vector<detail::CharClass> cls(cps.size());
  for (std::size_t i = 0; i < cps.size(); ++i) cls[i] = detail::char_class(cps[i]);
  std::vector<TokenId> out;
  for (std::size_t i = 0; i < cps.size();) {
    const std::size_t len = detail::gpt2_match_length(cps, cls, i);
    encode_piece(text.substr(offsets[i], offsets[i + len] - offsets[i]), out);
    i += len;
  }
  return out;
}

inline std::vector<TokenId> WhisperTokenizer::non_speech_tokens() const {
  // The symbols openai-whisper lists (whisper/tokenizer.py): annotation
  // marks of its training transcripts, single characters and runs of them.
  static constexpr std::string_view marks[] = {
      "\"", "#", "(", ")", "*", "+", "/", ":", ";", "<", "=", ">", "@", "[", "\\", "]", "^", "_", "`", "{",
      "|", "}", "~", "\u300c", "\u300d", "\u300e", "\u300f", "<<", ">>", "<<<", ">>>", "--", "---", "-(", "-[",
      "('", "(\"", "((", "))", "(((", ")))", "[[", "]]", "{{", "}}", "\u266a\u266a", "\u266a\u266a\u266a"};
  // ♩ ♪ ♫ ♬ ♭ ♮ ♯: several byte tokens each, the first one suppressed.
  static constexpr std::string_view musical_signs[] = {"\u2669", "\u266a", "\u266b", "\u266c",
                                                       "\u266d", "\u266e", "\u266f"};
  std::vector<TokenId> out;
  std::string spaced;
  const auto add = [&](std::string_view symbol, bool first_of_several) {
    spaced.assign(1, ' ');
    spaced.append(symbol);
    for (std::string_view text : {symbol, std::string_view(spaced)}) {
      const std::vector<TokenId> ids = encode(text);
      if (ids.size() == 1 || (first_of_several && !ids.empty())) out.push_back(ids.front());
    }
  };
  for (std::string_view mark : marks) add(mark, false);
  for (std::string_view sign : musical_signs) add(sign, true);
  for (std::string_view text : {std::string_view(" -"), std::string_view(" '")}) out.push_back(encode(text).front());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

inline std::string WhisperTokenizer::token_text(TokenId id) const {
  const auto& s = special_;
  if (id >= 0 && static_cast<std::size_t>(id) < tokens_.size()) return tokens_[static_cast<std::size_t>(id)];
  if (id == s.eot) return "<|endoftext|>";
  if (id == s.sot) return "<|startoftranscript|>";
  if (auto code = s.language_code(id); !code.empty()) return "<|" + std::string(code) + "|>";
  if (id == s.translate) return "<|translate|>";
  if (id == s.transcribe) return "<|transcribe|>";
  if (id == s.sot_lm) return "<|startoflm|>";
  if (id == s.sot_prev) return "<|startofprev|>";
  if (id == s.no_speech) return "<|nospeech|>";
  if (id == s.no_timestamps) return "<|notimestamps|>";
  if (s.is_timestamp(id)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "<|%.2f|>", s.timestamp_seconds(id));
    return buf;
  }
  return "";
}

inline std::optional<TokenId> WhisperTokenizer::token_to_id(std::string_view text) const {
  if (auto it = ranks_.find(std::string(text)); it != ranks_.end()) return it->second;
  if (text.size() > 4 && text.starts_with("<|") && text.ends_with("|>")) {
    for (TokenId id = special_.eot; static_cast<std::size_t>(id) < special_.vocab_size; ++id)
      if (token_text(id) == text) return id;
  }
  return std::nullopt;
}

inline std::string WhisperTokenizer::decode(std::span<const TokenId> ids, bool include_special) const {
  std::string out;
  for (TokenId id : ids) {
    if (id >= 0 && static_cast<std::size_t>(id) < tokens_.size())
      out += tokens_[static_cast<std::size_t>(id)];
    else if (include_special)
      out += token_text(id);
  }
  return out;
}

inline std::vector<TokenId> WhisperTokenizer::sot_sequence(std::string_view language, bool translate,
                                                           bool timestamps) const {
  std::vector<TokenId> out{special_.sot};
  if (special_.multilingual) {
    auto lang = special_.language_token(language.empty() ? "en" : language);
    if (!lang)
      throw izwi::invalid_argument("language", "unknown language '" + std::string(language) +
                                                   "'; valid: " + special_.language_list());
    out.push_back(*lang);
    out.push_back(translate ? special_.translate : special_.transcribe);
  }
  if (!timestamps) out.push_back(special_.no_timestamps);
  return out;
}

}  // namespace izwi::tokenizer
