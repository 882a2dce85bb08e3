#pragma once
// The one check of a request's prompt: not empty, every id in the
// vocabulary, and room left in the context for at least one output token.
// Engine::add_request runs it (so does everything built on it, the server
// included, which maps field "prompt_tokens" onto its own parameter name);
// nothing downstream checks again. The messages are vLLM's, which the
// server's clients see.

#include <cstddef>
#include <span>
#include <string>

#include "izwi/core/error.hpp"
#include "izwi/core/ids.hpp"

namespace izwi {

/// Throws izwi::invalid_argument (field "prompt_tokens") when `prompt` is
/// empty, holds an id outside [0, vocab_size) (vocab_size 0: not checked),
/// or leaves no room for output within max_model_len (0: unlimited).
inline void check_prompt_tokens(std::span<const TokenId> prompt, std::size_t vocab_size, std::size_t max_model_len) {
  if (prompt.empty()) throw invalid_argument("prompt_tokens", "The prompt is empty.");
  if (vocab_size != 0)
    for (const TokenId t : prompt)
      if (t < 0 || static_cast<std::size_t>(t) >= vocab_size)
        throw invalid_argument("prompt_tokens", "Token id " + std::to_string(t) + " is out of vocabulary (size " +
                                                    std::to_string(vocab_size) + ").");
  if (max_model_len != 0 && prompt.size() >= max_model_len)
    throw invalid_argument("prompt_tokens", "This model's maximum context length is " + std::to_string(max_model_len) +
                                                " tokens. However, your request has " + std::to_string(prompt.size()) +
                                                " input tokens. Please reduce the length of the input.");
}

}  // namespace izwi
