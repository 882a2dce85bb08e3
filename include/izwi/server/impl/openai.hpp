#pragma once

#include <charconv>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>
#include <system_error>
#include <utility>

#include <boost/json/parse.hpp>
#include <boost/json/parse_options.hpp>
#include <boost/json/serialize.hpp>

#include "izwi/core/detail/utf8.hpp"
#include "izwi/server/detail/json_fields.hpp"
#include "izwi/server/detail/python_json.hpp"

namespace izwi::server::openai {

namespace detail {

using namespace izwi::server::detail;

/// OpenAI's limit on stop sequences.
inline constexpr std::size_t max_stop_sequences = 4;
/// Bytes of one stop sequence. A stop string is searched for after every
/// token and held back from streams while it might still match, so its
/// length is work per token on the engine thread; OpenAI documents no byte
/// limit, and real stop strings are a few words.
inline constexpr std::size_t max_stop_sequence_bytes = 1024;
/// Entries of stop_token_ids (vLLM's extension): each generated token is
/// compared with every one on the engine thread.
inline constexpr std::size_t max_stop_token_ids = 256;
/// OpenAI's limit on the legacy completions' integer logprobs.
inline constexpr std::int64_t max_completion_logprobs = 5;

inline std::uint32_t read_u32(const boost::json::value& value, const std::string& path, std::int64_t min) {
  return static_cast<std::uint32_t>(read_integer(value, path, min, std::numeric_limits<std::uint32_t>::max()));
}

inline float read_float(const boost::json::value& value, const std::string& path) {
  return static_cast<float>(read_number(value, path));
}

/// "stop": a string or an array of up to 4 strings, none empty.
inline std::vector<std::string> read_stop(const boost::json::value& value) {
  std::vector<std::string> stop;
  if (value.is_string()) {
    stop.push_back(read_string(value, "stop"));
  } else if (value.is_array()) {
    const auto& array = value.get_array();
    if (array.size() > max_stop_sequences)
      throw_invalid("stop", "'stop' holds at most " + std::to_string(max_stop_sequences) + " sequences, got " +
                                std::to_string(array.size()));
    for (std::size_t i = 0; i < array.size(); ++i) stop.push_back(read_string(array[i], json_path("stop", i)));
  } else {
    throw_type_error("stop", "a string or an array of strings", value);
  }
  for (std::size_t i = 0; i < stop.size(); ++i) {
    const std::string path = value.is_string() ? std::string("stop") : json_path("stop", i);
    if (stop[i].empty()) throw_invalid(path, "stop sequences must not be empty");
    if (stop[i].size() > max_stop_sequence_bytes)
      throw_invalid(path, "a stop sequence holds at most " + std::to_string(max_stop_sequence_bytes) + " bytes, got " +
                              std::to_string(stop[i].size()));
  }
  return stop;
}

/// Tool definitions a request may carry (OpenAI documents 128).
inline constexpr std::size_t max_tools = 128;

/// "tools": [{"type": "function", "function": {"name", ...}}, ...], each kept
/// as the text Qwen3's template writes (json.dumps, python_json.hpp).
inline std::vector<std::string> read_tools(const boost::json::value& value) {
  std::vector<std::string> tools;
  if (value.is_null()) return tools;
  const auto& array = read_array(value, "tools");
  if (array.size() > max_tools)
    throw_invalid("tools", "'tools' holds at most " + std::to_string(max_tools) + " definitions, got " +
                               std::to_string(array.size()));
  for (std::size_t i = 0; i < array.size(); ++i) {
    const std::string path = json_path("tools", i);
    const auto& tool = read_object(array[i], path);
    const auto* type = find_field(tool, "type");
    if (!type) throw_invalid(json_path(path, "type"), "'" + json_path(path, "type") + "' is required");
    if (read_string(*type, json_path(path, "type")) != "function")
      throw_invalid(json_path(path, "type"), "only tools of type 'function' are supported");
    const auto* function = find_field(tool, "function");
    if (!function) throw_invalid(json_path(path, "function"), "'" + json_path(path, "function") + "' is required");
    const std::string function_path = json_path(path, "function");
    const auto* name = find_field(read_object(*function, function_path), "name");
    const std::string name_path = json_path(function_path, "name");
    if (!name || read_string(*name, name_path).empty())
      throw_invalid(name_path, "'" + name_path + "' must be a non-empty string");
    tools.push_back(python_json_dumps(array[i]));
  }
  return tools;
}

/// "tool_choice", only beside tools: true for "auto" (tool calls parsed out
/// of the reply), false for "none" or none given. "required", a named
/// function, and "auto" with stream are refused for now.
inline bool read_tool_choice(const boost::json::object& body, bool has_tools, bool stream) {
  const auto* choice = find_field(body, "tool_choice");
  if (!choice || choice->is_null()) return false;
  if (!has_tools) throw_invalid("tool_choice", "'tool_choice' is only allowed when 'tools' are given");
  if (choice->is_string() && choice->get_string() == "none") return false;
  if (choice->is_string() && choice->get_string() == "auto") {
    if (stream)
      throw_invalid("tool_choice", "tool_choice 'auto' with stream is not supported yet: tool calls are parsed out "
                                   "of whole replies; send stream: false, or tool_choice 'none' to stream the "
                                   "reply, <tool_call> blocks included, as text");
    return true;
  }
  const std::string what = choice->is_string() ? "'" + std::string(choice->get_string()) + "'" : "a named function";
  throw_invalid("tool_choice", "tool_choice " + what +
                                   " is not supported yet (it needs decoding constrained to a call); 'auto' and "
                                   "'none' are");
}

/// "logit_bias": {"token id": bias in [-100, 100], ...}, as OpenAI takes it.
/// Whether each id is in the model's vocabulary is the engine's check.
inline std::vector<std::pair<TokenId, float>> read_logit_bias(const boost::json::value& value) {
  std::vector<std::pair<TokenId, float>> bias;
  if (value.is_null()) return bias;
  const auto& object = read_object(value, "logit_bias");
  if (object.size() > SamplingParams::max_logit_bias)
    throw_invalid("logit_bias", "'logit_bias' holds at most " + std::to_string(SamplingParams::max_logit_bias) +
                                    " entries, got " + std::to_string(object.size()));
  for (const auto& [key, entry] : object) {
    const std::string_view id(key.data(), key.size());
    const std::string path = json_path("logit_bias", id);
    TokenId token = -1;
    const auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), token);
    if (ec != std::errc{} || end != id.data() + id.size() || token < 0)
      throw_invalid(path, "'logit_bias' is keyed by token ids, got '" + std::string(id) + "'");
    const double b = read_number(entry, path);
    if (!(b >= -100.0 && b <= 100.0)) throw_invalid(path, "'" + path + "' must be in [-100, 100]");
    bias.emplace_back(token, static_cast<float>(b));
  }
  return bias;
}

