// OpenAI protocol layer: request parsing (every malformed input is a 400
// naming its field) and response builders (shapes as the official API and
// its SDK's types define them).

#include <catch2/catch.hpp>

#include <izwi/server/openai.hpp>
#include <izwi/server/sse.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <cctype>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace json = boost::json;
using namespace izwi::server;
using namespace izwi::server::openai;

namespace {

/// Parses `body` as a chat request and returns the ApiError it must raise.
template <class Parse>
ApiError error_of(Parse parse, const std::string& body) {
  try {
    parse(body);
  } catch (const ApiError& e) {
    return e;
  }
  FAIL("no ApiError for " << body);
  throw;  // unreachable
}

ApiError chat_error(const std::string& body) {
  return error_of([](const std::string& b) { (void)parse_chat_completion_request(b); }, body);
}
ApiError completion_error(const std::string& body) {
  return error_of([](const std::string& b) { (void)parse_completion_request(b); }, body);
}

/// A chat body with one user message and `extra` fields appended.
std::string chat_body(const std::string& extra = "") {
  std::string body = R"({"model":"m","messages":[{"role":"user","content":"hi"}])";
  if (!extra.empty()) body += "," + extra;
  return body + "}";
}

std::string completion_body(const std::string& extra = "") {
  std::string body = R"({"model":"m","prompt":"Once upon")";
  if (!extra.empty()) body += "," + extra;
  return body + "}";
}

/// The keys of an object in order.
std::vector<std::string> keys(const json::object& object) {
  std::vector<std::string> out;
  for (const auto& kv : object) out.emplace_back(kv.key());
  return out;
}

using Keys = std::vector<std::string>;

ChatDelta role_delta() {
  ChatDelta d;
  d.role = true;
  d.content = "";
  return d;
}
ChatDelta content_delta(std::string_view text) {
  ChatDelta d;
  d.content = text;
  return d;
}
ChatDelta finish_delta(izwi::FinishReason reason) {
  ChatDelta d;
  d.finish_reason = reason;
  return d;
}

PositionLogprobs position(std::string token, float logprob, std::vector<TokenLogprob> top = {}) {
  PositionLogprobs p;
  p.sampled.token = std::move(token);
  p.sampled.logprob = logprob;
  p.top = std::move(top);
  return p;
}
TokenLogprob alt(std::string token, float logprob) {
  TokenLogprob t;
  t.token = std::move(token);
  t.logprob = logprob;
  return t;
}

}  // namespace

TEST_CASE("chat request: the fields of a full request", "[server][openai]") {
  const auto request = parse_chat_completion_request(R"({
    "model": "qwen3", "unknown_field": {"ignored": true}, "metadata": null,
    "messages": [
      {"role": "developer", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "Hello"}, {"type": "text", "text": "there"}]},
      {"role": "assistant", "content": null, "reasoning_content": "thinking",
       "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "42"},
      {"role": "system", "content": "s", "name": "ignored"}
    ],
    "stream": true, "stream_options": {"include_usage": true},
    "max_tokens": 7, "temperature": 0.5, "top_p": 0.9, "top_k": 40, "min_p": 0.05, "seed": 1234,
    "stop": ["\n\n", "END"], "presence_penalty": 0.5, "frequency_penalty": -0.5, "repetition_penalty": 1.1,
    "logprobs": true, "top_logprobs": 3, "n": 1, "user": "u-1",
    "chat_template_kwargs": {"enable_thinking": false}, "ignore_eos": true, "min_tokens": 2
  })");
  CHECK(request.model == "qwen3");
  REQUIRE(request.messages.size() == 5);
  CHECK(request.messages[0].role == "system");
  CHECK(request.messages[0].content == "Be brief.");
  CHECK(request.messages[1].role == "user");
  CHECK(request.messages[1].content == "Hello\nthere");
  CHECK(request.messages[2].role == "assistant");
  CHECK(request.messages[2].content.empty());
  CHECK(request.messages[2].reasoning_content == std::optional<std::string>("thinking"));
  REQUIRE(request.messages[2].tool_calls.size() == 1);
  CHECK(request.messages[2].tool_calls[0].name == "f");
  CHECK(request.messages[2].tool_calls[0].arguments == R"({"a":1})");
  CHECK(request.messages[3].role == "tool");
  CHECK(request.messages[3].content == "42");
  CHECK(request.stream);
  CHECK(request.include_usage);
  CHECK(request.logprobs);
  CHECK(request.top_logprobs == 3);
  CHECK(request.user == std::optional<std::string>("u-1"));
  CHECK_FALSE(request.enable_thinking);
  CHECK_FALSE(request.template_options().enable_thinking);
  CHECK(request.template_options().add_generation_prompt);

  const auto& s = request.sampling;
  CHECK(s.max_tokens == std::optional<std::uint32_t>(7));
  CHECK(s.temperature == 0.5f);
  CHECK(s.top_p == 0.9f);
  CHECK(s.top_k == 40);
  CHECK(s.min_p == 0.05f);
  CHECK(s.seed == std::optional<std::uint64_t>(1234));
  CHECK(s.stop == std::vector<std::string>{"\n\n", "END"});
  CHECK(s.presence_penalty == 0.5f);
  CHECK(s.frequency_penalty == -0.5f);
  CHECK(s.repetition_penalty == 1.1f);
  CHECK(s.logprobs == std::optional<std::uint32_t>(3));
  CHECK(s.ignore_eos);
  CHECK(s.min_tokens == 2);
}

