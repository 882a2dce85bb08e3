#pragma once
// Qwen3's chat template (ChatML with thinking blocks), rendered in C++ with
// the semantics of the Jinja template Qwen ships in tokenizer_config.json,
// as Hugging Face transformers renders it (Python Jinja2):
//
//   <|im_start|>system\n{system}<|im_end|>\n          (first message, if it is a system one)
//   <|im_start|>user\n{content}<|im_end|>\n
//   <|im_start|>assistant\n{content}<|im_end|>\n      (with <think>\n{reasoning}\n</think>\n\n
//                                                     after the last user query)
//   <|im_start|>user\n<tool_response>\n{content}\n</tool_response><|im_end|>\n   (tool results)
//   <|im_start|>assistant\n                            (add_generation_prompt)
//   <think>\n\n</think>\n\n                            (... and enable_thinking == false)
//
// The result is text; encode it with BpeTokenizer::encode (added tokens such as
// <|im_start|> are recognised there).

#include <span>
#include <string>
#include <vector>
#include <optional>

namespace izwi::tokenizer {

/// A function call made by the assistant.
struct ChatToolCall {
  std::string name;
  /// The arguments as JSON text, written into the prompt as given (the
  /// template's `arguments is string` branch).
  std::string arguments;
};

struct ChatMessage {
  std::string role;     ///< "system", "user", "assistant" or "tool"
  std::string content;
  /// The assistant's reasoning when kept apart from content; when absent, a
  /// "<think>...</think>" prefix of content is taken as the reasoning.
  std::optional<std::string> reasoning_content;
  std::vector<ChatToolCall> tool_calls;  ///< assistant messages only
};

struct ChatTemplateOptions {
  /// End with "<|im_start|>assistant\n" so the model writes the reply.
  bool add_generation_prompt = false;
  /// false: the generation prompt carries an empty think block, which tells
  /// Qwen3 to answer without reasoning (its "/no_think" switch).
  bool enable_thinking = true;
  /// Tool definitions, each one JSON object as text, written verbatim into
  /// the system block (Hugging Face writes them with json.dumps: ", " and ": ").
  std::vector<std::string> tools;
};

/// Renders `messages` with Qwen3's template. Throws izwi::invalid_argument
/// ("messages") for an empty conversation or an unknown role.
std::string render_qwen3_chat(std::span<const ChatMessage> messages, const ChatTemplateOptions& options = {});

}  // namespace izwi::tokenizer

#include <izwi/tokenizer/impl/chat_template.hpp>
