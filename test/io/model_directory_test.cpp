// Hugging Face model directories: single-file and sharded weights behind one
// lookup, the JSON files beside them, and the errors for broken directories.

#include "io_test_support.hpp"

#include <izwi/io/model_directory.hpp>

#include <map>
#include <string>
#include <vector>

using namespace izwi::io;
using namespace izwi_io_test;

namespace {

const std::string small_config = R"({"model_type": "qwen3", "hidden_size": 64, "num_hidden_layers": 2,
  "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 32, "intermediate_size": 128,
  "vocab_size": 16, "tie_word_embeddings": true, "torch_dtype": "float32"})";

// Tensors named like Qwen3's, each filled with a value derived from its index.
struct ToyWeights {
  std::vector<std::string> names;
  std::vector<std::vector<std::uint64_t>> shapes;
  std::vector<std::vector<float>> values;

  ToyWeights() {
    add("model.embed_tokens.weight", {16, 64});
    for (int layer = 0; layer < 2; ++layer) {
      const std::string p = "model.layers." + std::to_string(layer) + ".";
      add(p + "self_attn.q_proj.weight", {64, 64});
      add(p + "self_attn.k_proj.weight", {32, 64});
      add(p + "mlp.up_proj.weight", {128, 64});
      add(p + "input_layernorm.weight", {64});
    }
    add("model.norm.weight", {64});
  }
  void add(std::string name, std::vector<std::uint64_t> shape) {
    std::uint64_t n = 1;
    for (auto d : shape) n *= d;
    values.push_back(random_values(n, static_cast<std::uint32_t>(names.size() + 1)));
    names.push_back(std::move(name));
    shapes.push_back(std::move(shape));
  }
  // The tensors [first, last) as a safetensors file in `path`.
  void write(const std::filesystem::path& path, std::size_t first, std::size_t last) const {
    std::vector<TensorToWrite> tensors;
    for (std::size_t i = first; i < last; ++i) tensors.push_back({names[i], izwi::DType::f32, shapes[i], as_bytes_of(values[i])});
    write_safetensors(path, tensors, {{"format", "pt"}});
  }
};

// A sharded directory: the toy weights split over three shards, plus the index.
void write_sharded(const std::filesystem::path& dir, const ToyWeights& w, const std::string& extra_map_entries = "") {
  write_text(dir / "config.json", small_config);
  const std::size_t n = w.names.size();
  const std::size_t cut1 = n / 3, cut2 = 2 * n / 3;
  const std::string shard[3] = {"model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
                                "model-00003-of-00003.safetensors"};
  w.write(dir / shard[0], 0, cut1);
  w.write(dir / shard[1], cut1, cut2);
  w.write(dir / shard[2], cut2, n);
  std::string map;
  // Listed in reverse, so shard order must come from the names, not the map.
  for (std::size_t i = n; i-- > 0;) {
    const std::string& s = shard[i < cut1 ? 0 : i < cut2 ? 1 : 2];
    map += (map.empty() ? "" : ",") + json_quote(w.names[i]) + ":" + json_quote(s);
  }
  map += extra_map_entries;
  write_text(dir / "model.safetensors.index.json", R"({"metadata": {"total_size": 12345}, "weight_map": {)" + map + "}}");
}

}  // namespace

TEST_CASE("model directory: a single-file model with its JSON files", "[io][model_directory]") {
  ScratchDirectory dir("single");
  const ToyWeights w;
  write_text(dir.path() / "config.json", small_config);
  write_text(dir.path() / "generation_config.json", R"({"eos_token_id": [3, 4], "temperature": 0.7})");
  write_text(dir.path() / "tokenizer_config.json", R"({"chat_template": "{{x}}", "model_max_length": 131072})");
  write_text(dir.path() / "tokenizer.json", R"({"model": {}})");
  w.write(dir.path() / "model.safetensors", 0, w.names.size());

  const ModelDirectory model = ModelDirectory::open(dir.path());
  const TransformerConfig c = model.transformer_config();
  CHECK(c.hidden_size == 64);
  CHECK(c.head_dim == 32);
  CHECK(c.tie_word_embeddings);
  CHECK(model.config().required<std::string>("model_type") == "qwen3");
  REQUIRE(model.generation_config().has_value());
  CHECK(model.generation_config()->eos_token_ids == std::vector<std::int64_t>{3, 4});
  CHECK(model.generation_config()->temperature == 0.7);
  REQUIRE(model.tokenizer_config_json().has_value());
  CHECK(izwi::io::json_string(*izwi::io::json_find(*model.tokenizer_config_json(), "chat_template")) == "{{x}}");
  CHECK(model.tokenizer_json_path() == dir.path() / "tokenizer.json");
  CHECK(model.weight_files().size() == 1);
  CHECK(model.tensor_count() == w.names.size());
  for (std::size_t i = 0; i < w.names.size(); ++i) CHECK(model.to_f32(w.names[i], w.shapes[i]) == w.values[i]);
  CHECK_FALSE(model.find("lm_head.weight").has_value());
}

TEST_CASE("model directory: sharded weights through the index give one lookup", "[io][model_directory]") {
  ScratchDirectory dir("sharded");
  const ToyWeights w;
  write_sharded(dir.path(), w);
  const ModelDirectory model = ModelDirectory::open(dir.path());
  REQUIRE(model.weight_files().size() == 3);
  CHECK(contains(model.weight_files()[0].name(), "model-00001-of-00003"));
  CHECK(contains(model.weight_files()[2].name(), "model-00003-of-00003"));
  CHECK_FALSE(model.generation_config().has_value());
  CHECK_FALSE(model.tokenizer_json_path().has_value());
  CHECK(model.tensor_count() == w.names.size());
  std::vector<std::string> sorted = w.names;
  std::sort(sorted.begin(), sorted.end());
  CHECK(model.tensor_names() == sorted);
  for (std::size_t i = 0; i < w.names.size(); ++i) {
    INFO(w.names[i]);
    const TensorInfo& info = model.expect_shape(w.names[i], w.shapes[i]);
    CHECK(info.name == w.names[i]);
    CHECK(model.to_f32(w.names[i]) == w.values[i]);
    CHECK(model.bytes(w.names[i]).size() == w.values[i].size() * 4);
  }
  // The last tensor lives in the third shard.
  CHECK(model.at("model.norm.weight").file == &model.weight_files()[2]);
}