TEST_CASE("chat request: defaults", "[server][openai]") {
  const auto request = parse_chat_completion_request(chat_body());
  CHECK_FALSE(request.stream);
  CHECK_FALSE(request.include_usage);
  CHECK_FALSE(request.logprobs);
  CHECK(request.enable_thinking);
  CHECK_FALSE(request.user);
  // Chat generates until EOS or the context limit unless told otherwise.
  CHECK_FALSE(request.sampling.max_tokens);
  CHECK_FALSE(request.sampling.logprobs);
  CHECK(request.sampling.temperature == 1.0f);
  CHECK(request.sampling.stop.empty());

  // A missing model is left to the HTTP layer (vLLM serves its only model).
  CHECK(parse_chat_completion_request(R"({"messages":[{"role":"user","content":"x"}]})").model.empty());
  // Nulls count as absent.
  const auto nulls = parse_chat_completion_request(chat_body(R"("temperature":null,"stop":null,"n":null,"stream_options":null)"));
  CHECK(nulls.sampling.temperature == 1.0f);
}

TEST_CASE("chat request: max_completion_tokens wins over max_tokens, stop as a string", "[server][openai]") {
  CHECK(parse_chat_completion_request(chat_body(R"("max_tokens":5,"max_completion_tokens":9)")).sampling.max_tokens ==
        std::optional<std::uint32_t>(9));
  CHECK(parse_chat_completion_request(chat_body(R"("stop":"###")")).sampling.stop == std::vector<std::string>{"###"});
  // logprobs without top_logprobs asks for the sampled token only.
  CHECK(parse_chat_completion_request(chat_body(R"("logprobs":true)")).sampling.logprobs ==
        std::optional<std::uint32_t>(0));
  // Integral numbers written as floats are integers; a negative seed keeps its bits.
  CHECK(parse_chat_completion_request(chat_body(R"("max_tokens":12.0)")).sampling.max_tokens ==
        std::optional<std::uint32_t>(12));
  CHECK(parse_chat_completion_request(chat_body(R"("seed":-1)")).sampling.seed ==
        std::optional<std::uint64_t>(~std::uint64_t{0}));
  CHECK(parse_chat_completion_request(chat_body(R"("seed":18446744073709551615)")).sampling.seed ==
        std::optional<std::uint64_t>(~std::uint64_t{0}));
  CHECK(parse_chat_completion_request(chat_body(R"("temperature":0)")).sampling.is_greedy());
}

TEST_CASE("chat request: every malformed input is a 400 naming its field", "[server][openai]") {
  struct Case {
    std::string body;
    std::optional<std::string> param;
    std::string message_part;
  };
  const std::vector<Case> cases = {
      {"", std::nullopt, "not valid JSON"},
      {"{\"messages\": [", std::nullopt, "not valid JSON"},
      {"[1,2]", std::nullopt, "must be a JSON object"},
      {"\"text\"", std::nullopt, "must be a JSON object"},
      {R"({"model":"m"})", "messages", "'messages' is required"},
      {R"({"model":"m","messages":null})", "messages", "required"},
      {R"({"model":"m","messages":[]})", "messages", "at least one"},
      {R"({"model":"m","messages":"hi"})", "messages", "must be an array, got a string"},
      {R"({"model":7,"messages":[{"role":"user","content":"x"}]})", "model", "must be a string, got an integer"},
      {R"({"messages":[{"role":"user","content":"x"}, 3]})", "messages[1]", "must be an object"},
      {R"({"messages":[{"content":"x"}]})", "messages[0].role", "required"},
      {R"({"messages":[{"role":"wizard","content":"x"}]})", "messages[0].role", "unknown role 'wizard'"},
      {R"({"messages":[{"role":"function","content":"x"}]})", "messages[0].role", "unknown role"},
      {R"({"messages":[{"role":1,"content":"x"}]})", "messages[0].role", "must be a string"},
      {R"({"messages":[{"role":"user","content":"a"},{"role":"user"}]})", "messages[1].content", "required"},
      {R"({"messages":[{"role":"user","content":"a"},{"role":"user","content":5}]})", "messages[1].content",
       "a string or an array"},
      {R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]})",
       "messages[0].content[0].type", "'image_url' is not supported"},
      {R"({"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text"}]}]})",
       "messages[0].content[1].text", "required"},
      {R"({"messages":[{"role":"user","content":[{"text":"a"}]}]})", "messages[0].content[0].type", "required"},
      {R"({"messages":[{"role":"user","content":["a"]}]})", "messages[0].content[0]", "must be an object"},
      {R"({"messages":[{"role":"assistant","tool_calls":[{"function":{"arguments":"{}"}}]}]})",
       "messages[0].tool_calls[0].function.name", "required"},
      {R"({"messages":[{"role":"assistant","tool_calls":{}}]})", "messages[0].tool_calls", "must be an array"},
      {chat_body(R"("n":2)"), "n", "n > 1 is not supported yet"},
      {chat_body(R"("n":0)"), "n", ">= 1"},
      {chat_body(R"("temperature":"hot")"), "temperature", "must be a number, got a string"},
      {chat_body(R"("top_k":-2)"), "top_k", "integer"},
      {chat_body(R"("top_k":1.5)"), "top_k", "must be an integer, got a number"},
      {chat_body(R"("max_tokens":0)"), "max_tokens", "[1, 4294967295], got 0"},
      {chat_body(R"("max_tokens":-5)"), "max_tokens", "[1, 4294967295], got -5"},
      {chat_body(R"("max_tokens":1e20)"), "max_tokens", "[1, 4294967295]"},
      {chat_body(R"("max_completion_tokens":0)"), "max_completion_tokens", "[1, 4294967295]"},
      {chat_body(R"("max_tokens":"10")"), "max_tokens", "must be an integer, got a string"},
      {chat_body(R"("stream":"yes")"), "stream", "must be a boolean"},
      {chat_body(R"("stream_options":{"include_usage":true})"), "stream_options", "only allowed when 'stream'"},
      {chat_body(R"("stream":true,"stream_options":{"include_usage":1})"), "stream_options.include_usage",
       "must be a boolean"},
      {chat_body(R"("stop":["a","b","c","d","e"])"), "stop", "at most 4"},
      {chat_body(R"("stop":["a",""])"), "stop[1]", "must not be empty"},
      {chat_body(R"("stop":"")"), "stop", "must not be empty"},
      {chat_body(R"("stop":5)"), "stop", "a string or an array of strings"},
      {chat_body(R"("stop":["a",5])"), "stop[1]", "must be a string"},
      {chat_body(R"("logprobs":1)"), "logprobs", "must be a boolean"},
      {chat_body(R"("logprobs":true,"top_logprobs":21)"), "top_logprobs", "[0, 20]"},
      {chat_body(R"("top_logprobs":2)"), "top_logprobs", "requires 'logprobs'"},
      {chat_body(R"("seed":"x")"), "seed", "must be an integer"},
      {chat_body(R"("user":5)"), "user", "must be a string"},
      {chat_body(R"("chat_template_kwargs":{"enable_thinking":"no"})"), "chat_template_kwargs.enable_thinking",
       "must be a boolean"},
      {chat_body(R"("chat_template_kwargs":[])"), "chat_template_kwargs", "must be an object"},
      {chat_body(R"("ignore_eos":0)"), "ignore_eos", "must be a boolean"},
      {chat_body(R"("stop_token_ids":[1,-1])"), "stop_token_ids[1]", "integer"},
      {chat_body(R"("tools":{})"), "tools", "must be an array"},
      {chat_body(R"("tools":[{"function":{"name":"f"}}])"), "tools[0].type", "required"},
      {chat_body(R"("tools":[{"type":"retrieval","function":{"name":"f"}}])"), "tools[0].type", "type 'function'"},
      {chat_body(R"("tools":[{"type":"function"}])"), "tools[0].function", "required"},
      {chat_body(R"("tools":[{"type":"function","function":{"name":""}}])"), "tools[0].function.name", "non-empty"},
      {chat_body(R"("tools":[{"type":"function","function":{"parameters":{}}}])"), "tools[0].function.name",
       "non-empty"},
      {chat_body(R"("tool_choice":"none")"), "tool_choice", "only allowed when 'tools'"},
      {chat_body(R"("tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"auto","stream":true)"),
       "tool_choice", "'auto' with stream is not supported yet"},
      {chat_body(R"("tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required")"), "tool_choice",
       "'required' is not supported yet"},
      {chat_body(R"("tools":[{"type":"function","function":{"name":"f"}}],)"
                 R"("tool_choice":{"type":"function","function":{"name":"f"}})"),
       "tool_choice", "a named function is not supported yet"},
      {chat_body(R"("response_format":{"type":"json_object"})"), "response_format.type", "'json_object'"},
      {chat_body(R"("response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{}}})"),
       "response_format.type", "not supported yet"},
      {chat_body(R"("response_format":{})"), "response_format.type", "required"},
      {chat_body(R"("response_format":"json")"), "response_format", "must be an object"},
      {chat_body(R"("logit_bias":{"abc":5})"), "logit_bias.abc", "keyed by token ids, got 'abc'"},
      {chat_body(R"("logit_bias":{"-3":5})"), "logit_bias.-3", "keyed by token ids"},
      {chat_body(R"("logit_bias":{"7":101})"), "logit_bias.7", "[-100, 100]"},
      {chat_body(R"("logit_bias":{"7":"up"})"), "logit_bias.7", "must be a number"},
      {chat_body(R"("logit_bias":[1])"), "logit_bias", "must be an object"},
      {chat_body(R"("guided_json":{"type":"object"})"), "guided_json", "not supported yet"},
      {chat_body(R"("guided_choice":["a","b"])"), "guided_choice", "not supported yet"},
      {chat_body(R"("functions":[{"name":"f"}])"), "functions", "use 'tools'"},
  };
  for (const Case& c : cases) {
    INFO(c.body);
    const ApiError e = chat_error(c.body);
    CHECK(e.status == 400);
    CHECK(e.type == "invalid_request_error");
    CHECK(e.param == c.param);
    CHECK_THAT(e.what(), Catch::Contains(c.message_part));
  }
}

