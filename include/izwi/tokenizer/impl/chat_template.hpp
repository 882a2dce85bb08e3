#pragma once
// Body of izwi/tokenizer/chat_template.hpp. Each step names the line of the
// Jinja template it follows.

#include <izwi/core/error.hpp>
#include <izwi/tokenizer/chat_template.hpp>

#include <cstddef>
#include <string_view>

namespace izwi::tokenizer {

namespace detail {

// Python's str.strip/lstrip/rstrip with the argument '\n'.
inline std::string_view lstrip_newlines(std::string_view s) noexcept {
  while (!s.empty() && s.front() == '\n') s.remove_prefix(1);
  return s;
}
inline std::string_view rstrip_newlines(std::string_view s) noexcept {
  while (!s.empty() && s.back() == '\n') s.remove_suffix(1);
  return s;
}
inline std::string_view strip_newlines(std::string_view s) noexcept { return rstrip_newlines(lstrip_newlines(s)); }

// s.split(sep)[-1] and s.split(sep)[0].
inline std::string_view after_last(std::string_view s, std::string_view sep) noexcept {
  const std::size_t at = s.rfind(sep);
  return at == std::string_view::npos ? s : s.substr(at + sep.size());
}
inline std::string_view before_first(std::string_view s, std::string_view sep) noexcept {
  return s.substr(0, s.find(sep));
}

inline bool is_tool_response(std::string_view content) noexcept {
  constexpr std::string_view open = "<tool_response>", close = "</tool_response>";
  return content.starts_with(open) && content.ends_with(close);
}

}  // namespace detail

inline std::string render_qwen3_chat(std::span<const ChatMessage> messages, const ChatTemplateOptions& options) {
  if (messages.empty()) throw izwi::invalid_argument("messages", "a chat needs at least one message");
  for (const ChatMessage& m : messages)
    if (m.role != "system" && m.role != "user" && m.role != "assistant" && m.role != "tool")
      throw izwi::invalid_argument("messages", "unknown chat role '" + m.role +
                                                   "' (Qwen3's template knows system, user, assistant, tool)");
  std::string out;
  const bool first_is_system = messages[0].role == "system";

  // {%- if tools %} ... {%- else %} system block {%- endif %}
  if (!options.tools.empty()) {
    out += "<|im_start|>system\n";
    if (first_is_system) out.append(messages[0].content).append("\n\n");
    out +=
        "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
    for (const std::string& tool : options.tools) out.append("\n").append(tool);
    out +=
        "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
        "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
        "<args-json-object>}\n</tool_call><|im_end|>\n";
  } else if (first_is_system) {
    out.append("<|im_start|>system\n").append(messages[0].content).append("<|im_end|>\n");
  }

  // ns.last_query_index: the last user message that is not a tool response.
  std::size_t last_query_index = messages.size() - 1;
  for (std::size_t i = messages.size(); i-- > 0;) {
    if (messages[i].role == "user" && !detail::is_tool_response(messages[i].content)) {
      last_query_index = i;
      break;
    }
  }

  for (std::size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    const bool first = i == 0, last = i + 1 == messages.size();
    if (m.role == "user" || (m.role == "system" && !first)) {
      out.append("<|im_start|>").append(m.role).append("\n").append(m.content).append("<|im_end|>\n");
    } else if (m.role == "assistant") {
      std::string_view content = m.content;
      std::string_view reasoning;
      if (m.reasoning_content) {
        reasoning = *m.reasoning_content;
      } else if (content.find("</think>") != std::string_view::npos) {
        reasoning = detail::lstrip_newlines(
            detail::after_last(detail::rstrip_newlines(detail::before_first(content, "</think>")), "<think>"));
        content = detail::lstrip_newlines(detail::after_last(content, "</think>"));
      }
      if (i > last_query_index && (last || !reasoning.empty())) {
        out.append("<|im_start|>assistant\n<think>\n")
            .append(detail::strip_newlines(reasoning))
            .append("\n</think>\n\n")
            .append(detail::lstrip_newlines(content));
      } else {
        out.append("<|im_start|>assistant\n").append(content);
      }
      for (std::size_t c = 0; c < m.tool_calls.size(); ++c) {
        if ((c == 0 && !content.empty()) || c > 0) out += "\n";
        out.append("<tool_call>\n{\"name\": \"")
            .append(m.tool_calls[c].name)
            .append("\", \"arguments\": ")
            .append(m.tool_calls[c].arguments)
            .append("}\n</tool_call>");
      }
      out += "<|im_end|>\n";
    } else if (m.role == "tool") {
      if (first || messages[i - 1].role != "tool") out += "<|im_start|>user";
      out.append("\n<tool_response>\n").append(m.content).append("\n</tool_response>");
      if (last || messages[i + 1].role != "tool") out += "<|im_end|>\n";
    }
  }

  if (options.add_generation_prompt) {
    out += "<|im_start|>assistant\n";
    if (!options.enable_thinking) out += "<think>\n\n</think>\n\n";
  }
  return out;
}

}  // namespace izwi::tokenizer