TEST_CASE("model directory: missing tensors and wrong shapes name the file and tensor", "[io][model_directory]") {
  ScratchDirectory dir("errors");
  const ToyWeights w;
  write_sharded(dir.path(), w);
  const ModelDirectory model = ModelDirectory::open(dir.path());
  const std::string missing = message_of<format_error>([&] { model.at("lm_head.weight"); });
  CHECK(contains(missing, dir.path().string()));
  CHECK(contains(missing, "tensor 'lm_head.weight': missing tensor"));
  const std::string shape = message_of<format_error>([&] { model.expect_shape("model.layers.1.mlp.up_proj.weight", {64, 128}); });
  CHECK(contains(shape, "model-0000"));
  CHECK(contains(shape, "tensor 'model.layers.1.mlp.up_proj.weight': shape [128, 64], expected [64, 128]"));
  CHECK_THROWS_AS(model.to_f32("model.norm.weight", {65}), format_error);
}

TEST_CASE("model directory: broken directories are refused with the reason", "[io][model_directory]") {
  const ToyWeights w;
  SECTION("not a directory") {
    CHECK(contains(message_of<izwi::error>([] { ModelDirectory::open("/nonexistent/izwi-model"); }), "not a directory"));
  }
  SECTION("no config.json") {
    ScratchDirectory dir("noconfig");
    w.write(dir.path() / "model.safetensors", 0, 2);
    CHECK(contains(message_of<izwi::error>([&] { ModelDirectory::open(dir.path()); }), "config.json is missing"));
  }
  SECTION("no weights") {
    ScratchDirectory dir("noweights");
    write_text(dir.path() / "config.json", small_config);
    CHECK(contains(message_of<izwi::error>([&] { ModelDirectory::open(dir.path()); }), "no weights"));
  }
  SECTION("invalid config.json") {
    ScratchDirectory dir("badconfig");
    write_text(dir.path() / "config.json", "{\"hidden_size\": }");
    w.write(dir.path() / "model.safetensors", 0, 2);
    CHECK(contains(message_of<json_error>([&] { ModelDirectory::open(dir.path()); }), "config.json: invalid JSON"));
  }
  SECTION("a shard named by the index is absent") {
    ScratchDirectory dir("noshard");
    write_sharded(dir.path(), w);
    std::filesystem::remove(dir.path() / "model-00002-of-00003.safetensors");
    const std::string m = message_of<format_error>([&] { ModelDirectory::open(dir.path()); });
    CHECK(contains(m, "model.safetensors.index.json"));
    CHECK(contains(m, "shard 'model-00002-of-00003.safetensors' named by weight_map is missing"));
  }
  SECTION("the index places a tensor in a shard that lacks it") {
    ScratchDirectory dir("notinshard");
    write_sharded(dir.path(), w, R"(,"lm_head.weight":"model-00001-of-00003.safetensors")");
    const std::string m = message_of<format_error>([&] { ModelDirectory::open(dir.path()); });
    CHECK(contains(m, "model-00001-of-00003.safetensors: tensor 'lm_head.weight': missing tensor"));
  }
  SECTION("a shard path that leaves the directory") {
    ScratchDirectory dir("traversal");
    write_sharded(dir.path(), w, R"(,"evil":"../model-00001-of-00003.safetensors")");
    const std::string m = message_of<config_error>([&] { ModelDirectory::open(dir.path()); });
    CHECK(contains(m, "key 'weight_map.evil'"));
    CHECK(contains(m, "not a plain file name"));
  }
  SECTION("a weight_map value that is not a string") {
    ScratchDirectory dir("nonstring");
    write_sharded(dir.path(), w, R"(,"x": 3)");
    CHECK(contains(message_of<config_error>([&] { ModelDirectory::open(dir.path()); }), "key 'weight_map.x': is a number"));
  }
  SECTION("an index without weight_map") {
    ScratchDirectory dir("nomap");
    write_text(dir.path() / "config.json", small_config);
    write_text(dir.path() / "model.safetensors.index.json", R"({"metadata": {}})");
    CHECK(contains(message_of<config_error>([&] { ModelDirectory::open(dir.path()); }), "key 'weight_map': missing"));
  }
  SECTION("a corrupt shard") {
    ScratchDirectory dir("corrupt");
    write_sharded(dir.path(), w);
    std::filesystem::resize_file(dir.path() / "model-00003-of-00003.safetensors", 100);
    const std::string m = message_of<format_error>([&] { ModelDirectory::open(dir.path()); });
    CHECK(contains(m, "model-00003-of-00003.safetensors"));
  }
  SECTION("an ill-typed generation_config.json") {
    ScratchDirectory dir("badgen");
    write_text(dir.path() / "config.json", small_config);
    write_text(dir.path() / "generation_config.json", R"({"temperature": "hot"})");
    w.write(dir.path() / "model.safetensors", 0, 2);
    CHECK(contains(message_of<config_error>([&] { ModelDirectory::open(dir.path()); }),
                   "generation_config.json: key 'temperature': is a string, not a number"));
  }
}