TEST_CASE("chat and completion requests leave sampling ranges to the engine, with the client's field names",
          "[server][openai]") {
  // The engine's SamplingParams::validate is the one range check; the parser
  // only reads types, so an out-of-range value parses ...
  const auto chat = parse_chat_completion_request(chat_body(R"("top_p":1.5,"max_completion_tokens":4)"));
  CHECK(chat.sampling.top_p == 1.5f);
  CHECK_THROWS_WITH(chat.sampling.validate(), Catch::Contains("top_p must be in (0, 1]"));
  // ... and carries the names the client used for the engine's fields.
  CHECK(chat.field_names.client_name("prompt_tokens") == "messages");
  CHECK(chat.field_names.client_name("max_tokens") == "max_completion_tokens");
  CHECK(chat.field_names.client_name("logprobs") == "top_logprobs");
  CHECK(chat.field_names.client_name("top_p") == "top_p");
  CHECK(parse_chat_completion_request(chat_body("")).field_names.client_name("max_tokens") == "max_tokens");
  const auto completion = parse_completion_request(completion_body(R"("min_p":2)"));
  CHECK(completion.sampling.min_p == 2.0f);
  CHECK(completion.field_names.client_name("prompt_tokens") == "prompt");
  CHECK(completion.field_names.client_name("logprobs") == "logprobs");
}