/// Fields that would constrain what is generated, which izwi does not do
/// yet: refused rather than ignored, so that no client takes an
/// unconstrained reply for a constrained one. Null or default values pass.
inline void reject_unsupported_output_controls(const boost::json::object& body) {
  if (const auto* v = find_field(body, "response_format"); v && !v->is_null()) {
    const auto& format = read_object(*v, "response_format");
    const auto* type = find_field(format, "type");
    if (!type) throw_invalid("response_format.type", "'response_format.type' is required");
    const std::string name = read_string(*type, "response_format.type");
    if (name != "text")
      throw_invalid("response_format.type",
                    "response_format type '" + name + "' (structured output) is not supported yet; 'text' is");
  }
  for (const char* field : {"guided_json", "guided_regex", "guided_choice", "guided_grammar", "structured_outputs",
                            "functions", "function_call"}) {
    if (const auto* v = find_field(body, field); v && !v->is_null())
      throw_invalid(field, std::string("'") + field + "' is not supported" +
                               (std::string_view(field).starts_with("function") ? " (use 'tools')" : " yet"));
  }
}

/// Fields shared by chat and completions: sampling, streaming, user, n.
template <class Request>
void read_common_fields(const boost::json::object& body, Request& request) {
  SamplingParams& s = request.sampling;
  if (auto* v = find_field(body, "model")) request.model = read_string(*v, "model");
  if (auto* v = find_field(body, "n")) {
    const std::int64_t n = read_integer(*v, "n", 1, std::numeric_limits<std::int64_t>::max());
    if (n > 1) throw_invalid("n", "n > 1 is not supported yet");
  }
  if (auto* v = find_field(body, "stream")) request.stream = read_bool(*v, "stream");
  if (auto* v = find_field(body, "stream_options")) {
    const auto& options = read_object(*v, "stream_options");
    if (!request.stream) throw_invalid("stream_options", "'stream_options' is only allowed when 'stream' is true");
    if (auto* u = find_field(options, "include_usage"))
      request.include_usage = read_bool(*u, "stream_options.include_usage");
  }
  if (auto* v = find_field(body, "user")) request.user = read_string(*v, "user");

  if (auto* v = find_field(body, "temperature")) s.temperature = read_float(*v, "temperature");
  if (auto* v = find_field(body, "top_p")) s.top_p = read_float(*v, "top_p");
  if (auto* v = find_field(body, "top_k"))
    s.top_k = static_cast<std::int32_t>(read_integer(*v, "top_k", -1, std::numeric_limits<std::int32_t>::max()));
  if (auto* v = find_field(body, "min_p")) s.min_p = read_float(*v, "min_p");
  if (auto* v = find_field(body, "presence_penalty")) s.presence_penalty = read_float(*v, "presence_penalty");
  if (auto* v = find_field(body, "frequency_penalty")) s.frequency_penalty = read_float(*v, "frequency_penalty");
  if (auto* v = find_field(body, "repetition_penalty")) s.repetition_penalty = read_float(*v, "repetition_penalty");
  if (auto* v = find_field(body, "seed")) {
    // Any 64-bit integer, as vLLM; a negative seed keeps its bit pattern.
    if (v->is_uint64()) s.seed = v->get_uint64();
    else
      s.seed = static_cast<std::uint64_t>(read_integer(*v, "seed", std::numeric_limits<std::int64_t>::min(),
                                                       std::numeric_limits<std::int64_t>::max()));
  }
  if (auto* v = find_field(body, "stop")) s.stop = read_stop(*v);
  if (auto* v = find_field(body, "stop_token_ids")) {
    const auto& ids = read_array(*v, "stop_token_ids");
    if (ids.size() > max_stop_token_ids)
      throw_invalid("stop_token_ids", "'stop_token_ids' holds at most " + std::to_string(max_stop_token_ids) +
                                          " ids, got " + std::to_string(ids.size()));
    for (std::size_t i = 0; i < ids.size(); ++i)
      s.stop_token_ids.push_back(static_cast<TokenId>(
          read_integer(ids[i], json_path("stop_token_ids", i), 0, std::numeric_limits<TokenId>::max())));
  }
  if (auto* v = find_field(body, "logit_bias")) s.logit_bias = read_logit_bias(*v);
  if (auto* v = find_field(body, "min_tokens")) s.min_tokens = read_u32(*v, "min_tokens", 0);
  if (auto* v = find_field(body, "ignore_eos")) s.ignore_eos = read_bool(*v, "ignore_eos");
  if (auto* v = find_field(body, "special_tokens_as_text"))
    request.special_tokens_as_text = read_bool(*v, "special_tokens_as_text");
  if (auto* v = find_field(body, "priority"))
    request.priority = static_cast<std::int32_t>(read_integer(*v, "priority", std::numeric_limits<std::int32_t>::min(),
                                                              std::numeric_limits<std::int32_t>::max()));
  reject_unsupported_output_controls(body);
}

