#pragma once
// Whisper's tokenizer: GPT-2 style byte-level BPE (the GPT-2 vocabulary for
// the .en models, OpenAI's "multilingual" one otherwise) followed by the
// special tokens, whose ids depend on the vocabulary size:
//
//   multilingual (n_vocab >= 51865)      English-only (.en, 51864)
//   <|endoftext|>          50257         50256
//   <|startoftranscript|>  50258         50257
//   <|en|>, <|zh|>, ...    50259 …       50258 … (present, unused)
//   <|translate|>          sot + 1 + L   (L languages: 99, or 100 for large-v3's 51866)
//   <|transcribe|>, <|startoflm|>, <|startofprev|>, <|nospeech|>, <|notimestamps|>
//   <|0.00|> … <|30.00|>   timestamp_begin … n_vocab - 1, in steps of 0.02 s
//
// (whisper.cpp derives the same ids from n_vocab; openai-whisper's tiktoken
// files list only the BPE ranks.) The BPE tokens come from a .tiktoken rank
// file (base64 bytes + rank = id, openai-whisper's assets), from the
// vocabulary of a ggml-whisper file, or from a Hugging Face vocab.json.
// Encoding splits text with GPT-2's pattern and merges byte pairs by rank
// (tiktoken's rule: the lowest-ranked adjacent merge first); decoding maps
// ids to bytes. Link izwi::tokenizer (ICU, for the letter/number classes).

#include <izwi/core/ids.hpp>
#include <izwi/io/json.hpp>
#include <izwi/tokenizer/detail/utf8_assembler.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace izwi::tokenizer {

/// Language codes in Whisper's order: token sot + 1 + i is language i.
inline constexpr std::array<std::string_view, 100> whisper_languages = {
    "en", "zh", "de", "es", "ru", "ko", "fr", "ja", "pt", "tr", "pl", "ca", "nl", "ar", "sv", "it", "id",
    "hi", "fi", "vi", "he", "uk", "el", "ms", "cs", "ro", "da", "hu", "ta", "no", "th", "ur", "hr", "bg",
    "lt", "la", "mi", "ml", "cy", "sk", "te", "fa", "lv", "bn", "sr", "az", "sl", "kn", "et", "mk", "br",
    "eu", "is", "hy", "ne", "mn", "bs", "kk", "sq", "sw", "gl", "mr", "pa", "si", "km", "sn", "yo", "so",
    "af", "oc", "ka", "be", "tg", "sd", "gu", "am", "yi", "lo", "uz", "fo", "ht", "ps", "tk", "nn", "mt",
    "sa", "lb", "my", "bo", "tl", "mg", "as", "tt", "haw", "ln", "ha", "ba", "jw", "su", "yue"};

/// The special token ids of a Whisper vocabulary of a given size.
struct WhisperSpecialTokens {
  TokenId eot = 0, sot = 0, translate = 0, transcribe = 0, sot_lm = 0, sot_prev = 0, no_speech = 0,
          no_timestamps = 0, timestamp_begin = 0;
  std::size_t num_languages = 0;
  std::size_t vocab_size = 0;
  bool multilingual = false;

  /// From the model's vocabulary size (51864 .en, 51865 multilingual, 51866
  /// large-v3); izwi::invalid_argument for a size no Whisper has.
  static WhisperSpecialTokens for_vocab_size(std::size_t vocab_size);

  /// Tokens of the regular BPE vocabulary (ids below eot... inclusive of eot's index).
  std::size_t num_text_tokens() const noexcept { return static_cast<std::size_t>(eot); }
  /// <|xx|> for a language code; nullopt when the model has no such language.
  std::optional<TokenId> language_token(std::string_view code) const noexcept;
  /// The code of a language token; empty when `id` is none.
  std::string_view language_code(TokenId id) const noexcept;
  bool is_timestamp(TokenId id) const noexcept { return id >= timestamp_begin && static_cast<std::size_t>(id) < vocab_size; }
  /// Seconds a timestamp token stands for (0.02 s steps).
  double timestamp_seconds(TokenId id) const noexcept { return 0.02 * static_cast<double>(id - timestamp_begin); }
  /// Comma-separated valid language codes (for error messages).
  std::string language_list() const;
};