TEST_CASE("chat request: tools reach the template as json.dumps writes them, logit_bias is read, empty controls pass",
          "[server][openai]") {
  // Compact JSON from the client; the template shows the model Python's
  // json.dumps form, as transformers renders tools (the tokenizer's reference
  // test holds render_qwen3_chat with this text to transformers.js).
  const ChatCompletionRequest r = parse_chat_completion_request(chat_body(
      R"("tools":[{"type":"function","function":{"name":"get_weather","description":"Current weather",)"
      R"("parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},)"
      R"({"type":"function","function":{"name":"b","parameters":{"x":[1,2.0,1e-05,1e16,-0.5],"s":"\u00e9\n\"\u0001"}}}],)"
      R"("tool_choice":"none","response_format":{"type":"text"},"logit_bias":{},"guided_json":null)"));
  REQUIRE(r.tools.size() == 2);
  CHECK(r.tools[0] ==
        R"({"type": "function", "function": {"name": "get_weather", "description": "Current weather", )"
        R"("parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}})");
  CHECK(r.tools[1] ==
        R"({"type": "function", "function": {"name": "b", "parameters": {"x": [1, 2.0, 1e-05, 1e+16, -0.5], "s": "é\n\"\u0001"}}})");
  CHECK(r.template_options().tools == r.tools);
  CHECK_FALSE(r.parse_tool_calls);  // tool_choice "none": the reply comes back as text
  CHECK(parse_chat_completion_request(
            chat_body(R"("tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"auto")"))
            .parse_tool_calls);
  CHECK(r.sampling.logit_bias.empty());
  const ChatCompletionRequest biased = parse_chat_completion_request(chat_body(R"("logit_bias":{"42":5,"7":-100.0})"));
  CHECK(biased.sampling.logit_bias == std::vector<std::pair<izwi::TokenId, float>>{{42, 5.0f}, {7, -100.0f}});
  CHECK(parse_chat_completion_request(chat_body(R"("tools":null)")).template_options().tools.empty());
}

TEST_CASE("split_tool_calls: Qwen3's <tool_call> blocks as vLLM's hermes parser splits them", "[server][openai]") {
  // No block: all content.
  ReplyWithToolCalls r = split_tool_calls("It is sunny.");
  CHECK(r.content == std::optional<std::string>("It is sunny."));
  CHECK(r.tool_calls.empty());
  // Text, then two calls (the second without its end tag, as at max_tokens).
  r = split_tool_calls("Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", "
                       "\"days\": 2.0}}\n</tool_call>\n<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n");
  CHECK(r.content == std::optional<std::string>("Let me check.\n"));
  REQUIRE(r.tool_calls.size() == 2);
  CHECK(r.tool_calls[0].name == "get_weather");
  CHECK(r.tool_calls[0].arguments == R"({"city": "Oslo", "days": 2.0})");  // json.dumps of the arguments
  CHECK(r.tool_calls[0].id.rfind("call_", 0) == 0);
  CHECK(r.tool_calls[1].name == "now");
  CHECK(r.tool_calls[1].arguments == "{}");
  CHECK(r.tool_calls[0].id != r.tool_calls[1].id);
  // Calls only: no content.
  r = split_tool_calls("<tool_call>{\"name\": \"f\", \"arguments\": \"x\"}</tool_call>");
  CHECK_FALSE(r.content);
  REQUIRE(r.tool_calls.size() == 1);
  CHECK(r.tool_calls[0].arguments == "\"x\"");
  // A block that is not a call: the whole reply is content, no calls.
  for (const char* bad : {"a <tool_call>{not json}</tool_call>", "<tool_call>{\"arguments\": {}}</tool_call>",
                          "<tool_call>{\"name\": \"f\"}</tool_call>", "<tool_call>[1]</tool_call>",
                          "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call><tool_call>oops"}) {
    INFO(bad);
    r = split_tool_calls(bad);
    CHECK(r.content == std::optional<std::string>(bad));
    CHECK(r.tool_calls.empty());
  }
}

TEST_CASE("chat.completion with tool calls has OpenAI's shape", "[server][openai]") {
  ResponseMeta meta;
  meta.id = "chatcmpl-x";
  meta.model = "m";
  ReplyWithToolCalls reply;
  reply.tool_calls.push_back({"call_1", "get_weather", R"({"city": "Oslo"})"});
  json::object r = chat_completion_json(meta, reply, izwi::FinishReason::stop, Usage{5, 7});
  const json::object& choice = r.at("choices").as_array()[0].as_object();
  CHECK(choice.at("finish_reason") == "tool_calls");
  const json::object& message = choice.at("message").as_object();
  CHECK(message.at("role") == "assistant");
  CHECK(message.at("content").is_null());
  const json::array& calls = message.at("tool_calls").as_array();
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].at("id") == "call_1");
  CHECK(calls[0].at("type") == "function");
  CHECK(calls[0].at("function").at("name") == "get_weather");
  CHECK(calls[0].at("function").at("arguments") == R"({"city": "Oslo"})");
  // Cut by max_tokens: the reason stays "length"; content kept when there is some.
  reply.content = "Checking.";
  r = chat_completion_json(meta, reply, izwi::FinishReason::length, Usage{5, 7});
  CHECK(r.at("choices").as_array()[0].at("finish_reason") == "length");
  CHECK(r.at("choices").as_array()[0].at("message").at("content") == "Checking.");
  // No calls: the plain answer.
  r = chat_completion_json(meta, split_tool_calls("plain"), izwi::FinishReason::stop, Usage{5, 7});
  CHECK(r.at("choices").as_array()[0].at("finish_reason") == "stop");
  CHECK(r.at("choices").as_array()[0].at("message").at("content") == "plain");
  CHECK_FALSE(r.at("choices").as_array()[0].at("message").as_object().contains("tool_calls"));
}

TEST_CASE("python_json_dumps: Python's float repr and escapes", "[server][openai]") {
  using izwi::server::detail::python_json_dumps;
  auto dumps = [](const std::string& text) { return python_json_dumps(json::parse(text)); };
  // Python 3: json.dumps([...], ensure_ascii=False) of the same values.
  CHECK(dumps("[0.0, 1.0, 100.0, 0.1, 0.0001, 0.00001, 123456789012345.6, 1234567890123456.0, 1e16, 1.5e300, -2.5e-7]") ==
        "[0.0, 1.0, 100.0, 0.1, 0.0001, 1e-05, 123456789012345.6, 1234567890123456.0, 1e+16, 1.5e+300, -2.5e-07]");
  CHECK(dumps(R"({"b": true, "n": null, "i": -3, "u": 18446744073709551615, "e": {}, "a": []})") ==
        R"({"b": true, "n": null, "i": -3, "u": 18446744073709551615, "e": {}, "a": []})");
  CHECK(dumps(R"(["\t\b\f\r\u001f/\u00fc\ud83d\ude00"])") == R"(["\t\b\f\r\u001f/ü😀"])");
}