/// Message content: a string, or an array of {"type": "text", "text"} parts
/// (joined with "\n", as vLLM joins text parts).
inline std::string read_content(const boost::json::value& value, const std::string& path) {
  if (value.is_string()) return read_string(value, path);
  if (!value.is_array()) throw_type_error(path, "a string or an array of content parts", value);
  std::string text;
  const auto& parts = value.get_array();
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string part_path = json_path(path, i);
    const auto& part = read_object(parts[i], part_path);
    const auto* type = find_field(part, "type");
    if (!type) throw_invalid(json_path(part_path, "type"), "'" + json_path(part_path, "type") + "' is required");
    const std::string type_name = read_string(*type, json_path(part_path, "type"));
    if (type_name != "text")
      throw_invalid(json_path(part_path, "type"),
                    "content part type '" + type_name + "' is not supported; only 'text' parts are");
    const auto* part_text = find_field(part, "text");
    if (!part_text) throw_invalid(json_path(part_path, "text"), "'" + json_path(part_path, "text") + "' is required");
    if (i) text += '\n';
    text += read_string(*part_text, json_path(part_path, "text"));
  }
  return text;
}

inline tokenizer::ChatToolCall read_tool_call(const boost::json::value& value, const std::string& path) {
  const auto& call = read_object(value, path);
  if (auto* type = find_field(call, "type")) {
    if (read_string(*type, json_path(path, "type")) != "function")
      throw_invalid(json_path(path, "type"), "only tool calls of type 'function' are supported");
  }
  const std::string function_path = json_path(path, "function");
  const auto* function_value = find_field(call, "function");
  if (!function_value) throw_invalid(function_path, "'" + function_path + "' is required");
  const auto& function = read_object(*function_value, function_path);
  tokenizer::ChatToolCall result;
  const auto* name = find_field(function, "name");
  if (!name) throw_invalid(json_path(function_path, "name"), "'" + json_path(function_path, "name") + "' is required");
  result.name = read_string(*name, json_path(function_path, "name"));
  if (const auto* arguments = find_field(function, "arguments")) {
    // OpenAI sends the arguments as JSON text; some clients send the object itself.
    if (arguments->is_object()) result.arguments = boost::json::serialize(*arguments);
    else result.arguments = read_string(*arguments, json_path(function_path, "arguments"));
  } else {
    result.arguments = "{}";
  }
  return result;
}

