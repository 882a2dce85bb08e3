// ModelRegistry (ids, the models directory, load/unload life cycle, merged
// metrics) and the stock CPU loader on a real random-weight Qwen3 checkpoint.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <latch>
#include <set>
#include <thread>

#include "izwi/server/model_loader.hpp"
#include "izwi/server/model_registry.hpp"
#include "models/random_qwen3.hpp"

using namespace izwi;
using namespace izwi::server;
using namespace std::chrono_literals;

namespace {

/// A model that serves nothing: the registry only needs its identity,
/// metrics and shutdown.
class FakeEngine final : public AnyEngine {
 public:
  explicit FakeEngine(std::string id, std::atomic<int>* shutdowns = nullptr) : shutdowns_(shutdowns) {
    info_.id = std::move(id);
    info_.tasks = {Task::chat};
  }
  const ModelInfo& info() const noexcept override { return info_; }
  std::vector<TokenId> encode(std::string_view) const override { return {1}; }
  std::string render_chat(std::span<const tokenizer::ChatMessage>, const tokenizer::ChatTemplateOptions&) const override {
    return {};
  }
  std::string token_bytes(TokenId) const override { return {}; }
  std::size_t vocab_size() const noexcept override { return 1; }
  ResponseStream submit(Request) override { throw unavailable("fake"); }
  std::string metrics_text() const override {
    return "# HELP izwi:num_requests_running Running.\n# TYPE izwi:num_requests_running gauge\n"
           "izwi:num_requests_running{model_name=\"" + info_.id + "\"} 0\n"
           "# HELP izwi:prompt_tokens_total Prompt tokens.\n# TYPE izwi:prompt_tokens_total counter\n"
           "izwi:prompt_tokens_total{model_name=\"" + info_.id + "\"} 3\n";
  }
  EngineStatus status() const override { return {}; }
  void shutdown(std::chrono::steady_clock::time_point) override {
    if (shutdowns_) ++*shutdowns_;
  }

 private:
  ModelInfo info_;
  std::atomic<int>* shutdowns_;
};

/// A models directory with two servable entries and some that are not.
struct ModelsDir {
  std::filesystem::path root = std::filesystem::temp_directory_path() / ("izwi-models-" + std::to_string(::getpid()));
  ModelsDir() {
    std::filesystem::remove_all(root);
    std::filesystem::create_directories(root / "tiny");
    std::ofstream(root / "tiny" / "config.json") << "{}";
    std::ofstream(root / "quant.gguf") << "GGUF";
    std::filesystem::create_directories(root / "not-a-model");
    std::ofstream(root / "notes.txt") << "hello";
    std::filesystem::create_directories(root.parent_path() / "outside-model");
    std::ofstream(root.parent_path() / "outside-model" / "config.json") << "{}";
  }
  ~ModelsDir() { std::filesystem::remove_all(root); }
};

/// Waits for a Done callback.
struct Outcome {
  std::promise<std::optional<ApiError>> promise;
  ModelRegistry::Done callback() {
    return [this](std::optional<ApiError> e) { promise.set_value(std::move(e)); };
  }
  std::optional<ApiError> get() {
    auto future = promise.get_future();
    REQUIRE(future.wait_for(30s) == std::future_status::ready);
    return future.get();
  }
};

ModelRegistry::Loader fake_loader(std::atomic<int>* shutdowns = nullptr) {
  return [shutdowns](const std::string& id, const std::filesystem::path&) {
    return std::make_unique<FakeEngine>(id, shutdowns);
  };
}

}  // namespace

TEST_CASE("model ids resolve only to plain entries of the models directory", "[server][registry]") {
  ModelsDir dir;
  ModelRegistry registry(fake_loader(), dir.root);
  CHECK(registry.resolve("tiny") == dir.root / "tiny");
  CHECK(registry.resolve("quant") == dir.root / "quant.gguf");
  for (const char* bad : {"", "../outside-model", "..", ".", "/etc", "a/b", "a\\b", ".hidden", "c:tiny"}) {
    INFO(bad);
    try {
      registry.resolve(bad);
      FAIL("resolved");
    } catch (const ApiError& e) {
      CHECK(e.status == 400);
      CHECK(e.param == std::optional<std::string>("id"));
    }
  }
  for (const char* absent : {"not-a-model", "notes.txt", "notes", "outside-model", "missing"}) {
    INFO(absent);
    try {
      registry.resolve(absent);
      FAIL("resolved");
    } catch (const ApiError& e) {
      CHECK(e.status == 404);
      CHECK(e.code == std::optional<std::string>("model_not_found"));
    }
  }
  ModelRegistry no_dir(fake_loader());
  CHECK_THROWS_AS(no_dir.resolve("tiny"), ApiError);
}