TEST_CASE("chat request: invalid UTF-8 is a 400 naming the field", "[server][openai]") {
  const std::string bad = "\xC3\x28";      // a lead byte without its continuation
  const std::string overlong = "\xC0\xAF";  // overlong '/'
  const std::string surrogate = "\xED\xA0\x80";
  for (const std::string& bytes : {bad, overlong, surrogate}) {
    const ApiError content = chat_error(R"({"messages":[{"role":"user","content":"a)" + bytes + R"("}]})");
    CHECK(content.param == std::optional<std::string>("messages[0].content"));
    CHECK_THAT(content.what(), Catch::Contains("not valid UTF-8"));
    CHECK(chat_error(R"({"messages":[{"role":"user","content":[{"type":"text","text":")" + bytes + R"("}]}]})")
              .param == std::optional<std::string>("messages[0].content[0].text"));
    CHECK(chat_error(chat_body(R"("stop":[")" + bytes + R"("])")).param == std::optional<std::string>("stop[0]"));
    CHECK(chat_error(chat_body(R"("model":")" + bytes + R"(")")).param == std::optional<std::string>("model"));
  }
  // The error body itself stays valid JSON and valid UTF-8.
  const ApiError e = chat_error(R"({"messages":[{"role":"user","content":")" + bad + R"("}]})");
  CHECK(json::parse(error_body(e)).is_object());
  // Escaped, well-formed non-ASCII text is fine.
  CHECK(parse_chat_completion_request(R"({"messages":[{"role":"user","content":"caf\u00e9 \ud83d\ude00 ü"}]})")
            .messages[0]
            .content == "caf\xC3\xA9 \xF0\x9F\x98\x80 \xC3\xBC");
  // A lone surrogate escape is not text.
  CHECK(chat_error(R"({"messages":[{"role":"user","content":"\ud800"}]})").status == 400);
}

TEST_CASE("completion request: prompt forms and fields", "[server][openai]") {
  using Prompt = std::variant<std::string, std::vector<izwi::TokenId>>;
  CHECK(parse_completion_request(completion_body()).prompt == Prompt(std::string("Once upon")));
  CHECK(parse_completion_request(R"({"prompt":["one"]})").prompt == Prompt(std::string("one")));
  CHECK(parse_completion_request(R"({"prompt":[1,2,3]})").prompt == Prompt(std::vector<izwi::TokenId>{1, 2, 3}));
  CHECK(parse_completion_request(R"({"prompt":[[4,5]]})").prompt == Prompt(std::vector<izwi::TokenId>{4, 5}));

  const auto request = parse_completion_request(completion_body(
      R"("max_tokens":30,"logprobs":2,"echo":false,"suffix":null,"best_of":1,"stream":true,)"
      R"("stream_options":{"include_usage":true},"temperature":0.7,"stop":"\n","top_k":5,"user":"x")"));
  CHECK(request.sampling.max_tokens == std::optional<std::uint32_t>(30));
  CHECK(request.sampling.logprobs == std::optional<std::uint32_t>(2));
  CHECK(request.stream);
  CHECK(request.include_usage);
  CHECK(request.sampling.temperature == 0.7f);
  CHECK(request.sampling.stop == std::vector<std::string>{"\n"});
  CHECK(request.sampling.top_k == 5);
  CHECK(request.user == std::optional<std::string>("x"));
  // OpenAI's and vLLM's default for completions.
  CHECK(parse_completion_request(completion_body()).sampling.max_tokens == std::optional<std::uint32_t>(16));
  CHECK_FALSE(parse_completion_request(completion_body()).sampling.logprobs);
}

TEST_CASE("completion request: every malformed input is a 400 naming its field", "[server][openai]") {
  struct Case {
    std::string body;
    std::optional<std::string> param;
    std::string message_part;
  };
  const std::vector<Case> cases = {
      {"nope", std::nullopt, "not valid JSON"},
      {R"({"model":"m"})", "prompt", "'prompt' is required"},
      {R"({"prompt":""})", "prompt", "must not be empty"},
      {R"({"prompt":[]})", "prompt", "must not be empty"},
      {R"({"prompt":[[]]})", "prompt[0]", "must not be empty"},
      {R"({"prompt":5})", "prompt", "a string, an array of token ids"},
      {R"({"prompt":["a","b"]})", "prompt", "batched prompts"},
      {R"({"prompt":[[1],[2]]})", "prompt", "batched prompts"},
      {R"({"prompt":[1,"a"]})", "prompt[1]", "must be an integer"},
      {R"({"prompt":[1,-3]})", "prompt[1]", "integer"},
      {R"({"prompt":[[1,2.5]]})", "prompt[0][1]", "must be an integer"},
      {R"({"prompt":[1,4294967296]})", "prompt[1]", "integer"},
      {completion_body(R"("echo":true)"), "echo", "not supported"},
      {completion_body(R"("echo":"yes")"), "echo", "must be a boolean"},
      {completion_body(R"("suffix":"end")"), "suffix", "not supported"},
      {completion_body(R"("best_of":2)"), "best_of", "not supported"},
      {completion_body(R"("n":3)"), "n", "n > 1 is not supported yet"},
      {completion_body(R"("logprobs":6)"), "logprobs", "[0, 5]"},
      {completion_body(R"("logprobs":true)"), "logprobs", "must be an integer, got a boolean"},
      {completion_body(R"("max_tokens":0)"), "max_tokens", "[1, 4294967295]"},
      {completion_body(R"("stop":["x","y","z","w","v"])"), "stop", "at most 4"},
      {completion_body(R"("stream_options":{})"), "stream_options", "only allowed"},
      {completion_body(R"("logit_bias":{"7x":-100})"), "logit_bias.7x", "keyed by token ids"},
      {completion_body(R"("response_format":{"type":"json_object"})"), "response_format.type", "not supported yet"},
      {completion_body(R"("guided_regex":"a+")"), "guided_regex", "not supported yet"},
  };
  for (const Case& c : cases) {
    INFO(c.body);
    const ApiError e = completion_error(c.body);
    CHECK(e.status == 400);
    CHECK(e.param == c.param);
    CHECK_THAT(e.what(), Catch::Contains(c.message_part));
  }
  CHECK(completion_error("{\"prompt\":\"\xFF\"}").param == std::optional<std::string>("prompt"));
}

