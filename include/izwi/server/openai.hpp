#pragma once
// OpenAI's HTTP protocol as JSON: request parsing and response building for
// /v1/chat/completions, /v1/completions and /v1/models, and the error envelope.
//
// This layer is pure: Boost.JSON and izwi core only, no Beast, no Asio, no
// engine. The HTTP layer hands a request body in and gets a typed request
// out, or an ApiError (400 invalid_request_error) whose `param` names the
// field at fault as a JSON path ("messages[1].content", "temperature").
// Builders take plain values (token text and bytes come from the caller) and
// return boost::json::object; serialize them with boost::json::serialize and
// frame streamed ones with izwi/server/sse.hpp.
//
// Accepted requests follow OpenAI's API reference and vLLM's extensions to it
// (top_k, min_p, repetition_penalty, min_tokens, ignore_eos, stop_token_ids,
// chat_template_kwargs.enable_thinking). Unknown fields are ignored, as both
// do: OpenAI clients send many. A field sent as null counts as absent.
//
// Boost.JSON is a compiled library: izwi::izwi links Debian's libboost_json
// (or a program compiles <boost/json/src.hpp> once; see docs/server.md).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "izwi/core/error.hpp"
#include "izwi/core/ids.hpp"
#include "izwi/core/request.hpp"
#include "izwi/core/sampling_params.hpp"
#include "izwi/server/api_error.hpp"
#include "izwi/tokenizer/chat_template.hpp"