class WhisperTokenizer {
 public:
  /// From an openai-whisper .tiktoken file (gpt2.tiktoken for .en models,
  /// multilingual.tiktoken otherwise).
  static WhisperTokenizer from_tiktoken(const std::filesystem::path& path, std::size_t vocab_size);
  /// From the token byte strings of a ggml-whisper file (index = id = rank).
  static WhisperTokenizer from_vocabulary(std::vector<std::string> tokens, std::size_t vocab_size);
  /// From a Hugging Face vocab.json (byte-level spellings such as "Ġthe").
  static WhisperTokenizer from_vocab_json(const std::filesystem::path& path, std::size_t vocab_size);
  /// From a Hugging Face tokenizer.json (its model.vocab, byte-level spellings).
  static WhisperTokenizer from_tokenizer_json(const std::filesystem::path& path, std::size_t vocab_size);

  const WhisperSpecialTokens& special() const noexcept { return special_; }
  std::size_t vocab_size() const noexcept { return special_.vocab_size; }

  /// Ids of UTF-8 text (no special tokens are recognised in it).
  std::vector<TokenId> encode(std::string_view text) const;
  /// Bytes of the text tokens among `ids`; special and timestamp tokens are
  /// skipped unless `include_special`, which spells them as <|...|>.
  std::string decode(std::span<const TokenId> ids, bool include_special = false) const;
  /// The bytes of one id ("" for ids without text); specials as <|...|>.
  std::string token_text(TokenId id) const;
  /// The bytes of a text token; empty for special and timestamp tokens (and
  /// ids outside the vocabulary). No allocation: the streaming path uses it.
  std::string_view text_bytes(TokenId id) const noexcept {
    if (id < 0 || id >= special_.eot || static_cast<std::size_t>(id) >= tokens_.size()) return {};
    return tokens_[static_cast<std::size_t>(id)];
  }
  /// The id of an exact token byte string, or of a special token's <|...|> text.
  std::optional<TokenId> token_to_id(std::string_view text) const;

  /// openai-whisper's non-speech symbols in this vocabulary, sorted: the
  /// tokens its default suppress_tokens ("-1") adds to the special ones, so
  /// that decoding does not write speaker tags, brackets or music notes. A
  /// symbol counts alone and after a space where it is one token; a musical
  /// sign (a multi-byte character) by its first token however it splits;
  /// plus the first tokens of " -" and " '".
  std::vector<TokenId> non_speech_tokens() const;

  /// The decoder prompt: <|startoftranscript|> [<|lang|> <|task|>] [<|notimestamps|>]
  /// (.en models have no language or task tokens).
  std::vector<TokenId> sot_sequence(std::string_view language, bool translate, bool timestamps) const;

 private:
  WhisperTokenizer() = default;
  void index_tokens();
  static WhisperTokenizer from_byte_level_vocab(const io::JsonValue& vocab, const std::filesystem::path& path,
                                                std::size_t vocab_size);
  void encode_piece(std::string_view piece, std::vector<TokenId>& out) const;

  WhisperSpecialTokens special_;
  std::vector<std::string> tokens_;  ///< bytes of the BPE tokens, index = id = rank
  std::unordered_map<std::string, TokenId> ranks_;
};

/// Streaming text of a Whisper request (the engine's detokenizer ability,
/// concepts/executor.hpp): each call returns the text its token completes.
/// Special and timestamp tokens give none (the server turns timestamps into
/// segments from the token ids). Default-constructed (a checkpoint without a
/// vocabulary) it gives no text at all.
class WhisperDetokenizer {
 public:
  WhisperDetokenizer() = default;
  /// Keeps a pointer to `tokenizer` (may be null), which must outlive this object.
  explicit WhisperDetokenizer(const WhisperTokenizer* tokenizer) noexcept : tokenizer_(tokenizer) {}
  std::string_view append(TokenId id) { return assembler_.push(tokenizer_ ? tokenizer_->text_bytes(id) : std::string_view{}); }
  std::string_view flush() { return assembler_.flush(); }
  // No token_bytes(): Whisper's windows ask for logprobs on every token (the
  // decoder's own fallback and beam decisions), so spelling them in the
  // engine would charge every token; the transcription route spells only
  // what include[]=logprobs renders.

 private:
  const WhisperTokenizer* tokenizer_ = nullptr;
  detail::Utf8Assembler assembler_;
};

/// Found by argument-dependent lookup from an executor's make_detokenizer().
inline WhisperDetokenizer make_model_detokenizer(const WhisperTokenizer* tokenizer) {
  return WhisperDetokenizer(tokenizer);
}

}  // namespace izwi::tokenizer

#include <izwi/tokenizer/impl/whisper_tokenizer.hpp>