TEST_CASE("bad_request_from turns izwi::invalid_argument into a 400 with its field", "[server][openai]") {
  const ApiError e = bad_request_from(izwi::invalid_argument("prompt", "prompt is longer than the model's context"));
  CHECK(e.status == 400);
  CHECK(e.param == std::optional<std::string>("prompt"));
  CHECK(std::string(e.what()) == "prompt is longer than the model's context");
}

// --- builders ---------------------------------------------------------------

namespace {

ResponseMeta meta(std::string prefix, bool include_usage = false) {
  ResponseMeta m;
  m.id = make_response_id(prefix);
  m.created = 1694268190;
  m.model = "qwen3";
  m.system_fingerprint = "fp_izwi";
  m.include_usage = include_usage;
  return m;
}

/// Serialises and parses back, as a client sees it.
json::object round_trip(const json::object& object) { return json::parse(json::serialize(object)).as_object(); }

}  // namespace

TEST_CASE("ids and timestamps", "[server][openai]") {
  const std::string a = make_response_id("chatcmpl-"), b = make_response_id("chatcmpl-");
  CHECK(a.rfind("chatcmpl-", 0) == 0);
  CHECK(a.size() == 9 + 29);
  CHECK(a != b);
  CHECK(make_response_id("cmpl-").rfind("cmpl-", 0) == 0);
  for (char c : a.substr(9)) CHECK(std::isalnum(static_cast<unsigned char>(c)));
  CHECK(unix_time_now() > 1700000000);
}

TEST_CASE("chat.completion has OpenAI's shape", "[server][openai]") {
  const ResponseMeta m = meta("chatcmpl-");
  const json::object r =
      round_trip(chat_completion_json(m, "Hello there!", std::nullopt, izwi::FinishReason::stop, Usage{9, 12}));
  // Golden, after OpenAI's documented example (ids and times substituted).
  const json::value golden = json::parse(R"({
    "id": ")" + m.id + R"(", "object": "chat.completion", "created": 1694268190, "model": "qwen3",
    "system_fingerprint": "fp_izwi",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello there!", "refusal": null},
                 "logprobs": null, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 9, "completion_tokens": 12, "total_tokens": 21}})");
  CHECK(json::value(r) == golden);
  CHECK(keys(r) == Keys{"id", "object", "created", "model", "system_fingerprint", "choices", "usage"});
  CHECK(keys(r.at("choices").at(0).as_object()) == Keys{"index", "message", "logprobs", "finish_reason"});

  const json::object with_reasoning =
      chat_completion_json(m, "4", std::string_view("2+2"), izwi::FinishReason::length, Usage{1, 2});
  CHECK(with_reasoning.at("choices").at(0).at("message").at("reasoning_content") == "2+2");
  CHECK(with_reasoning.at("choices").at(0).at("finish_reason") == "length");

  ResponseMeta no_fp = m;
  no_fp.system_fingerprint.clear();
  CHECK(chat_completion_json(no_fp, "", std::nullopt, izwi::FinishReason::stop, Usage{}).at("system_fingerprint").is_null());
}

TEST_CASE("finish reasons as vLLM sends them", "[server][openai]") {
  CHECK(finish_reason_string(izwi::FinishReason::stop) == "stop");
  CHECK(finish_reason_string(izwi::FinishReason::length) == "length");
  CHECK(finish_reason_string(izwi::FinishReason::abort) == "abort");
  CHECK(finish_reason_string(izwi::FinishReason::error) == "error");
}

TEST_CASE("chat chunks: role first, content deltas, finish, usage, they concatenate to the text", "[server][openai]") {
  const ResponseMeta m = meta("chatcmpl-", /*include_usage=*/true);
  const std::vector<std::string> pieces = {"Hel", "lo", ", wor", "ld \xE2\x9C\x93", "\n!"};
  std::vector<json::object> chunks;
  chunks.push_back(chat_completion_chunk_json(m, role_delta()));
  for (const auto& piece : pieces) chunks.push_back(chat_completion_chunk_json(m, content_delta(piece)));
  chunks.push_back(chat_completion_chunk_json(m, finish_delta(izwi::FinishReason::stop)));
  chunks.push_back(chat_completion_usage_chunk_json(m, Usage{4, 6}));

  std::string text;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const json::object c = round_trip(chunks[i]);
    CHECK(c.at("id") == json::value(m.id));  // one id for the whole stream
    CHECK(c.at("object") == "chat.completion.chunk");
    CHECK(c.at("created") == 1694268190);
    CHECK(keys(c) == Keys{"id", "object", "created", "model", "system_fingerprint", "choices", "usage"});
    if (i + 1 == chunks.size()) break;
    CHECK(c.at("usage").is_null());
    const json::object& choice = c.at("choices").at(0).as_object();
    CHECK(keys(choice) == Keys{"index", "delta", "logprobs", "finish_reason"});
    const json::object& delta = choice.at("delta").as_object();
    if (i == 0) CHECK(delta.at("role") == "assistant");
    else CHECK_FALSE(delta.contains("role"));
    if (auto* content = delta.if_contains("content")) text += std::string(content->get_string());
    CHECK(choice.at("finish_reason") == (i + 2 == chunks.size() ? json::value("stop") : json::value(nullptr)));
  }
  std::string expected;
  for (const auto& piece : pieces) expected += piece;
  CHECK(text == expected);
  CHECK(chunks[chunks.size() - 2].at("choices").at(0).at("delta").as_object().empty());

  const json::object usage = round_trip(chunks.back());
  CHECK(usage.at("choices").as_array().empty());
  CHECK(usage.at("usage") == json::parse(R"({"prompt_tokens":4,"completion_tokens":6,"total_tokens":10})"));

  // Without include_usage the chunks carry no usage field at all.
  CHECK_FALSE(chat_completion_chunk_json(meta("chatcmpl-"), content_delta("x")).contains("usage"));
  // Reasoning deltas go apart from content.
  ChatDelta thinking;
  thinking.reasoning_content = "hmm";
  const json::object reasoning = chat_completion_chunk_json(m, thinking);
  CHECK(reasoning.at("choices").at(0).at("delta") == json::parse(R"({"reasoning_content":"hmm"})"));
}

