#pragma once
// Bodies of izwi/tokenizer/detokenizer.hpp.

#include <izwi/tokenizer/detokenizer.hpp>
#include <izwi/tokenizer/detail/utf8.hpp>

namespace izwi::tokenizer {

inline std::string_view IncrementalDetokenizer::append(TokenId id) {
  if (options_.skip_special_tokens && tokenizer_->is_special(id)) return assembler_.push({});
  return assembler_.push(tokenizer_->token_bytes(id));
}

inline std::string_view IncrementalDetokenizer::flush() { return assembler_.flush(); }

}  // namespace izwi::tokenizer
