#pragma once
// Utf8Assembler: bytes in, complete UTF-8 characters out. Byte-level BPE
// tokens may end inside a character (an emoji or a CJK character split over
// two tokens), so a streaming detokenizer holds the incomplete tail until the
// next token completes it; bytes that can never form a character come out as
// U+FFFD at once. Shared by the detokenizers of every byte-level tokenizer.

#include <cstddef>
#include <string>
#include <string_view>

#include <izwi/tokenizer/detail/utf8.hpp>

namespace izwi::tokenizer::detail {

class Utf8Assembler {
 public:
  /// Text completed by `bytes`: valid UTF-8, possibly empty; valid until the next call.
  std::string_view push(std::string_view bytes) {
    text_.clear();
    if (bytes.empty()) return text_;
    pending_.append(bytes);
    std::size_t pos = 0;
    while (pos < pending_.size()) {
      const Utf8Step step = utf8_step(pending_, pos);
      if (step.kind == Utf8Step::incomplete) break;  // wait for the next token
      if (step.kind == Utf8Step::complete)
        text_.append(pending_, pos, step.length);
      else
        append_utf8(text_, replacement_character);
      pos += step.length;
    }
    pending_.erase(0, pos);
    return text_;
  }

  /// End of the stream: held bytes of an unfinished character, as U+FFFD.
  std::string_view flush() {
    text_.clear();
    if (!pending_.empty()) append_utf8_lossy(text_, pending_);
    pending_.clear();
    return text_;
  }

  std::size_t pending_bytes() const noexcept { return pending_.size(); }
  void reset() noexcept {
    pending_.clear();
    text_.clear();
  }

 private:
  std::string pending_;  ///< the start of a UTF-8 sequence still missing bytes
  std::string text_;     ///< what the last call returned
};

}  // namespace izwi::tokenizer::detail
