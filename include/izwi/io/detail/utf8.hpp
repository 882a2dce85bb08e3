#pragma once
// The io/ names of izwi's one UTF-8 module (core/detail/utf8.hpp), kept for
// the code that includes this path (GGUF reader and writer, the server's
// JSON field checks).

#include <izwi/core/detail/utf8.hpp>

namespace izwi::io::detail {
using izwi::detail::append_utf8;
using izwi::detail::is_valid_utf8;
using izwi::detail::utf8_sequence_length;
}  // namespace izwi::io::detail