TEST_CASE("chat logprobs: OpenAI's shape, bytes exact, token text valid UTF-8", "[server][openai]") {
  // "é" split over two tokens: each is half a UTF-8 sequence.
  const std::vector<PositionLogprobs> positions = {
      position("Hello", -0.31f, {alt("Hello", -0.31f), alt("Hi", -1.5f)}),
      position("\xC3", -0.5f),
      position("\xA9", -std::numeric_limits<float>::infinity()),
  };
  const json::object lp = round_trip(chat_logprobs_json(positions));
  CHECK(keys(lp) == Keys{"content", "refusal"});
  CHECK(lp.at("refusal").is_null());
  const json::array& content = lp.at("content").as_array();
  REQUIRE(content.size() == 3);
  CHECK(content[0] == json::parse(R"({"token":"Hello","logprob":-0.3100000023841858,"bytes":[72,101,108,108,111],
      "top_logprobs":[{"token":"Hello","logprob":-0.3100000023841858,"bytes":[72,101,108,108,111]},
                      {"token":"Hi","logprob":-1.5,"bytes":[72,105]}]})"));
  CHECK(keys(content[0].as_object()) == Keys{"token", "logprob", "bytes", "top_logprobs"});
  CHECK(content[1].at("token") == "\xEF\xBF\xBD");
  CHECK(content[1].at("bytes") == json::parse("[195]"));
  CHECK(content[1].at("top_logprobs").as_array().empty());
  CHECK(content[2].at("bytes") == json::parse("[169]"));
  CHECK(content[2].at("logprob") == -9999.0);  // OpenAI's "very unlikely"

  // In a response.
  const json::object r = chat_completion_json(meta("chatcmpl-"), "Hello", std::nullopt, izwi::FinishReason::stop,
                                              Usage{1, 1}, chat_logprobs_json(positions));
  CHECK(r.at("choices").at(0).at("logprobs").at("content").as_array().size() == 3);
}

TEST_CASE("text_completion and its chunks have OpenAI's shape", "[server][openai]") {
  const ResponseMeta m = meta("cmpl-");
  const json::object r = round_trip(completion_json(m, "a time", izwi::FinishReason::length, Usage{3, 2}));
  const json::value golden = json::parse(R"({
    "id": ")" + m.id + R"(", "object": "text_completion", "created": 1694268190, "model": "qwen3",
    "system_fingerprint": "fp_izwi",
    "choices": [{"index": 0, "text": "a time", "logprobs": null, "finish_reason": "length"}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}})");
  CHECK(json::value(r) == golden);
  CHECK(keys(r.at("choices").at(0).as_object()) == Keys{"index", "text", "logprobs", "finish_reason"});

  const ResponseMeta streaming = meta("cmpl-", true);
  std::string text;
  for (const char* piece : {" a", " ti", "me"}) {
    const json::object c = round_trip(completion_chunk_json(streaming, piece));
    CHECK(c.at("object") == "text_completion");
    CHECK(c.at("usage").is_null());
    CHECK(c.at("choices").at(0).at("finish_reason").is_null());
    text += std::string(c.at("choices").at(0).at("text").get_string());
  }
  CHECK(text == " a time");
  const json::object last = completion_chunk_json(streaming, "", izwi::FinishReason::stop);
  CHECK(last.at("choices").at(0).at("finish_reason") == "stop");
  const json::object usage = completion_usage_chunk_json(streaming, Usage{3, 3});
  CHECK(usage.at("choices").as_array().empty());
  CHECK(usage.at("usage").at("total_tokens") == 6);
}

TEST_CASE("completion logprobs: tokens, token_logprobs, top_logprobs, text_offset", "[server][openai]") {
  const std::vector<PositionLogprobs> positions = {
      position(" a", -0.25f, {alt(" a", -0.25f), alt(" the", -2.0f)}),
      position(" caf\xC3\xA9", -1.0f, {alt(" caf\xC3\xA9", -1.0f)}),
      position("!", -0.5f),
  };
  const json::object lp = round_trip(completion_logprobs_json(positions, 10));
  CHECK(keys(lp) == Keys{"text_offset", "token_logprobs", "tokens", "top_logprobs"});
  // Offsets count characters: " café" is 5 of them.
  CHECK(lp.at("text_offset") == json::parse("[10, 12, 17]"));
  CHECK(lp.at("token_logprobs") == json::parse("[-0.25, -1.0, -0.5]"));
  CHECK(lp.at("tokens") == json::parse(R"([" a", " café", "!"])"));
  CHECK(lp.at("top_logprobs") == json::parse(R"([{" a": -0.25, " the": -2.0}, {" café": -1.0}, null])"));
}

