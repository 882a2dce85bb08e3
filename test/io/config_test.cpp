// config.json / generation_config.json into typed structs, with errors that
// name the file and the key.

#include "io_test_support.hpp"

#include <izwi/io/config.hpp>

#include <string>
#include <utility>
#include <vector>

using izwi::io::ConfigView;
using izwi::io::GenerationConfig;
using izwi::io::TransformerConfig;
using izwi::io::config_error;
using izwi::io::parse_json;
using namespace izwi_io_test;

namespace {

// The keys and values of Qwen/Qwen3-0.6B's config.json.
const std::string qwen3_06b_config = R"({
  "architectures": ["Qwen3ForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151645,
  "head_dim": 128,
  "hidden_act": "silu",
  "hidden_size": 1024,
  "initializer_range": 0.02,
  "intermediate_size": 3072,
  "max_position_embeddings": 40960,
  "max_window_layers": 28,
  "model_type": "qwen3",
  "num_attention_heads": 16,
  "num_hidden_layers": 28,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-06,
  "rope_scaling": null,
  "rope_theta": 1000000,
  "sliding_window": null,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.51.0",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151936
})";

TransformerConfig parse_config(const std::string& text) {
  const auto doc = parse_json(text, "config.json");
  return TransformerConfig::from(ConfigView(doc, "config.json"));
}

// The Qwen3 config with one key replaced ("" removes it).
std::string qwen3_with(const std::string& key, const std::string& value) {
  auto doc = parse_json(qwen3_06b_config);
  std::string out = "{";
  bool first = true;
  bool replaced = false;
  for (const auto& member : doc.as_object()) {
    const std::string k(member.key());
    const izwi::io::JsonValue& v = member.value();
    std::string text;
    if (k == key) {
      replaced = true;
      if (value.empty()) continue;
      text = value;
    } else if (v.is_string()) {
      text = izwi::io::json_quote(*izwi::io::json_string(v));
    } else if (v.is_null()) {
      text = "null";
    } else if (v.is_bool()) {
      text = v.as_bool() ? "true" : "false";
    } else if (v.is_array()) {
      text = "[" + izwi::io::json_quote(*izwi::io::json_string(v.as_array()[0])) + "]";
    } else if (izwi::io::json_integer(v)) {
      text = std::to_string(*izwi::io::json_integer(v));
    } else {
      text = std::to_string(*izwi::io::json_number(v));
      if (k == "rms_norm_eps") text = "1e-06";
    }
    out += (first ? "" : ",") + izwi::io::json_quote(k) + ":" + text;
    first = false;
  }
  if (!replaced && !value.empty()) out += "," + izwi::io::json_quote(key) + ":" + value;
  return out + "}";
}

}  // namespace

TEST_CASE("config: Qwen3-0.6B's config.json reads into TransformerConfig", "[io][config]") {
  const TransformerConfig c = parse_config(qwen3_06b_config);
  CHECK(c.model_type == "qwen3");
  CHECK(c.architectures == std::vector<std::string>{"Qwen3ForCausalLM"});
  CHECK(c.hidden_size == 1024);
  CHECK(c.num_hidden_layers == 28);
  CHECK(c.num_attention_heads == 16);
  CHECK(c.num_key_value_heads == 8);
  CHECK(c.head_dim == 128);  // not hidden/heads (64): Qwen3 states it
  CHECK(c.intermediate_size == 3072);
  CHECK(c.vocab_size == 151936);
  CHECK(c.max_position_embeddings == 40960);
  CHECK(c.rope_theta == 1000000.0);
  CHECK(c.rms_norm_eps == 1e-6);
  CHECK(c.tie_word_embeddings);
  CHECK_FALSE(c.attention_bias);
  CHECK(c.hidden_act == "silu");
  CHECK(c.torch_dtype == "bfloat16");
  CHECK(c.weight_dtype() == izwi::DType::bf16);
  CHECK(c.rope_scaling_type.empty());
  CHECK_FALSE(c.use_sliding_window);
  CHECK(c.bos_token_id == 151643);
  CHECK(c.eos_token_ids == std::vector<std::int64_t>{151645});
}

TEST_CASE("config: defaults where transformers has them", "[io][config]") {
  const TransformerConfig c = parse_config(
      R"({"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 512, "vocab_size": 1000,
          "dtype": "float16", "rope_scaling": {"rope_type": "yarn", "factor": 4.0}, "eos_token_id": [1, 2]})");
  CHECK(c.num_key_value_heads == 4);
  CHECK(c.head_dim == 64);
  CHECK(c.rope_theta == 10000.0);
  CHECK(c.rms_norm_eps == 1e-6);
  CHECK_FALSE(c.tie_word_embeddings);
  CHECK(c.torch_dtype == "float16");
  CHECK(c.weight_dtype() == izwi::DType::f16);
  CHECK(c.rope_scaling_type == "yarn");
  CHECK(c.eos_token_ids == std::vector<std::int64_t>{1, 2});
  CHECK(c.max_position_embeddings == 0);
}

