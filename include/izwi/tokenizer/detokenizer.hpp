#pragma once
// Incremental detokenization for streaming: tokens arrive one at a time and
// each call returns exactly the text that token completes. A token may end in
// the middle of a UTF-8 sequence (byte-level BPE splits an emoji or a CJK
// character across tokens), so incomplete trailing bytes are held until the
// sequence completes; bytes that can never form a character come out as
// U+FFFD at once. The concatenation of everything append() and flush() return
// equals BpeTokenizer::decode() of the same ids, byte for byte.
//
// This is the engine's optional detokenizer ability
// (concepts/executor.hpp: `append(TokenId) -> std::string_view`): an executor
// returns one per request from make_detokenizer().

#include <izwi/core/ids.hpp>
#include <izwi/tokenizer/bpe_tokenizer.hpp>
#include <izwi/tokenizer/detail/utf8_assembler.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace izwi::tokenizer {

class IncrementalDetokenizer {
 public:
  /// Keeps a reference to `tokenizer`, which must outlive this object.
  explicit IncrementalDetokenizer(const BpeTokenizer& tokenizer, DecodeOptions options = {}) noexcept
      : tokenizer_(&tokenizer), options_(options) {}

  /// Text completed by `id`: valid UTF-8, possibly empty. The view stays
  /// valid until the next call on this object. Never throws for an unknown id
  /// (it contributes nothing), so it can sit in the step loop.
  std::string_view append(TokenId id);

  /// End of the stream: held bytes of an unfinished sequence, as U+FFFD.
  std::string_view flush();

  /// The bytes `id` stands for, alone (possibly part of a UTF-8 sequence):
  /// what logprobs report for it. Stateless; empty for an unknown id.
  std::string_view token_bytes(TokenId id) const noexcept { return tokenizer_->token_bytes(id); }

  /// Bytes held back waiting for the rest of a UTF-8 sequence (0 to 3).
  std::size_t pending_bytes() const noexcept { return assembler_.pending_bytes(); }

  /// Forgets held bytes, to reuse this object for another stream.
  void reset() noexcept { assembler_.reset(); }

 private:
  const BpeTokenizer* tokenizer_;
  DecodeOptions options_;
  detail::Utf8Assembler assembler_;
};

/// The detokenizer of a model whose checkpoint may or may not carry a
/// tokenizer: text when it does, none when it does not.
class ModelDetokenizer {
 public:
  ModelDetokenizer() = default;
  explicit ModelDetokenizer(const BpeTokenizer* tokenizer) {
    if (tokenizer) inner_.emplace(*tokenizer);
  }
  std::string_view append(TokenId id) { return inner_ ? inner_->append(id) : std::string_view{}; }
  /// End of the request: bytes of an unfinished character, as U+FFFD.
  std::string_view flush() { return inner_ ? inner_->flush() : std::string_view{}; }
  std::string_view token_bytes(TokenId id) const noexcept {
    return inner_ ? inner_->token_bytes(id) : std::string_view{};
  }

 private:
  std::optional<IncrementalDetokenizer> inner_;
};

/// What CpuExecutor<Model>::make_detokenizer() calls (found by argument-
/// dependent lookup) for a model whose tokenizer() is a BpeTokenizer pointer.
inline ModelDetokenizer make_model_detokenizer(const BpeTokenizer* tokenizer) { return ModelDetokenizer(tokenizer); }

}  // namespace izwi::tokenizer

namespace izwi {
using tokenizer::ModelDetokenizer;
}  // namespace izwi

#include <izwi/tokenizer/impl/detokenizer.hpp>