inline tokenizer::ChatMessage read_message(const boost::json::value& value, const std::string& path) {
  const auto& object = read_object(value, path);
  tokenizer::ChatMessage message;
  const std::string role_path = json_path(path, "role");
  const auto* role = find_field(object, "role");
  if (!role) throw_invalid(role_path, "'" + role_path + "' is required");
  message.role = read_string(*role, role_path);
  if (message.role == "developer") message.role = "system";
  if (message.role != "system" && message.role != "user" && message.role != "assistant" && message.role != "tool")
    throw_invalid(role_path, "unknown role '" + message.role + "' in '" + role_path +
                                 "'; expected system, developer, user, assistant or tool");
  const bool assistant = message.role == "assistant";

  const std::string content_path = json_path(path, "content");
  if (const auto* content = find_field(object, "content")) message.content = read_content(*content, content_path);
  else if (!assistant) throw_invalid(content_path, "'" + content_path + "' is required for role '" + message.role + "'");

  if (assistant) {
    // vLLM's field for the reasoning part of an earlier reply; newer vLLM says "reasoning".
    for (const char* key : {"reasoning_content", "reasoning"})
      if (const auto* reasoning = find_field(object, key)) {
        message.reasoning_content = read_string(*reasoning, json_path(path, key));
        break;
      }
    if (const auto* calls = find_field(object, "tool_calls")) {
      const std::string calls_path = json_path(path, "tool_calls");
      const auto& array = read_array(*calls, calls_path);
      for (std::size_t i = 0; i < array.size(); ++i)
        message.tool_calls.push_back(read_tool_call(array[i], json_path(calls_path, i)));
    }
  }
  return message;
}

inline std::vector<TokenId> read_token_ids(const boost::json::array& array, const std::string& path) {
  if (array.empty()) throw_invalid(path, "'" + path + "' must not be empty");
  std::vector<TokenId> ids;
  ids.reserve(array.size());
  for (std::size_t i = 0; i < array.size(); ++i)
    ids.push_back(
        static_cast<TokenId>(read_integer(array[i], json_path(path, i), 0, std::numeric_limits<TokenId>::max())));
  return ids;
}

/// "prompt": a string, [string], [ids...] or [[ids...]]; batches are refused.
inline std::variant<std::string, std::vector<TokenId>> read_prompt(const boost::json::value& value) {
  if (value.is_string()) {
    std::string text = read_string(value, "prompt");
    if (text.empty()) throw_invalid("prompt", "'prompt' must not be empty");
    return text;
  }
  if (!value.is_array()) throw_type_error("prompt", "a string, an array of token ids or an array of one string", value);
  const auto& array = value.get_array();
  if (array.empty()) throw_invalid("prompt", "'prompt' must not be empty");
  if (array[0].is_string() || array[0].is_array()) {
    if (array.size() > 1) throw_invalid("prompt", "batched prompts (more than one per request) are not supported yet");
    if (array[0].is_string()) return read_prompt(array[0]);
    return read_token_ids(array[0].get_array(), "prompt[0]");
  }
  return read_token_ids(array, "prompt");
}

/// Log-probabilities as OpenAI writes them: finite, with -9999.0 standing for
/// "very unlikely" (JSON has no -Infinity).
inline double json_logprob(float logprob) noexcept {
  if (!(logprob >= -9999.0f)) return -9999.0;
  return static_cast<double>(logprob);
}

inline boost::json::array bytes_json(std::string_view token) {
  boost::json::array bytes;
  bytes.reserve(token.size());
  for (char c : token) bytes.emplace_back(static_cast<std::int64_t>(static_cast<unsigned char>(c)));
  return bytes;
}

inline boost::json::value system_fingerprint(const ResponseMeta& meta) {
  if (meta.system_fingerprint.empty()) return nullptr;
  return boost::json::string(meta.system_fingerprint);
}

/// id, object, created, model, system_fingerprint: the head of every response.
inline boost::json::object response_head(const ResponseMeta& meta, std::string_view object) {
  boost::json::object head;
  head.reserve(8);
  head["id"] = meta.id;
  head["object"] = object;
  head["created"] = meta.created;
  head["model"] = meta.model;
  head["system_fingerprint"] = system_fingerprint(meta);
  return head;
}

