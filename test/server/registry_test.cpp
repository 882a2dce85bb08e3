// ModelRegistry (ids, the models directory, load/unload life cycle, merged
// metrics) and the stock CPU loader on a real random-weight Qwen3 checkpoint.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <future>
#include <latch>
#include <set>
#include <thread>

#include "izwi/io/gguf.hpp"
#include "izwi/io/safetensors.hpp"
#include "izwi/models/qwen3_tts.hpp"
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

  Outcome ggml;  // whisper.cpp's files: served without ".bin"
  registry.load_path("/models/ggml-base.en.bin", std::nullopt, ggml.callback());
  CHECK_FALSE(ggml.get().has_value());
  CHECK(registry.find("ggml-base.en") != nullptr);
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

namespace {

/// This process's anonymous resident memory (/proc/self/status RssAnon), bytes.
std::size_t resident_anonymous_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("RssAnon:", 0) == 0) return std::stoull(line.substr(8)) * 1024;
  FAIL("no RssAnon in /proc/self/status");
  return 0;
}

}  // namespace

TEST_CASE("the CPU loader commits the paged KV pool when the model loads", "[server][loader]") {
  if (!testing::have_qwen3_tokenizer()) return;
  const auto dir = testing::random_qwen3();
  CpuLoaderSettings settings;
  settings.num_threads = 1;
  // A loaded tiny model holds about 350 MB resident besides its pool (the
  // tokenizer, the executor's buffers), whatever the pool's size: 1 GiB
  // tells a committed pool (about 1.4 GB in all) from a lazy one.
  settings.kv_cache_bytes = std::size_t{1} << 30;
  const std::size_t before = resident_anonymous_bytes();
  auto model = load_cpu_model("tiny", dir, settings);
  const std::size_t after = resident_anonymous_bytes();
  INFO("resident before " << before << " B, after " << after << " B");
  CHECK(after >= before + settings.kv_cache_bytes * 9 / 10);
}

