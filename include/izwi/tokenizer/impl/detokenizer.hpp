#pragma once
// Bodies of izwi/tokenizer/detokenizer.hpp.

#include <izwi/tokenizer/detokenizer.hpp>
#include <izwi/tokenizer/detail/utf8.hpp>

namespace izwi::tokenizer {

inline std::string_view IncrementalDetokenizer::append(TokenId id) {
  text_.clear();
  if (options_.skip_special_tokens && tokenizer_->is_special(id)) return text_;
  const std::string_view bytes = tokenizer_->token_bytes(id);
  if (bytes.empty()) return text_;
  pending_.append(bytes);
  std::size_t pos = 0;
  while (pos < pending_.size()) {
    const detail::Utf8Step step = detail::utf8_step(pending_, pos);
    if (step.kind == detail::Utf8Step::incomplete) break;  // wait for the next token
    if (step.kind == detail::Utf8Step::complete) {
      text_.append(pending_, pos, step.length);
    } else {
      detail::append_utf8(text_, detail::replacement_character);
    }
    pos += step.length;
  }
  pending_.erase(0, pos);
  return text_;
}

inline std::string_view IncrementalDetokenizer::flush() {
  text_.clear();
  if (!pending_.empty()) detail::append_utf8_lossy(text_, pending_);
  pending_.clear();
  return text_;
}

}  // namespace izwi::tokenizer
