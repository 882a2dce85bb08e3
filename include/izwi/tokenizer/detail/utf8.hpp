#pragma once
// The tokenizer's names of izwi's one UTF-8 module (core/detail/utf8.hpp),
// kept for the code that includes this path (the detokenizer).

#include <izwi/core/detail/utf8.hpp>

namespace izwi::tokenizer::detail {
using izwi::detail::append_utf8;
using izwi::detail::append_utf8_lossy;
using izwi::detail::decode_utf8_unchecked;
using izwi::detail::replacement_character;
using izwi::detail::Utf8Step;
using izwi::detail::utf8_first_invalid;
using izwi::detail::utf8_step;
}  // namespace izwi::tokenizer::detail