TEST_CASE("load, refuse a second load, list, unload", "[server][registry]") {
  ModelsDir dir;
  std::atomic<int> shutdowns{0};
  ModelRegistry registry(fake_loader(&shutdowns), dir.root);
  CHECK(registry.empty());
  CHECK(registry.ready());

  auto entries = registry.entries();
  REQUIRE(entries.size() == 2u);
  CHECK(entries[0].id == "quant");
  CHECK(entries[0].state == ModelState::available);
  CHECK(entries[1].id == "tiny");

  Outcome loaded;
  registry.load("tiny", loaded.callback());
  CHECK_FALSE(loaded.get().has_value());
  REQUIRE(registry.find("tiny") != nullptr);
  CHECK(registry.find("tiny")->info().id == "tiny");
  CHECK(registry.entry("tiny")->state == ModelState::loaded);
  CHECK(registry.entry("tiny")->status.has_value());
  CHECK(registry.loaded().size() == 1u);

  Outcome again;
  registry.load("tiny", again.callback());
  const auto refusal = again.get();
  REQUIRE(refusal.has_value());
  CHECK(refusal->status == 409);

  Outcome traversal;
  registry.load("../outside-model", traversal.callback());
  REQUIRE(traversal.get().has_value());
  CHECK(registry.find("outside-model") == nullptr);

  Outcome unloaded;
  registry.unload("tiny", 0ms, unloaded.callback());
  CHECK(registry.find("tiny") == nullptr);  // at once: new requests get 404
  CHECK_FALSE(unloaded.get().has_value());
  CHECK(shutdowns == 1);
  CHECK(registry.entry("tiny")->state == ModelState::available);

  Outcome not_loaded;
  registry.unload("tiny", 0ms, not_loaded.callback());
  const auto missing = not_loaded.get();
  REQUIRE(missing.has_value());
  CHECK(missing->status == 404);
}

TEST_CASE("a failed load is reported and can be retried", "[server][registry]") {
  ModelsDir dir;
  std::atomic<int> attempts{0};
  ModelRegistry registry(
      [&](const std::string& id, const std::filesystem::path& path) -> std::unique_ptr<AnyEngine> {
        if (++attempts == 1) throw izwi::error(path.string() + ": truncated checkpoint");
        return std::make_unique<FakeEngine>(id);
      },
      dir.root);
  Outcome first;
  registry.load("quant", first.callback());
  const auto failure = first.get();
  REQUIRE(failure.has_value());
  CHECK(std::string(failure->what()).find("truncated checkpoint") != std::string::npos);
  CHECK(registry.entry("quant")->state == ModelState::failed);
  CHECK(registry.entry("quant")->error.find("truncated") != std::string::npos);
  CHECK(registry.find("quant") == nullptr);

  Outcome second;
  registry.load("quant", second.callback());
  CHECK_FALSE(second.get().has_value());
  CHECK(registry.find("quant") != nullptr);
}

TEST_CASE("not ready while a startup model loads", "[server][registry]") {
  std::latch release(1);
  ModelRegistry registry([&](const std::string& id, const std::filesystem::path&) -> std::unique_ptr<AnyEngine> {
    release.wait();
    return std::make_unique<FakeEngine>(id);
  });
  Outcome done;
  registry.load_path("/models/Qwen3-0.6B/", std::nullopt, done.callback());
  CHECK_FALSE(registry.ready());
  CHECK(registry.entry("Qwen3-0.6B")->state == ModelState::loading);
  CHECK(registry.find("Qwen3-0.6B") == nullptr);
  CHECK_THROWS_AS(registry.load_path("/elsewhere/Qwen3-0.6B"), izwi::invalid_argument);
  release.count_down();
  CHECK_FALSE(done.get().has_value());
  CHECK(registry.ready());
  CHECK(registry.find("Qwen3-0.6B") != nullptr);

  Outcome gguf;
  registry.load_path("/models/qwen3-q8_0.gguf", std::nullopt, gguf.callback());
  CHECK_FALSE(gguf.get().has_value());
  CHECK(registry.find("qwen3-q8_0") != nullptr);
}