namespace izwi::server::openai {

// ---------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------

/// What the client calls the fields the engine checks. Sampling ranges and
/// the prompt are checked once, by the engine (SamplingParams::validate and
/// izwi::check_prompt_tokens in Engine::submit), which names its own fields;
/// the server answers under the client's names ("messages" for the prompt of
/// a chat, "max_completion_tokens" when the client sent that).
struct ClientFieldNames {
  std::string prompt_tokens = "prompt";
  std::string max_tokens = "max_tokens";
  std::string logprobs = "logprobs";
  /// The client's name for the engine's `engine_field`; other fields keep theirs.
  std::string_view client_name(std::string_view engine_field) const;
};

/// POST /v1/chat/completions, parsed and checked.
struct ChatCompletionRequest {
  /// The model asked for; empty when the client left "model" out (vLLM
  /// accepts that and serves its only model; the HTTP layer decides).
  std::string model;
  /// The conversation, roles normalised: "developer" becomes "system";
  /// content given as an array of text parts is joined with "\n".
  std::vector<tokenizer::ChatMessage> messages;
  /// Sampling and stopping, type-checked; their ranges are the engine's to
  /// check (ClientFieldNames). max_tokens is max_completion_tokens, else
  /// max_tokens, else unset (until EOS or the context limit). logprobs is
  /// top_logprobs (0 if absent) when the client asked for "logprobs": true,
  /// unset otherwise.
  SamplingParams sampling = [] {
    SamplingParams p;
    p.max_tokens.reset();
    return p;
  }();
  bool stream = false;
  /// stream_options.include_usage: a last chunk with empty choices carries usage.
  bool include_usage = false;
  /// "logprobs": true; top_logprobs then says how many alternatives (0..20).
  bool logprobs = false;
  std::uint32_t top_logprobs = 0;
  /// OpenAI's end-user id (for logs).
  std::optional<std::string> user;
  /// chat_template_kwargs.enable_thinking (vLLM's extension; Qwen3's switch).
  bool enable_thinking = true;
  /// "tools": each definition as Python's json.dumps writes it, the text
  /// Qwen3's template shows the model.
  std::vector<std::string> tools;
  /// tool_choice "auto" (non-streaming): the reply's <tool_call> blocks are
  /// answered as message.tool_calls (split_tool_calls). With "none" (vLLM's
  /// default) the reply, blocks included, comes back as text; "required", a
  /// named function, and "auto" with stream are refused for now.
  bool parse_tool_calls = false;
  /// "special_tokens_as_text" (izwi's extension): true encodes text in the
  /// messages that spells a special token ("<|im_end|>") as plain text; false
  /// parses it as the control token, as vLLM does. Unset: the server's default
  /// (ServerConfig::special_tokens_as_text).
  std::optional<bool> special_tokens_as_text;
  /// "priority" (vLLM's extension): lower is served sooner when the model's
  /// engine schedules by priority (izwi-server --scheduling-policy priority);
  /// ignored under FCFS, as in vLLM.
  std::int32_t priority = 0;
  /// "messages", the max-tokens field the client sent, "top_logprobs".
  ClientFieldNames field_names{.prompt_tokens = "messages", .max_tokens = "max_tokens", .logprobs = "top_logprobs"};
  /// Options for AnyEngine::render_chat: add_generation_prompt, enable_thinking, tools.
  tokenizer::ChatTemplateOptions template_options() const;
};

/// POST /v1/completions, parsed and checked.
struct CompletionRequest {
  std::string model;  ///< as in ChatCompletionRequest
  /// The prompt as text (to encode) or as token ids (used as given).
  std::variant<std::string, std::vector<TokenId>> prompt;
  /// Type-checked, ranges the engine's (as in ChatCompletionRequest);
  /// max_tokens defaults to 16 as in OpenAI and vLLM. sampling.logprobs is
  /// the request's integer logprobs (0..5).
  SamplingParams sampling;
  ClientFieldNames field_names;
  bool stream = false;
  bool include_usage = false;
  std::optional<std::string> user;
  /// As in ChatCompletionRequest, for a text prompt.
  std::optional<bool> special_tokens_as_text;
  /// As in ChatCompletionRequest.
  std::int32_t priority = 0;
};

/// Parses a JSON request body that must be an object. 400 when it is not
/// JSON ("body"), or not an object.
boost::json::object parse_json_object(std::string_view body);

/// Parses a chat completion body. Throws ApiError (400) naming the field:
/// not JSON, not an object, a missing or empty "messages", a wrong type, an
/// unknown role, a value outside what the protocol allows (n, stop,
/// top_logprobs, max_tokens < 1), invalid UTF-8. Sampling ranges are left to
/// the engine's one check (ClientFieldNames).
ChatCompletionRequest parse_chat_completion_request(std::string_view body);
/// The same from an already parsed object.
ChatCompletionRequest parse_chat_completion_request(const boost::json::object& body);

/// Parses a (legacy) completion body, as parse_chat_completion_request: prompt as a string, an
/// array of one string, token ids, or an array holding one token-id array;
/// echo, suffix, best_of > 1 and n > 1 are refused with 400.
CompletionRequest parse_completion_request(std::string_view body);
CompletionRequest parse_completion_request(const boost::json::object& body);

/// An izwi::invalid_argument (engine or SamplingParams) as a 400 naming its field.
ApiError bad_request_from(const izwi::invalid_argument& error);

// ---------------------------------------------------------------------------
// Responses
// ---------------------------------------------------------------------------

/// "chatcmpl-<24 random alphanumerics>" for prefix "chatcmpl-", "cmpl-..." likewise.
std::string make_response_id(std::string_view prefix);
/// Unix seconds now (OpenAI's "created").
std::int64_t unix_time_now();

/// What every object of one response carries.
struct ResponseMeta {
  std::string id;       ///< make_response_id("chatcmpl-") or ("cmpl-")
  std::int64_t created = 0;
  std::string model;
  /// "system_fingerprint"; written as null when empty.
  std::string system_fingerprint;
  /// Streaming with stream_options.include_usage: every chunk but the usage
  /// one carries "usage": null, as OpenAI sends it.
  bool include_usage = false;
};

struct Usage {
  std::uint64_t prompt_tokens = 0;
  std::uint64_t completion_tokens = 0;
};

/// {"prompt_tokens", "completion_tokens", "total_tokens"}.
boost::json::object usage_json(const Usage& usage);

/// As OpenAI and vLLM spell it: "stop", "length", "abort", "error".
std::string_view finish_reason_string(FinishReason reason) noexcept;

/// One sampled token's log-probability and its top alternatives. `token` is
/// the token's bytes (it may be part of a UTF-8 sequence): the JSON "token"
/// string has invalid sequences replaced by U+FFFD, "bytes" lists them exactly.
struct TokenLogprob {
  std::string token;
  float logprob = 0.0f;
};
struct PositionLogprobs {
  TokenLogprob sampled;
  /// The most likely tokens at this position, most likely first.
  std::vector<TokenLogprob> top;
};

/// Chat's choice "logprobs": {"content": [{"token", "logprob", "bytes",
/// "top_logprobs": [{"token", "logprob", "bytes"}]}], "refusal": null}.
boost::json::object chat_logprobs_json(std::span<const PositionLogprobs> positions);
/// Completions' choice "logprobs": {"text_offset", "token_logprobs",
/// "tokens", "top_logprobs"}; text_offset counts characters (code points)
/// from `text_offset_start` (the characters already sent, when streaming).
boost::json::object completion_logprobs_json(std::span<const PositionLogprobs> positions,
                                             std::size_t text_offset_start = 0);

/// A function call the model wrote in its reply.
struct ToolCall {
  std::string id;         ///< make_response_id("call_")
  std::string name;
  std::string arguments;  ///< JSON text: json.dumps of the call's "arguments"
};

/// A reply split as vLLM's "hermes" tool parser splits Qwen3's: each
/// <tool_call>{"name": ..., "arguments": ...}</tool_call> block (the last
/// one may lack its end tag) is a ToolCall, and the text before the first
/// block is the content (none when empty). A block that is not such JSON
/// leaves the whole reply as content and no calls, as vLLM does.
struct ReplyWithToolCalls {
  std::optional<std::string> content;
  std::vector<ToolCall> tool_calls;
};
ReplyWithToolCalls split_tool_calls(std::string_view reply);

/// Non-streaming chat answer: {"id", "object": "chat.completion", "created",
/// "model", "system_fingerprint", "choices": [{"index": 0, "message":
/// {"role": "assistant", "content", "refusal": null[, "reasoning_content"]},
/// "logprobs", "finish_reason"}], "usage"}. `logprobs`: a chat_logprobs_json
/// object or null.
boost::json::object chat_completion_json(const ResponseMeta& meta, std::string_view content,
                                         std::optional<std::string_view> reasoning_content,
                                         FinishReason finish_reason, const Usage& usage,
                                         boost::json::value logprobs = nullptr);
/// The same for a reply with tool calls: message.content is the text before
/// them (null when none), message.tool_calls [{"id", "type": "function",
/// "function": {"name", "arguments"}}], and finish_reason "tool_calls" when
/// the model stopped by itself (as vLLM answers).
boost::json::object chat_completion_json(const ResponseMeta& meta, const ReplyWithToolCalls& reply,
                                         FinishReason finish_reason, const Usage& usage,
                                         boost::json::value logprobs = nullptr);

/// What one streamed chat chunk says. The usual sequence: {role = true,
/// content = ""}, then content (or reasoning_content) deltas, then one with
/// finish_reason (its delta may be empty), then, with include_usage, the
/// usage chunk.
struct ChatDelta {
  bool role = false;  ///< delta carries "role": "assistant" (first chunk)
  std::optional<std::string_view> content;
  std::optional<std::string_view> reasoning_content;
  boost::json::value logprobs = nullptr;  ///< chat_logprobs_json of this chunk's tokens, or null
  std::optional<FinishReason> finish_reason;
};

/// {"id", "object": "chat.completion.chunk", "created", "model",
/// "system_fingerprint", "choices": [{"index": 0, "delta", "logprobs",
/// "finish_reason"}][, "usage": null]}.
boost::json::object chat_completion_chunk_json(const ResponseMeta& meta, const ChatDelta& delta);
/// The include_usage chunk: "choices": [] and "usage".
boost::json::object chat_completion_usage_chunk_json(const ResponseMeta& meta, const Usage& usage);

/// Non-streaming completion: {"id", "object": "text_completion", "created",
/// "model", "system_fingerprint", "choices": [{"index": 0, "text",
/// "logprobs", "finish_reason"}], "usage"}.
boost::json::object completion_json(const ResponseMeta& meta, std::string_view text, FinishReason finish_reason,
                                    const Usage& usage, boost::json::value logprobs = nullptr);
/// One streamed completion chunk (object "text_completion", as OpenAI sends
/// it): text delta, finish_reason on the last one.
boost::json::object completion_chunk_json(const ResponseMeta& meta, std::string_view text,
                                          std::optional<FinishReason> finish_reason = std::nullopt,
                                          boost::json::value logprobs = nullptr);
/// The include_usage chunk of a completion stream: "choices": [] and "usage".
boost::json::object completion_usage_chunk_json(const ResponseMeta& meta, const Usage& usage);

/// A streamed text chunk (chat delta content, or completion text, without
/// logprobs) as SSE, rendered from its JSON envelope serialised once per
/// request: each token's event is the envelope's prefix, the escaped text and
/// its suffix — the bytes boost::json::serialize gives for the whole chunk,
/// without building and serialising a JSON tree per token.
class TextChunkEnvelope {
 public:
  static TextChunkEnvelope chat(const ResponseMeta& meta);
  static TextChunkEnvelope completion(const ResponseMeta& meta);
  /// Appends `data: {chunk}\n\n` for `text` (repaired first if it is not
  /// valid UTF-8, as the chunk builders do).
  void append_event(std::string& out, std::string_view text) const;