TEST_CASE("the CPU loader serves a random Qwen3-TTS, as a directory and as llama.cpp's GGUF pair",
          "[server][loader][speech]") {
  if (!testing::have_qwen3_tokenizer()) return;
#if !defined(IZWI_MAKE_RANDOM_QWEN3_TTS) || !defined(IZWI_QWEN3_TTS_TO_GGUF)
  WARN("SKIPPED: izwi-make-random-qwen3-tts or izwi-qwen3-tts-to-gguf is not built");
#else
  namespace fs = std::filesystem;
  const fs::path dir = fs::current_path() / "loader-qwen3-tts";
  const fs::path pair = fs::current_path() / "loader-qwen3-tts-gguf";
  fs::remove_all(dir);
  fs::remove_all(pair);
  fs::create_directories(pair);
  REQUIRE(std::system((std::string(IZWI_MAKE_RANDOM_QWEN3_TTS) + " --out " + dir.string() +
                       " --shape small --seed 2 --tokenizer " + testing::qwen3_tokenizer_json().string() +
                       " > /dev/null")
                          .c_str()) == 0);
  REQUIRE(std::system((std::string(IZWI_QWEN3_TTS_TO_GGUF) + " " + dir.string() + " --talker " +
                       (pair / "talker.gguf").string() + " --mmproj " + (pair / "talker-mmproj.gguf").string() +
                       " > /dev/null")
                          .c_str()) == 0);
  fs::copy_file(dir / "tokenizer.json", pair / "tokenizer.json");
  CpuLoaderSettings settings;
  settings.num_threads = 1;
  settings.kv_cache_bytes = 64u << 20;
  for (const fs::path& path : {dir, pair / "talker.gguf"}) {
    INFO(path);
    auto model = load_cpu_model("tts", path, settings);
    CHECK(model->serves(Task::tts));
    CHECK_FALSE(model->serves(Task::chat));
    CHECK(model->info().untrained);
    CHECK(model->qwen3_tts_model() != nullptr);
    REQUIRE(model->speech_voices() != nullptr);
    CHECK(model->speech_voices()->speakers == std::vector<std::string>{"eric", "ryan", "vivian"});
    CHECK(model->speech_voices()->kind == "custom_voice");
    CHECK(model->speech_voices()->sample_rate == 24000u);
    SpeechSynthesis speech;
    speech.text = "Hello there.";
    speech.speaker = "ryan";
    speech.seed = 4;
    speech.max_frames = 4;
    ResponseStream stream = model->submit(model->make_speech_request(speech));
    std::size_t samples = 0, frames = 0;
    while (auto chunk = stream.next()) {
      samples += chunk->audio.size();
      frames += chunk->token_ids.size();
      if (!chunk->audio.empty()) CHECK(chunk->audio_sample_rate == 24000u);
    }
    CHECK(samples == frames * 1920);
    CHECK(frames >= 2);
    speech.speaker = "nobody";
    CHECK_THROWS_AS(model->make_speech_request(speech), izwi::invalid_argument);
    speech.speaker = "ryan";
    // Cloning needs a speaker encoder: the directory (CustomVoice) has none;
    // llama.cpp's mmproj always carries one (mtmd insists), so the pair can.
    speech.reference_audio = std::make_shared<const std::vector<float>>(24000, 0.1f);
    if (path == dir) {
      CHECK_FALSE(model->speech_voices()->cloning_unavailable.empty());
      CHECK_THROWS_AS(model->make_speech_request(speech), izwi::invalid_argument);
    } else {
      CHECK(model->speech_voices()->cloning_unavailable.empty() == (model->qwen3_tts_model()->speaker_encoder() != nullptr));
    }
    model->shutdown(std::chrono::steady_clock::now() + 1s);
    CHECK(model->status().num_kv_blocks_used == 0);
  }
  // --scheduling-policy playback-deadline: the same request speaks the same
  // frames and audio under PlaybackDeadlineScheduler.
  {
    auto speak = [](AnyEngine& model) {
      SpeechSynthesis speech;
      speech.text = "Hello there.";
      speech.speaker = "ryan";
      speech.seed = 9;
      speech.max_frames = 6;
      ResponseStream stream = model.submit(model.make_speech_request(speech));
      std::pair<std::vector<TokenId>, std::vector<float>> heard;
      while (auto chunk = stream.next()) {
        heard.first.insert(heard.first.end(), chunk->token_ids.begin(), chunk->token_ids.end());
        heard.second.insert(heard.second.end(), chunk->audio.begin(), chunk->audio.end());
      }
      return heard;
    };
    auto fcfs = load_cpu_model("tts", dir, settings);
    CpuLoaderSettings deadline_settings = settings;
    deadline_settings.scheduling = SchedulingPolicy::playback_deadline;
    auto deadline = load_cpu_model("tts", dir, deadline_settings);
    CHECK_THAT(deadline->info().description, Catch::Contains("playback-deadline scheduling"));
    CHECK_THAT(fcfs->info().description, Catch::Contains("FCFS scheduling"));
    const auto a = speak(*fcfs), b = speak(*deadline);
    CHECK(!a.second.empty());
    CHECK(a == b);
    for (auto* m : {&fcfs, &deadline}) (*m)->shutdown(std::chrono::steady_clock::now() + 1s);
  }
  // A Base checkpoint clones the voice of reference audio (its speaker
  // encoder's x-vector); it has no named speaker to fall back on.
  const fs::path base = fs::current_path() / "loader-qwen3-tts-base";
  fs::remove_all(base);
  REQUIRE(std::system((std::string(IZWI_MAKE_RANDOM_QWEN3_TTS) + " --out " + base.string() +
                       " --shape small --model-type base --seed 2 --tokenizer " +
                       testing::qwen3_tokenizer_json().string() + " > /dev/null")
                          .c_str()) == 0);
  {
    auto model = load_cpu_model("tts-base", base, settings);
    REQUIRE(model->speech_voices() != nullptr);
    CHECK(model->speech_voices()->kind == "base");
    CHECK(model->speech_voices()->cloning_unavailable.empty());
    SpeechSynthesis speech;
    speech.text = "Hello there.";
    speech.seed = 4;
    speech.max_frames = 3;
    CHECK_THROWS_AS(model->make_speech_request(speech), izwi::invalid_argument);  // no voice to speak in
    auto tone = std::make_shared<std::vector<float>>(48000);
    for (std::size_t i = 0; i < tone->size(); ++i) (*tone)[i] = 0.3f * std::sin(0.07f * static_cast<float>(i));
    speech.reference_audio = tone;
    ResponseStream stream = model->submit(model->make_speech_request(speech));
    std::size_t samples = 0, frames = 0;
    while (auto chunk = stream.next()) {
      samples += chunk->audio.size();
      frames += chunk->token_ids.size();
    }
    CHECK(frames >= 2);
    CHECK(samples == frames * 1920);
    CHECK(model->make_speech_request(speech).speech->codec_prefix.empty());  // x-vector only
    // With the transcript: in-context cloning. The reference's 25 frames of
    // codes lead the prompt and prime the codec; its audio is not sent again.
    speech.reference_text = "A tone for two seconds.";
    const Request icl = model->make_speech_request(speech);
    CHECK(icl.speech->codec_prefix.size() == 25 * 16);
    REQUIRE(icl.audio != nullptr);
    CHECK(icl.audio->placeholder_length > 25);
    stream = model->submit(model->make_speech_request(speech));
    samples = frames = 0;
    while (auto chunk = stream.next()) {
      samples += chunk->audio.size();
      frames += chunk->token_ids.size();
    }
    CHECK(frames >= 2);
    CHECK(samples == frames * 1920);
    model->shutdown(std::chrono::steady_clock::now() + 1s);
  }
  // A talker GGUF whose mmproj is not beside it: refused, naming what is missing.
  fs::remove(pair / "talker-mmproj.gguf");
  try {
    load_cpu_model("tts", pair / "talker.gguf", settings);
    FAIL("a talker without its mmproj loaded");
  } catch (const izwi::invalid_argument& e) {
    CHECK(std::string(e.what()).find("mmproj") != std::string::npos);
  }
#endif
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
  CHECK(message_of(dir.root / "notes.txt").find("neither a model directory, a .gguf file nor a whisper.cpp ggml file") !=
        std::string::npos);
  // A file with the ggml magic is taken for a Whisper checkpoint: its error is the Whisper loader's, naming it.
  std::ofstream(dir.root / "ggml-tiny.bin", std::ios::binary) << "lmgg" << std::string(16, '\0');
  const std::string ggml = message_of(dir.root / "ggml-tiny.bin");
  INFO(ggml);
  CHECK(ggml.find("ggml-tiny.bin") != std::string::npos);
  CHECK(ggml.find("neither") == std::string::npos);
  // Whisper's config.json has no hidden_size: recognised by model_type alone.
  std::filesystem::create_directories(dir.root / "whisper-dir");
  std::ofstream(dir.root / "whisper-dir" / "config.json") << R"({"model_type": "whisper"})";
  const std::string whisper = message_of(dir.root / "whisper-dir");
  INFO(whisper);
  CHECK(whisper.find("hidden_size") == std::string::npos);
  CHECK(whisper != "loaded");
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

// --- crafted files: each loader refuses a corrupt checkpoint with a message ---

namespace {

/// A small random Qwen3 with the real tokenizer (hidden 64, one layer), made
/// afresh in `name`: the tests below corrupt it.
std::filesystem::path small_qwen3(const std::string& name) {
  const auto dir = std::filesystem::current_path() / ("crafted-" + name);
  std::filesystem::remove_all(dir);
  const std::string command = std::string(IZWI_MAKE_RANDOM_QWEN3) + " --out " + dir.string() + " --tokenizer " +
                              testing::qwen3_tokenizer_json().string() +
                              " --hidden 64 --layers 1 --heads 2 --kv-heads 1 --head-dim 32 --intermediate 128"
                              " --gguf-type f32 --seed 3 > /dev/null";
  REQUIRE(std::system(command.c_str()) == 0);
  return dir;
}

/// Writes a NaN over element 3 of an f32 tensor, at `offset` bytes into `file`.
void write_nan_at(const std::filesystem::path& file, std::uint64_t offset) {
  std::fstream out(file, std::ios::in | std::ios::out | std::ios::binary);
  out.seekp(static_cast<std::streamoff>(offset + 3 * sizeof(float)));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  out.write(reinterpret_cast<const char*>(&nan), sizeof nan);
  REQUIRE(out.good());
}

std::uint64_t safetensors_offset(const std::filesystem::path& file, const std::string& tensor) {
  std::uint64_t header = 0;
  std::ifstream(file, std::ios::binary).read(reinterpret_cast<char*>(&header), 8);
  const io::SafetensorsFile st = io::SafetensorsFile::open(file);
  REQUIRE(st.at(tensor).dtype == DType::f32);
  return 8 + header + st.at(tensor).data_begin;
}

std::uint64_t gguf_offset(const std::filesystem::path& file, const std::string& tensor) {
  const io::GgufFile gguf = io::GgufFile::open(file);
  REQUIRE(gguf.tensor(tensor).type == io::GgmlType::f32);
  return gguf.data_offset() + gguf.tensor(tensor).offset;
}

/// Replaces the f32 value that follows metadata key `key` in a GGUF file.
void patch_gguf_f32(const std::filesystem::path& file, const std::string& key, float value) {
  std::ifstream in(file, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  const std::size_t at = bytes.find(key);
  REQUIRE(at != std::string::npos);
  std::uint32_t type = 0;
  std::memcpy(&type, bytes.data() + at + key.size(), 4);
  REQUIRE(type == 6);  // GGUF float32
  std::fstream out(file, std::ios::in | std::ios::out | std::ios::binary);
  out.seekp(static_cast<std::streamoff>(at + key.size() + 4));
  out.write(reinterpret_cast<const char*>(&value), sizeof value);
  REQUIRE(out.good());
}

/// tokenizer.json with `extra` more added tokens than the real one (ids from 151936 up).
void grow_tokenizer(const std::filesystem::path& tokenizer_json, int extra) {
  std::ifstream in(tokenizer_json, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  in.close();
  const std::size_t at = text.find("\"added_tokens\"");
  REQUIRE(at != std::string::npos);
  const std::size_t open = text.find('[', at);
  std::string added;
  for (int i = 0; i < extra; ++i)
    added += "{\"id\":" + std::to_string(151936 + i) + ",\"content\":\"<|extra_" + std::to_string(i) +
             "|>\",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,\"normalized\":false,\"special\":true},";
  text.insert(open + 1, added);
  std::ofstream(tokenizer_json, std::ios::binary | std::ios::trunc) << text;
}

std::string load_error(const std::filesystem::path& path) {
  CpuLoaderSettings settings;
  settings.num_threads = 1;
  settings.kv_cache_bytes = 8u << 20;
  try {
    load_cpu_model("crafted", path, settings);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "loaded";
}

}  // namespace

TEST_CASE("crafted files: NaN weights are refused at load, naming the tensor", "[server][loader][crafted]") {
  if (!testing::have_qwen3_tokenizer()) return;
  const auto dir = small_qwen3("nan");
  CHECK(load_error(dir) == "loaded");
  CHECK(load_error(dir / "model.gguf") == "loaded");
  write_nan_at(dir / "model.safetensors", safetensors_offset(dir / "model.safetensors", "model.layers.0.input_layernorm.weight"));
  write_nan_at(dir / "model.gguf", gguf_offset(dir / "model.gguf", "output_norm.weight"));
  const std::string safetensors = load_error(dir);
  INFO(safetensors);
  CHECK(safetensors.find("'model.layers.0.input_layernorm.weight' holds a non-finite value") != std::string::npos);
  const std::string gguf = load_error(dir / "model.gguf");
  INFO(gguf);
  CHECK(gguf.find("model.gguf") != std::string::npos);
  CHECK(gguf.find("'model.norm.weight' holds a non-finite value") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("crafted files: bad hyper-parameters are refused in both formats", "[server][loader][crafted]") {
  if (!testing::have_qwen3_tokenizer()) return;
  const auto dir = small_qwen3("hparams");
  for (float bad : {0.0f, -1.0f}) {
    patch_gguf_f32(dir / "model.gguf", "qwen3.rope.freq_base", bad);
    CHECK(load_error(dir / "model.gguf").find("'qwen3.rope.freq_base': must be positive") != std::string::npos);
    patch_gguf_f32(dir / "model.gguf", "qwen3.rope.freq_base", 1e6f);
    patch_gguf_f32(dir / "model.gguf", "qwen3.attention.layer_norm_rms_epsilon", bad);
    CHECK(load_error(dir / "model.gguf").find("'qwen3.attention.layer_norm_rms_epsilon': must be positive") !=
          std::string::npos);
    patch_gguf_f32(dir / "model.gguf", "qwen3.attention.layer_norm_rms_epsilon", 1e-6f);
  }
  CHECK(load_error(dir / "model.gguf") == "loaded");
  // config.json: the same checks, already there; one case keeps them honest.
  std::ifstream in(dir / "config.json");
  std::string config((std::istreambuf_iterator<char>(in)), {});
  in.close();
  const std::size_t at = config.find("\"rms_norm_eps\": 1e-06");
  REQUIRE(at != std::string::npos);
  config.replace(at, 21, "\"rms_norm_eps\": -1");
  std::ofstream(dir / "config.json", std::ios::trunc) << config;
  CHECK(load_error(dir).find("rms_norm_eps") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("crafted files: a tokenizer larger than the embedding table is refused, the registry stays up",
          "[server][loader][crafted]") {
  if (!testing::have_qwen3_tokenizer()) return;
  const auto dir = small_qwen3("vocab");
  grow_tokenizer(dir / "tokenizer.json", 70);  // ids up to 152005, past the 151936 rows
  for (const auto& path : {dir, dir / "model.gguf"}) {
    const std::string message = load_error(path);
    INFO(message);
    CHECK(message.find("tokenizer.json has 152006 tokens but the model's embedding table has 151936 rows") !=
          std::string::npos);
  }
  // Through the registry: the failure is reported, and the server's registry keeps serving.
  ModelRegistry registry(cpu_model_loader({.num_threads = 1, .kv_cache_bytes = 8u << 20}));
  Outcome bad;
  registry.load_path(dir / "model.gguf", "bad", bad.callback());
  const auto failure = bad.get();
  REQUIRE(failure.has_value());
  CHECK(std::string(failure->what()).find("embedding table") != std::string::npos);
  std::filesystem::copy_file(testing::qwen3_tokenizer_json(), dir / "tokenizer.json",
                             std::filesystem::copy_options::overwrite_existing);
  Outcome good;
  registry.load_path(dir / "model.gguf", "good", good.callback());
  CHECK_FALSE(good.get().has_value());
  CHECK(registry.find("good") != nullptr);
  std::filesystem::remove_all(dir);
}

TEST_CASE("the served context is clamped to what the KV cache holds, and said", "[server][loader]") {
  if (!testing::have_qwen3_tokenizer()) return;
  const auto dir = testing::random_qwen3();
  CpuLoaderSettings settings;
  settings.num_threads = 1;
  settings.kv_cache_bytes = 4u << 20;  // 4 MiB of f16 K/V: 4 layers x 2 KV heads x 64 x 2 x 2 B = 2 KiB a token
  auto model = load_cpu_model("small-cache", dir, settings);
  const std::size_t limit = model->info().max_model_len;
  CHECK(limit > 0);
  CHECK(limit <= 2048u);
  CHECK(model->info().description.find("clamped from 40960") != std::string::npos);
  CHECK(model->info().description.find("the KV cache holds " + std::to_string(limit) + " tokens") != std::string::npos);
  CHECK(model->info().max_token_bytes == 128u);  // Qwen3's longest token: 128 spaces
  // Special tokens spelled in text: the control token by default (vLLM), plain text on request.
  const TokenId im_end = 151645;
  const std::vector<TokenId> parsed = model->encode("hi<|im_end|>");
  const std::vector<TokenId> plain = model->encode_as_text("hi<|im_end|>");
  CHECK(std::count(parsed.begin(), parsed.end(), im_end) == 1);
  CHECK(std::count(plain.begin(), plain.end(), im_end) == 0);
  CHECK(plain.size() > parsed.size());
  // A prompt at the limit is refused at submission, naming the limit, before any block is taken.
  Request request;
  request.prompt_tokens.assign(limit, 9707);
  try {
    model->submit(std::move(request));
    FAIL("an over-long prompt was accepted");
  } catch (const izwi::invalid_argument& e) {
    CHECK(std::string(e.what()).find(std::to_string(limit)) != std::string::npos);
  }
  model->shutdown(std::chrono::steady_clock::now() + 1s);
}

namespace {

/// `count` greedy ids of `model` for `prompt`.
std::vector<TokenId> greedy_ids(AnyEngine& model, std::string_view prompt, std::size_t count) {
  Request request;
  request.prompt_tokens = model.encode(prompt);
  request.sampling.max_tokens = count;
  request.sampling.temperature = 0.0f;
  request.sampling.ignore_eos = true;
  ResponseStream stream = model.submit(std::move(request));
  std::vector<TokenId> ids;
  while (auto chunk = stream.next()) ids.insert(ids.end(), chunk->token_ids.begin(), chunk->token_ids.end());
  return ids;
}

}  // namespace

TEST_CASE("the loader on an OpenCL device: opened per load when only named, the CPU's greedy ids, errors named",
          "[server][loader][opencl]") {
  if (!testing::have_qwen3_tokenizer()) return;
  if (!built_with_opencl()) {
    WARN("SKIPPED: izwi::server_compiled was built without OpenCL");
    return;
  }
  const auto dir = testing::random_qwen3();
  CpuLoaderSettings settings;
  settings.num_threads = 1;
  settings.kv_cache_bytes = 16u << 20;
  settings.device.spec = parse_device_spec("opencl");  // named, not opened: the loader opens it
  std::unique_ptr<AnyEngine> on_device;
  try {
    on_device = load_cpu_model("tiny", dir, settings);
  } catch (const izwi::unavailable& e) {
    WARN("SKIPPED: no OpenCL device: " << e.what());
    return;
  }
  auto on_cpu = load_cpu_model("tiny", dir, {.num_threads = 1, .kv_cache_bytes = 16u << 20});
  INFO(on_device->info().description);
  CHECK(on_device->info().device.rfind("opencl:", 0) == 0);
  CHECK(on_device->info().description.find(", on " + on_device->info().device) != std::string::npos);
  CHECK(on_cpu->info().device == "cpu");
  CHECK(on_device->info().max_model_len == on_cpu->info().max_model_len);
  for (const char* prompt : {"Hello", "The quick brown fox jumps over the lazy dog"}) {
    INFO(prompt);
    const auto ids = greedy_ids(*on_device, prompt, 16);
    CHECK(ids.size() == 16u);
    CHECK(ids == greedy_ids(*on_cpu, prompt, 16));
  }
  on_device->shutdown(std::chrono::steady_clock::now() + 1s);
  CHECK(on_device->status().num_kv_blocks_used == 0);
  on_cpu->shutdown(std::chrono::steady_clock::now() + 1s);

  // A device KV cache the device cannot hold is an error naming the call, not a crash.
  settings.kv_cache_bytes = std::size_t{1} << 44;
  try {
    load_cpu_model("huge", dir, settings);
    FAIL("a 16 TiB device KV cache was allocated");
  } catch (const izwi::error& e) {
    CHECK(std::string(e.what()).find("clCreateBuffer") != std::string::npos);
  }
  try {
    open_device(parse_device_spec("opencl:9:9"));
    FAIL("opencl:9:9 opened");
  } catch (const izwi::unavailable& e) {
    CHECK(std::string(e.what()).find("platform 9 does not exist") != std::string::npos);
  }
}