TEST_CASE("model objects and list", "[server][openai]") {
  json::array data;
  data.push_back(model_json("qwen3-0.6b", 1700000000, "izwi"));
  data.push_back(model_json("whisper", 1700000001, "izwi"));
  const json::object list = round_trip(model_list_json(std::move(data)));
  CHECK(json::value(list) == json::parse(R"({"object":"list","data":[
      {"id":"qwen3-0.6b","object":"model","created":1700000000,"owned_by":"izwi"},
      {"id":"whisper","object":"model","created":1700000001,"owned_by":"izwi"}]})"));
  CHECK(keys(list) == Keys{"object", "data"});
  CHECK(keys(list.at("data").at(0).as_object()) == Keys{"id", "object", "created", "owned_by"});

  // izwi's "tasks" (what /v1/models lists): in the order the model gives them.
  const std::vector<izwi::Task> whisper_tasks{izwi::Task::asr, izwi::Task::translation};
  const json::object whisper = round_trip(model_json("whisper", 1700000001, "izwi", whisper_tasks));
  CHECK(keys(whisper) == Keys{"id", "object", "created", "owned_by", "tasks"});
  CHECK(whisper.at("tasks") == json::parse(R"(["asr", "translation"])"));
  CHECK(round_trip(model_json("q", 1, "izwi", std::vector<izwi::Task>{})).at("tasks") == json::array());
}

TEST_CASE("error envelope", "[server][openai]") {
  const json::value with_param = json::parse(error_body(ApiError::bad_request("'temperature' is bad", "temperature")));
  CHECK(with_param == json::parse(R"({"error":{"message":"'temperature' is bad","type":"invalid_request_error",
                                      "param":"temperature","code":null}})"));
  CHECK(keys(with_param.at("error").as_object()) == Keys{"message", "type", "param", "code"});
  const json::value not_found = json::parse(error_body(ApiError::not_found("The model 'x' does not exist", "model_not_found")));
  CHECK(not_found.at("error").at("param").is_null());
  CHECK(not_found.at("error").at("code") == "model_not_found");
  CHECK(not_found.at("error").at("type") == "not_found_error");
  // A parse failure's error, end to end.
  const json::value parse_error = json::parse(error_body(chat_error("{")));
  CHECK(parse_error.at("error").at("param").is_null());
  CHECK(parse_error.at("error").at("type") == "invalid_request_error");
}

TEST_CASE("sanitize_utf8 replaces invalid sequences only", "[server][openai]") {
  CHECK(sanitize_utf8("plain") == "plain");
  CHECK(sanitize_utf8("caf\xC3\xA9") == "caf\xC3\xA9");
  CHECK(sanitize_utf8("a\xFF" "b") == "a\xEF\xBF\xBD" "b");
  // The detokenizer's policy (Unicode's "maximal subpart", what Python's
  // errors="replace" does): a truncated sequence is one U+FFFD, not one per byte.
  CHECK(sanitize_utf8("\xE2\x9C") == "\xEF\xBF\xBD");
  CHECK(sanitize_utf8("\xE2\x9C" "a\xED\xA0\x80") == "\xEF\xBF\xBD" "a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  // Builders never emit invalid UTF-8, whatever the caller hands them.
  const std::string body = json::serialize(completion_chunk_json(meta("cmpl-"), "\xF0\x9F"));
  CHECK(json::parse(body).at("choices").at(0).at("text") == "\xEF\xBF\xBD");
}

TEST_CASE("stop sequences and stop_token_ids are capped, the cap named", "[server][openai]") {
  auto ids = [](std::size_t n) {
    std::string list;
    for (std::size_t i = 0; i < n; ++i) list += (i ? "," : "") + std::to_string(i);
    return "[" + list + "]";
  };
  const ApiError too_many = chat_error(chat_body(R"("stop_token_ids":)" + ids(257)));
  CHECK(too_many.status == 400);
  CHECK(too_many.param == std::optional<std::string>("stop_token_ids"));
  CHECK_THAT(too_many.what(), Catch::Contains("at most 256 ids, got 257"));
  CHECK(parse_chat_completion_request(chat_body(R"("stop_token_ids":)" + ids(256))).sampling.stop_token_ids.size() ==
        256u);

  const std::string long_stop(1025, 'x');
  const ApiError too_long = chat_error(chat_body(R"("stop":["ok",")" + long_stop + R"("])"));
  CHECK(too_long.status == 400);
  CHECK(too_long.param == std::optional<std::string>("stop[1]"));
  CHECK_THAT(too_long.what(), Catch::Contains("at most 1024 bytes, got 1025"));
  CHECK(chat_error(chat_body(R"("stop":")" + long_stop + R"(")")).param == std::optional<std::string>("stop"));
  CHECK(parse_chat_completion_request(chat_body(R"("stop":")" + long_stop.substr(1) + R"(")")).sampling.stop.size() ==
        1u);
}

TEST_CASE("SSE text chunks from the pre-serialised envelope equal serialising the whole chunk",
          "[server][openai][sse]") {
  // Every ASCII byte alone, multilingual text, JSON's special characters, and
  // invalid UTF-8 (repaired the same way on both paths).
  std::vector<std::string> texts;
  for (int c = 1; c < 128; ++c) texts.emplace_back(1, static_cast<char>(c));
  texts.emplace_back(std::string("\0", 1));
  texts.emplace_back("Hello, \"world\"\\ / \u00e9\u4e2d\u6587 \U0001F600\t\r\n\x7f");
  texts.emplace_back("</script><|im_end|> \u2028\u2029");
  texts.emplace_back("\xff\xfe broken \xe4\xb8 utf-8 \xc3");
  texts.emplace_back("");
  for (bool include_usage : {false, true}) {
    ResponseMeta meta;
    meta.id = make_response_id("chatcmpl-");
    meta.created = 1700000000;
    meta.model = "model \"quoted\" \u00fc \x01\x02\x03";  // even the marker's characters
    meta.include_usage = include_usage;
    const TextChunkEnvelope chat = TextChunkEnvelope::chat(meta);
    const TextChunkEnvelope completion = TextChunkEnvelope::completion(meta);
    for (const std::string& text : texts) {
      INFO("include_usage " << include_usage << ", text of " << text.size() << " bytes");
      ChatDelta delta;
      delta.content = std::string_view(text);
      std::string fast;
      chat.append_event(fast, text);
      CHECK(fast == sse::data(json::serialize(chat_completion_chunk_json(meta, delta))));
      fast.clear();
      completion.append_event(fast, text);
      CHECK(fast == sse::data(json::serialize(completion_chunk_json(meta, text))));
    }
  }
}