inline boost::json::value finish_reason_json(std::optional<FinishReason> reason) {
  if (!reason) return nullptr;
  return boost::json::string(finish_reason_string(*reason));
}

}  // namespace detail

// --- requests --------------------------------------------------------------

inline tokenizer::ChatTemplateOptions ChatCompletionRequest::template_options() const {
  tokenizer::ChatTemplateOptions options;
  options.add_generation_prompt = true;
  options.enable_thinking = enable_thinking;
  options.tools = tools;
  return options;
}

inline boost::json::object parse_json_object(std::string_view body) {
  boost::json::parse_options options;
  // Invalid UTF-8 is reported by the field reader, which can name the field.
  options.allow_invalid_utf8 = true;
  boost::system::error_code ec;
  boost::json::value value = boost::json::parse(boost::json::string_view(body.data(), body.size()), ec,
                                                boost::json::storage_ptr(), options);
  if (ec) throw ApiError::bad_request("We could not parse the JSON body of your request: it is not valid JSON.");
  if (!value.is_object())
    throw ApiError::bad_request(std::string("The request body must be a JSON object, got ") +
                                std::string(detail::json_kind(value)) + ".");
  return std::move(value.get_object());
}

inline ChatCompletionRequest parse_chat_completion_request(std::string_view body) {
  return parse_chat_completion_request(parse_json_object(body));
}

inline ChatCompletionRequest parse_chat_completion_request(const boost::json::object& body) {
  using namespace detail;
  ChatCompletionRequest request;
  const auto* messages = find_field(body, "messages");
  if (!messages) throw_invalid("messages", "'messages' is required");
  const auto& array = read_array(*messages, "messages");
  if (array.empty()) throw_invalid("messages", "'messages' must contain at least one message");
  request.messages.reserve(array.size());
  for (std::size_t i = 0; i < array.size(); ++i) request.messages.push_back(read_message(array[i], json_path("messages", i)));

  read_common_fields(body, request);
  SamplingParams& s = request.sampling;
  if (auto* v = find_field(body, "max_completion_tokens")) {
    s.max_tokens = read_u32(*v, "max_completion_tokens", 1);
    request.field_names.max_tokens = "max_completion_tokens";
  } else if (auto* v = find_field(body, "max_tokens")) {
    s.max_tokens = read_u32(*v, "max_tokens", 1);
  }
  if (auto* v = find_field(body, "logprobs")) request.logprobs = read_bool(*v, "logprobs");
  if (auto* v = find_field(body, "top_logprobs")) {
    request.top_logprobs = read_u32(*v, "top_logprobs", 0);
    if (request.top_logprobs > SamplingParams::max_logprobs)
      throw_invalid("top_logprobs", "'top_logprobs' must be an integer in [0, 20], got " +
                                        std::to_string(request.top_logprobs));
    if (!request.logprobs) throw_invalid("top_logprobs", "'top_logprobs' requires 'logprobs' to be true");
  }
  if (request.logprobs) s.logprobs = request.top_logprobs;
  if (auto* v = find_field(body, "tools")) request.tools = read_tools(*v);
  request.parse_tool_calls = read_tool_choice(body, !request.tools.empty(), request.stream);
  if (auto* v = find_field(body, "chat_template_kwargs")) {
    const auto& kwargs = read_object(*v, "chat_template_kwargs");
    if (auto* t = find_field(kwargs, "enable_thinking"))
      request.enable_thinking = read_bool(*t, "chat_template_kwargs.enable_thinking");
  }
  return request;
}

inline CompletionRequest parse_completion_request(std::string_view body) {
  return parse_completion_request(parse_json_object(body));
}

inline CompletionRequest parse_completion_request(const boost::json::object& body) {
  using namespace detail;
  CompletionRequest request;
  const auto* prompt = find_field(body, "prompt");
  if (!prompt) throw_invalid("prompt", "'prompt' is required");
  request.prompt = read_prompt(*prompt);

  read_common_fields(body, request);
  SamplingParams& s = request.sampling;
  if (auto* v = find_field(body, "max_tokens")) s.max_tokens = read_u32(*v, "max_tokens", 1);
  if (auto* v = find_field(body, "logprobs"))
    s.logprobs = static_cast<std::uint32_t>(read_integer(*v, "logprobs", 0, max_completion_logprobs));
  if (auto* v = find_field(body, "echo"); v && read_bool(*v, "echo"))
    throw_invalid("echo", "'echo' is not supported yet");
  if (auto* v = find_field(body, "suffix"); v && !read_string(*v, "suffix").empty())
    throw_invalid("suffix", "'suffix' is not supported");
  if (auto* v = find_field(body, "best_of");
      v && read_integer(*v, "best_of", 1, std::numeric_limits<std::int64_t>::max()) > 1)
    throw_invalid("best_of", "best_of > 1 is not supported yet");
  return request;
}