TEST_CASE("config: missing, ill-typed and impossible keys are named", "[io][config]") {
  const std::vector<std::tuple<std::string, std::string, std::string>> table = {
      {"hidden_size", "", "key 'hidden_size': missing"},
      {"num_hidden_layers", "null", "key 'num_hidden_layers': is null"},
      {"hidden_size", "\"1024\"", "key 'hidden_size': is a string, not an integer"},
      {"hidden_size", "1024.5", "key 'hidden_size': is the number"},
      {"hidden_size", "-1", "key 'hidden_size': value -1 is out of range for uint32"},
      {"vocab_size", "4294967296", "key 'vocab_size': value 4294967296 is out of range for uint32"},
      {"num_attention_heads", "0", "key 'num_attention_heads': must be positive"},
      {"num_key_value_heads", "5", "key 'num_key_value_heads': 5 does not divide num_attention_heads 16"},
      {"head_dim", "0", "key 'head_dim': must be positive"},
      {"rope_theta", "\"big\"", "key 'rope_theta': is a string, not a number"},
      {"rope_theta", "-1", "key 'rope_theta': must be positive"},
      {"rms_norm_eps", "0", "key 'rms_norm_eps': must be positive"},
      {"tie_word_embeddings", "1", "key 'tie_word_embeddings': is a number, not a boolean"},
      {"architectures", "\"Qwen3\"", "key 'architectures': is a string, not an array"},
      {"architectures", "[1]", "key 'architectures[0]': is a number, not a string"},
      {"eos_token_id", "\"</s>\"", "key 'eos_token_id': is a string, not an integer or a list"},
      {"rope_scaling", "{\"rope_type\": 3}", "key 'rope_scaling.rope_type': is a number, not a string"},
      {"rope_scaling", "[]", "key 'rope_scaling': is an array, not an object"},
  };
  for (const auto& [key, value, expected] : table) {
    INFO(key << " = " << value);
    const std::string text = qwen3_with(key, value);
    try {
      parse_config(text);
      FAIL("accepted");
    } catch (const config_error& e) {
      CHECK(e.file() == "config.json");
      CHECK(contains(e.what(), "config.json: " + expected));
    }
  }
}

TEST_CASE("config: head_dim absent and hidden_size not divisible by heads is refused", "[io][config]") {
  CHECK(contains(message_of<config_error>([] {
                   parse_config(R"({"hidden_size": 100, "num_hidden_layers": 1, "num_attention_heads": 3,
                                    "intermediate_size": 8, "vocab_size": 8})");
                 }),
                 "key 'head_dim': absent, and hidden_size 100 is not a multiple of num_attention_heads 3"));
}

TEST_CASE("config: a config that is not an object is refused", "[io][config]") {
  const auto doc = parse_json("[1]");
  CHECK(contains(message_of<config_error>([&] { ConfigView(doc, "config.json"); }), "key '<root>': is an array"));
}

TEST_CASE("config: ConfigView reads family-specific keys with the same checks", "[io][config]") {
  const auto doc = parse_json(R"({"n": 3, "f": 0.25, "s": "x", "list": [1, 2], "obj": {"inner": 7}, "nul": null, "e": 1e3})");
  const ConfigView v(doc, "c.json");
  CHECK(v.required<int>("n") == 3);
  CHECK(v.required<float>("f") == 0.25f);
  CHECK(v.required<std::string>("s") == "x");
  CHECK(v.required<std::vector<int>>("list") == std::vector<int>{1, 2});
  CHECK(v.object("obj").required<std::uint8_t>("inner") == 7);
  CHECK(v.optional<int>("nul", 5) == 5);
  CHECK(v.optional<int>("absent", 6) == 6);
  CHECK_FALSE(v.optional<int>("absent").has_value());
  CHECK(v.required<int>("e") == 1000);  // 1e3 is an integer value
  CHECK(v.has("n"));
  CHECK_FALSE(v.has("nul"));
  CHECK(contains(message_of<config_error>([&] { v.object("obj").required<int>("missing"); }), "key 'obj.missing': missing"));
  CHECK(contains(message_of<config_error>([&] { v.required<std::int8_t>("e"); }), "out of range for int8"));
}

TEST_CASE("config: Qwen3-0.6B's generation_config.json", "[io][config]") {
  const auto doc = parse_json(R"({"bos_token_id": 151643, "do_sample": true, "eos_token_id": [151645, 151643],
                                  "pad_token_id": 151643, "temperature": 0.6, "top_k": 20, "top_p": 0.95,
                                  "transformers_version": "4.51.0"})");
  const GenerationConfig g = GenerationConfig::from(ConfigView(doc, "generation_config.json"));
  CHECK(g.bos_token_id == 151643);
  CHECK(g.pad_token_id == 151643);
  CHECK(g.eos_token_ids == std::vector<std::int64_t>{151645, 151643});
  CHECK(g.do_sample == true);
  CHECK(g.temperature == 0.6);
  CHECK(g.top_k == 20);
  CHECK(g.top_p == 0.95);
  CHECK_FALSE(g.min_p.has_value());
  CHECK_FALSE(g.max_new_tokens.has_value());

  const auto bad = parse_json(R"({"top_p": 1.5})");
  CHECK(contains(message_of<config_error>([&] { GenerationConfig::from(ConfigView(bad, "generation_config.json")); }),
                 "generation_config.json: key 'top_p': must be in (0, 1]"));
  const auto bad_type = parse_json(R"({"top_k": "20"})");
  CHECK(contains(message_of<config_error>([&] { GenerationConfig::from(ConfigView(bad_type, "g.json")); }),
                 "key 'top_k': is a string"));
}

TEST_CASE("config: read_transformer_config reads a file and names it in errors", "[io][config]") {
  ScratchDirectory dir("config");
  write_text(dir.path() / "config.json", qwen3_06b_config);
  CHECK(izwi::io::read_transformer_config(dir.path() / "config.json").hidden_size == 1024);
  write_text(dir.path() / "broken.json", "{\"hidden_size\": 1024,}");
  CHECK(contains(message_of<izwi::io::json_error>([&] { izwi::io::read_transformer_config(dir.path() / "broken.json"); }),
                 "broken.json: invalid JSON at line 1"));
}