 private:
  static TextChunkEnvelope around(std::string serialized);
  std::string prefix_;
  std::string suffix_;
};

/// `text` as the body of a JSON string, escaped exactly as Boost.JSON's
/// serializer escapes it (", \\, \b \f \n \r \t, other controls as \u00xx).
void append_json_escaped(std::string& out, std::string_view text);

/// {"id", "object": "model", "created", "owned_by"}, and "device" (where the
/// model runs: "cpu", "opencl:0:0 (...)"; an izwi extension) when not empty.
boost::json::object model_json(std::string_view id, std::int64_t created, std::string_view owned_by,
                               std::string_view device = {});
/// The same with izwi's "tasks": what the model serves ("chat", "completion",
/// "tts", "asr", "translation"), so a client (the web playground) can tell a
/// chat model from a Whisper without trying. OpenAI's SDK ignores the field.
boost::json::object model_json(std::string_view id, std::int64_t created, std::string_view owned_by,
                               std::span<const Task> tasks, std::string_view device = {});
/// {"object": "list", "data": [...]} of model_json objects.
boost::json::object model_list_json(boost::json::array models);

/// {"error": {"message", "type", "param", "code"}}, param and code null when absent.
boost::json::object error_json(const ApiError& error);
/// error_json serialized: the body of an error response.
std::string error_body(const ApiError& error);

/// `text` with every invalid UTF-8 sequence replaced by U+FFFD (JSON strings
/// must be valid UTF-8; Boost.JSON would write the bytes as they are).
std::string sanitize_utf8(std::string_view text);

}  // namespace izwi::server::openai

#include "izwi/server/impl/openai.hpp"