inline std::string_view ClientFieldNames::client_name(std::string_view engine_field) const {
  if (engine_field == "prompt_tokens") return prompt_tokens;
  if (engine_field == "max_tokens") return max_tokens;
  if (engine_field == "logprobs") return logprobs;
  return engine_field;
}

inline ApiError bad_request_from(const izwi::invalid_argument& error) {
  std::optional<std::string> param;
  if (!error.field().empty()) param = error.field();
  return ApiError::bad_request(error.what(), std::move(param));
}

// --- responses -------------------------------------------------------------

inline std::string make_response_id(std::string_view prefix) {
  static constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 generator{[] {
    std::random_device device;
    return (static_cast<std::uint64_t>(device()) << 32) ^ device();
  }()};
  std::string id(prefix);
  std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
  for (int i = 0; i < 29; ++i) id += alphabet[pick(generator)];
  return id;
}

inline std::int64_t unix_time_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

inline boost::json::object usage_json(const Usage& usage) {
  boost::json::object object;
  object["prompt_tokens"] = usage.prompt_tokens;
  object["completion_tokens"] = usage.completion_tokens;
  object["total_tokens"] = usage.prompt_tokens + usage.completion_tokens;
  return object;
}

inline std::string_view finish_reason_string(FinishReason reason) noexcept { return to_string(reason); }

inline std::string sanitize_utf8(std::string_view text) {
  // The detokenizer's repair policy (one U+FFFD per maximal invalid subpart,
  // Unicode's recommended practice), so text repaired here reads the same as
  // text the engine repaired. Engine text is already valid: this is a no-op on it.
  std::string out;
  out.reserve(text.size());
  izwi::detail::append_utf8_lossy(out, text);
  return out;
}

inline boost::json::object chat_logprobs_json(std::span<const PositionLogprobs> positions) {
  using namespace detail;
  boost::json::array content;
  content.reserve(positions.size());
  for (const PositionLogprobs& position : positions) {
    boost::json::object entry;
    entry["token"] = sanitize_utf8(position.sampled.token);
    entry["logprob"] = json_logprob(position.sampled.logprob);
    entry["bytes"] = bytes_json(position.sampled.token);
    boost::json::array top;
    top.reserve(position.top.size());
    for (const TokenLogprob& alternative : position.top) {
      boost::json::object t;
      t["token"] = sanitize_utf8(alternative.token);
      t["logprob"] = json_logprob(alternative.logprob);
      t["bytes"] = bytes_json(alternative.token);
      top.emplace_back(std::move(t));
    }
    entry["top_logprobs"] = std::move(top);
    content.emplace_back(std::move(entry));
  }
  boost::json::object object;
  object["content"] = std::move(content);
  object["refusal"] = nullptr;
  return object;
}

inline boost::json::object completion_logprobs_json(std::span<const PositionLogprobs> positions,
                                                    std::size_t text_offset_start) {
  using namespace detail;
  boost::json::array text_offset, token_logprobs, tokens, top_logprobs;
  std::size_t offset = text_offset_start;
  for (const PositionLogprobs& position : positions) {
    std::string token = sanitize_utf8(position.sampled.token);
    text_offset.emplace_back(static_cast<std::uint64_t>(offset));
    offset += izwi::detail::count_code_points(token);
    token_logprobs.emplace_back(json_logprob(position.sampled.logprob));
    tokens.emplace_back(boost::json::string(token));
    if (position.top.empty()) {
      top_logprobs.emplace_back(nullptr);
    } else {
      boost::json::object top;
      // Two ids may decode to the same text; the first (most likely) is kept.
      for (const TokenLogprob& alternative : position.top) top.emplace(sanitize_utf8(alternative.token), json_logprob(alternative.logprob));
      top_logprobs.emplace_back(std::move(top));
    }
  }
  boost::json::object object;
  object["text_offset"] = std::move(text_offset);
  object["token_logprobs"] = std::move(token_logprobs);
  object["tokens"] = std::move(tokens);
  object["top_logprobs"] = std::move(top_logprobs);
  return object;
}