TEST_CASE("metrics of several models merge into one valid exposition", "[server][registry]") {
  ModelRegistry registry(fake_loader());
  Outcome a, b;
  registry.load_path("/m/alpha", std::nullopt, a.callback());
  registry.load_path("/m/beta", std::nullopt, b.callback());
  a.get();
  b.get();
  const std::string text = registry.metrics_text();
  auto count = [&](std::string_view needle) {
    std::size_t n = 0;
    for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
    return n;
  };
  CHECK(count("# HELP izwi:num_requests_running ") == 1u);
  CHECK(count("# TYPE izwi:prompt_tokens_total ") == 1u);
  CHECK(count("izwi:prompt_tokens_total{model_name=\"alpha\"} 3") == 1u);
  CHECK(count("izwi:prompt_tokens_total{model_name=\"beta\"} 3") == 1u);
  // Samples of a family follow its header, not another family's.
  CHECK(text.find("izwi:num_requests_running{model_name=\"beta\"}") < text.find("# HELP izwi:prompt_tokens_total"));
}

TEST_CASE("the CPU loader serves a random-weight Qwen3 checkpoint", "[server][loader]") {
  if (!testing::have_qwen3_tokenizer()) return;
  const auto dir = testing::random_qwen3();
  CpuLoaderSettings settings;
  settings.num_threads = 1;
  settings.kv_cache_bytes = 64u << 20;

  for (const auto& path : {dir, dir / "model.gguf"}) {
    INFO(path);
    auto model = load_cpu_model("tiny", path, settings);
    CHECK(model->info().id == "tiny");
    CHECK(model->info().untrained);
    CHECK(model->serves(Task::chat));
    CHECK(model->info().max_model_len > 0);
    const std::vector<tokenizer::ChatMessage> messages{{"user", "Hello", std::nullopt, {}}};
    const std::string prompt = model->render_chat(messages, {.add_generation_prompt = true});
    CHECK(prompt.find("<|im_start|>user\nHello<|im_end|>") != std::string::npos);
    Request request;
    request.prompt_tokens = model->encode(prompt);
    request.sampling.max_tokens = 5;
    request.sampling.temperature = 0.0f;
    request.sampling.ignore_eos = true;
    ResponseStream stream = model->submit(std::move(request));
    std::size_t tokens = 0;
    while (auto chunk = stream.next()) tokens += chunk->token_ids.size();
    CHECK(tokens == 5u);
    CHECK(model->metrics_text().find("model_name=\"tiny\"") != std::string::npos);
    model->shutdown(std::chrono::steady_clock::now() + 1s);
    CHECK(model->status().num_kv_blocks_used == 0);
    CHECK(model->status().draining);
    CHECK_THROWS_AS(model->submit(Request{}), izwi::unavailable);
  }
}

TEST_CASE("the CPU loader names what it cannot serve", "[server][loader]") {
  ModelsDir dir;
  CpuLoaderSettings settings;
  auto message_of = [&](const std::filesystem::path& path) {
    try {
      load_cpu_model("x", path, settings);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("loaded");
  };
  CHECK(message_of(dir.root / "missing").find("no such file") != std::string::npos);
  CHECK(message_of(dir.root / "notes.txt").find("neither a model directory nor a .gguf") != std::string::npos);
  CHECK(message_of(dir.root / "not-a-model").find("no config.json") != std::string::npos);
  std::ofstream(dir.root / "tiny" / "config.json") << R"({"model_type": "llama", "hidden_size": 8})";
  const std::string llama = message_of(dir.root / "tiny");
  INFO(llama);
  CHECK((llama.find("llama") != std::string::npos || llama.find("config.json") != std::string::npos));
  CHECK(message_of(dir.root / "quant.gguf").find("quant.gguf") != std::string::npos);
}

TEST_CASE("state() tells a loading model from an unknown one", "[server][registry]") {
  std::latch release(1);
  ModelRegistry registry([&](const std::string& id, const std::filesystem::path&) -> std::unique_ptr<AnyEngine> {
    release.wait();
    return std::make_unique<FakeEngine>(id);
  });
  Outcome done;
  registry.load_path("/models/slow", std::nullopt, done.callback());
  CHECK(registry.state("slow") == ModelState::loading);
  CHECK_FALSE(registry.state("other").has_value());
  release.count_down();
  done.get();
  CHECK(registry.state("slow") == ModelState::loaded);
}