inline boost::json::object chat_completion_json(const ResponseMeta& meta, std::string_view content,
                                                std::optional<std::string_view> reasoning_content,
                                                FinishReason finish_reason, const Usage& usage,
                                                boost::json::value logprobs) {
  using namespace detail;
  boost::json::object message;
  message["role"] = "assistant";
  message["content"] = sanitize_utf8(content);
  message["refusal"] = nullptr;
  if (reasoning_content) message["reasoning_content"] = sanitize_utf8(*reasoning_content);
  boost::json::object choice;
  choice["index"] = 0;
  choice["message"] = std::move(message);
  choice["logprobs"] = std::move(logprobs);
  choice["finish_reason"] = finish_reason_string(finish_reason);
  boost::json::object response = response_head(meta, "chat.completion");
  response["choices"] = boost::json::array{std::move(choice)};
  response["usage"] = usage_json(usage);
  return response;
}

inline ReplyWithToolCalls split_tool_calls(std::string_view reply) {
  using namespace detail;
  constexpr std::string_view open = "<tool_call>", close = "</tool_call>";
  ReplyWithToolCalls out;
  const std::size_t first = reply.find(open);
  if (first == std::string_view::npos) {
    out.content = std::string(reply);
    return out;
  }
  for (std::size_t at = first; at != std::string_view::npos; at = reply.find(open, at)) {
    const std::size_t body = at + open.size();
    const std::size_t end = reply.find(close, body);
    const std::string_view call = reply.substr(body, end == std::string_view::npos ? std::string_view::npos : end - body);
    boost::system::error_code ec;
    const boost::json::value parsed = boost::json::parse(boost::json::string_view(call.data(), call.size()), ec);
    const boost::json::object* object = ec ? nullptr : parsed.if_object();
    const boost::json::value* name = object ? find_field(*object, "name") : nullptr;
    const boost::json::value* arguments = object ? find_field(*object, "arguments") : nullptr;
    if (!name || !name->is_string() || !arguments) return {std::string(reply), {}};
    out.tool_calls.push_back({make_response_id("call_"), std::string(name->get_string()), python_json_dumps(*arguments)});
    at = end == std::string_view::npos ? end : end + close.size();
  }
  if (first != 0) out.content = std::string(reply.substr(0, first));
  return out;
}

inline boost::json::object chat_completion_json(const ResponseMeta& meta, const ReplyWithToolCalls& reply,
                                                FinishReason finish_reason, const Usage& usage,
                                                boost::json::value logprobs) {
  boost::json::object response =
      chat_completion_json(meta, reply.content.value_or(""), std::nullopt, finish_reason, usage, std::move(logprobs));
  if (reply.tool_calls.empty()) return response;
  boost::json::object& choice = response["choices"].as_array()[0].as_object();
  boost::json::object& message = choice["message"].as_object();
  if (!reply.content) message["content"] = nullptr;
  boost::json::array calls;
  for (const ToolCall& call : reply.tool_calls) {
    boost::json::object function;
    function["name"] = sanitize_utf8(call.name);
    function["arguments"] = sanitize_utf8(call.arguments);
    boost::json::object entry;
    entry["id"] = call.id;
    entry["type"] = "function";
    entry["function"] = std::move(function);
    calls.emplace_back(std::move(entry));
  }
  message["tool_calls"] = std::move(calls);
  if (finish_reason == FinishReason::stop) choice["finish_reason"] = "tool_calls";
  return response;
}

inline boost::json::object chat_completion_chunk_json(const ResponseMeta& meta, const ChatDelta& delta) {
  using namespace detail;
  boost::json::object d;
  if (delta.role) d["role"] = "assistant";
  if (delta.content) d["content"] = sanitize_utf8(*delta.content);
  if (delta.reasoning_content) d["reasoning_content"] = sanitize_utf8(*delta.reasoning_content);
  boost::json::object choice;
  choice["index"] = 0;
  choice["delta"] = std::move(d);
  choice["logprobs"] = delta.logprobs;
  choice["finish_reason"] = finish_reason_json(delta.finish_reason);
  boost::json::object chunk = response_head(meta, "chat.completion.chunk");
  chunk["choices"] = boost::json::array{std::move(choice)};
  if (meta.include_usage) chunk["usage"] = nullptr;
  return chunk;
}

inline boost::json::object chat_completion_usage_chunk_json(const ResponseMeta& meta, const Usage& usage) {
  boost::json::object chunk = detail::response_head(meta, "chat.completion.chunk");
  chunk["choices"] = boost::json::array();
  chunk["usage"] = usage_json(usage);
  return chunk;
}

inline boost::json::object completion_json(const ResponseMeta& meta, std::string_view text, FinishReason finish_reason,
                                           const Usage& usage, boost::json::value logprobs) {
  boost::json::object choice;
  choice["index"] = 0;
  choice["text"] = sanitize_utf8(text);
  choice["logprobs"] = std::move(logprobs);
  choice["finish_reason"] = finish_reason_string(finish_reason);
  boost::json::object response = detail::response_head(meta, "text_completion");
  response["choices"] = boost::json::array{std::move(choice)};
  response["usage"] = usage_json(usage);
  return response;
}

inline boost::json::object completion_chunk_json(const ResponseMeta& meta, std::string_view text,
                                                 std::optional<FinishReason> finish_reason,
                                                 boost::json::value logprobs) {
  boost::json::object choice;
  choice["index"] = 0;
  choice["text"] = sanitize_utf8(text);
  choice["logprobs"] = std::move(logprobs);
  choice["finish_reason"] = detail::finish_reason_json(finish_reason);
  boost::json::object chunk = detail::response_head(meta, "text_completion");
  chunk["choices"] = boost::json::array{std::move(choice)};
  if (meta.include_usage) chunk["usage"] = nullptr;
  return chunk;
}

inline boost::json::object completion_usage_chunk_json(const ResponseMeta& meta, const Usage& usage) {
  boost::json::object chunk = detail::response_head(meta, "text_completion");
  chunk["choices"] = boost::json::array();
  chunk["usage"] = usage_json(usage);
  return chunk;
}

inline boost::json::object model_json(std::string_view id, std::int64_t created, std::string_view owned_by,
                                      std::string_view device) {
  boost::json::object model;
  model["id"] = id;
  model["object"] = "model";
  model["created"] = created;
  model["owned_by"] = owned_by;
  if (!device.empty()) model["device"] = sanitize_utf8(device);
  return model;
}

inline boost::json::object model_json(std::string_view id, std::int64_t created, std::string_view owned_by,
                                      std::span<const Task> tasks, std::string_view device) {
  boost::json::object model = model_json(id, created, owned_by, device);
  boost::json::array names;
  for (Task t : tasks) names.emplace_back(izwi::to_string(t));
  model["tasks"] = std::move(names);
  return model;
}

inline boost::json::object model_list_json(boost::json::array models) {
  boost::json::object list;
  list["object"] = "list";
  list["data"] = std::move(models);
  return list;
}

inline boost::json::object error_json(const ApiError& error) {
  boost::json::object inner;
  inner["message"] = sanitize_utf8(error.what());
  inner["type"] = error.type;
  inner["param"] = error.param ? boost::json::value(sanitize_utf8(*error.param)) : boost::json::value(nullptr);
  inner["code"] = error.code ? boost::json::value(*error.code) : boost::json::value(nullptr);
  boost::json::object envelope;
  envelope["error"] = std::move(inner);
  return envelope;
}

inline std::string error_body(const ApiError& error) { return boost::json::serialize(error_json(error)); }

inline void append_json_escaped(std::string& out, std::string_view text) {
  server::detail::append_escaped_json_text(out, text);
}

namespace detail {
/// Stands for the text in the envelope: control characters no model id or
/// response id holds, serialised as \u0001\u0002\u0003.
inline constexpr std::string_view envelope_marker = "\x01\x02\x03";
inline constexpr std::string_view envelope_marker_serialized = "\\u0001\\u0002\\u0003";
}  // namespace detail

inline TextChunkEnvelope TextChunkEnvelope::around(std::string serialized) {
  TextChunkEnvelope e;
  // The text is the last string of the chunk (after id, model and
  // fingerprint): searching from the end finds our marker even in the
  // unlikely case that a model's name spells the same control characters.
  const std::size_t at = serialized.rfind(detail::envelope_marker_serialized);
  e.prefix_ = serialized.substr(0, at);
  e.suffix_ = serialized.substr(at + detail::envelope_marker_serialized.size());
  return e;
}

inline TextChunkEnvelope TextChunkEnvelope::chat(const ResponseMeta& meta) {
  ChatDelta delta;
  delta.content = detail::envelope_marker;
  return around(boost::json::serialize(chat_completion_chunk_json(meta, delta)));
}

inline TextChunkEnvelope TextChunkEnvelope::completion(const ResponseMeta& meta) {
  return around(boost::json::serialize(completion_chunk_json(meta, detail::envelope_marker)));
}

inline void TextChunkEnvelope::append_event(std::string& out, std::string_view text) const {
  out.reserve(out.size() + prefix_.size() + suffix_.size() + text.size() + 16);
  out += "data: ";
  out += prefix_;
  if (izwi::detail::is_valid_utf8(text)) {
    append_json_escaped(out, text);
  } else {
    append_json_escaped(out, sanitize_utf8(text));
  }
  out += suffix_;
  out += "\n\n";
}

}  // namespace izwi::server::openai
