#pragma once
// load_cpu_model's body: inline, included by izwi/server/model_loader.hpp, in
// header-only builds; compiled once, in <izwi/server/src.hpp>, under
// IZWI_SEPARATE_COMPILATION (see izwi/config.hpp).

#include <algorithm>
#include <fstream>
#include <sstream>

#include "izwi/core/error.hpp"
#include "izwi/engine/engine.hpp"
#include "izwi/executor/cpu.hpp"
#include "izwi/io/ggml_whisper.hpp"
#include "izwi/io/gguf.hpp"
#include "izwi/io/json.hpp"
#include "izwi/kv_cache/paged.hpp"
#include "izwi/kv_cache/unified.hpp"
#include "izwi/models/qwen3.hpp"
#include "izwi/scheduler/fcfs.hpp"
#include "izwi/scheduler/priority.hpp"
#include "izwi/stock_engines.hpp"
#include "izwi/executor/whisper_cpu.hpp"
#include "izwi/executor/qwen3_tts_cpu.hpp"
#include "izwi/models/whisper.hpp"
#include "izwi/server/detail/served_engine.hpp"
#include "izwi/server/qwen3_tts_speech.hpp"
#if defined(IZWI_WITH_OPENCL)
#include "izwi/server/detail/opencl_loader.hpp"
#endif

namespace izwi::server {

namespace detail {

/// "qwen3", "whisper" or "qwen3_tts" from config.json (model_type, or
/// architectures for Qwen3TTSForConditionalGeneration), the GGUF's
/// general.architecture, or a ggml-whisper file's magic; also whether the
/// checkpoint says it has random weights (izwi's own izwi-make-random-qwen3,
/// izwi-make-random-whisper and izwi-make-random-qwen3-tts mark them so).
struct CheckpointKind {
  std::string architecture;
  bool untrained = false;
  /// llama.cpp's Qwen3-TTS GGUF pair: the mmproj beside the talker.
  std::filesystem::path mmproj;
};

/// config.json names Qwen3-TTS: architectures holds
/// Qwen3TTSForConditionalGeneration, or model_type is "qwen3_tts".
inline bool is_qwen3_tts_config(const io::JsonValue& config) {
  if (const io::JsonValue* model_type = io::json_find(config, "model_type"))
    if (const auto name = io::json_string(*model_type); name && *name == "qwen3_tts") return true;
  const io::JsonValue* architectures = io::json_find(config, "architectures");
  if (!architectures || !architectures->is_array()) return false;
  for (const io::JsonValue& a : architectures->get_array())
    if (const auto name = io::json_string(a); name && *name == "Qwen3TTSForConditionalGeneration") return true;
  return false;
}

/// The mmproj of a qwen3tts talker GGUF: the one other .gguf in its
/// directory whose name holds "mmproj" (as llama.cpp's converter names it).
inline std::filesystem::path find_qwen3_tts_mmproj(const std::filesystem::path& talker) {
  std::vector<std::filesystem::path> found;
  for (const auto& entry : std::filesystem::directory_iterator(talker.parent_path().empty() ? "." : talker.parent_path()))
    if (entry.path() != talker && entry.path().extension() == ".gguf" &&
        entry.path().filename().string().find("mmproj") != std::string::npos)
      found.push_back(entry.path());
  if (found.size() != 1)
    throw invalid_argument("model", talker.string() + " is a Qwen3-TTS talker GGUF; its mmproj (codec decoder, code "
                                    "predictor) must lie beside it as the only .gguf named *mmproj* (found " +
                                    std::to_string(found.size()) + ")");
  return found.front();
}

/// A whisper.cpp model file: it starts with the ggml magic (0x67676d6c, little-endian).
inline bool is_ggml_whisper_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char magic[4] = {};
  if (!in.read(reinterpret_cast<char*>(magic), 4)) return false;
  const std::uint32_t value = magic[0] | (magic[1] << 8) | (magic[2] << 16) | (std::uint32_t{magic[3]} << 24);
  return value == io::ggml_whisper_magic;
}

IZWI_DECL CheckpointKind inspect_checkpoint(const std::filesystem::path& path) {
  CheckpointKind kind;
  if (std::filesystem::is_directory(path)) {
    const auto config_json = path / "config.json";
    if (!std::filesystem::is_regular_file(config_json))
      throw invalid_argument("model", path.string() + " has no config.json (expected a Hugging Face model directory)");
    // Whisper's config.json has no hidden_size: read model_type alone first.
    const io::JsonValue config = io::read_json_file(config_json);
    const io::JsonValue* model_type = io::json_find(config, "model_type");
    if (model_type)
      if (const auto name = io::json_string(*model_type)) kind.architecture = std::string(*name);
    if (is_qwen3_tts_config(config)) kind.architecture = "qwen3_tts";
    else if (kind.architecture != "whisper") kind.architecture = io::read_transformer_config(config_json).model_type;
    std::ifstream in(config_json);
    std::stringstream text;
    text << in.rdbuf();
    kind.untrained = text.str().find("\"_izwi_note\"") != std::string::npos ||
                     text.str().find("izwi-make-random-whisper") != std::string::npos;
  } else if (path.extension() == ".gguf") {
    const io::GgufFile file = io::GgufFile::open(path);
    kind.architecture = file.architecture();
    kind.untrained = file.get<std::string>("general.name", "").rfind("izwi-random-qwen3", 0) == 0;
    if (kind.architecture == "qwen3tts") {
      kind.architecture = "qwen3_tts";
      kind.mmproj = find_qwen3_tts_mmproj(path);
    }
  } else if (!std::filesystem::exists(path)) {
    throw invalid_argument("model", path.string() + ": no such file or directory");
  } else if (is_ggml_whisper_file(path)) {
    kind.architecture = "whisper";
  } else {
    throw invalid_argument("model", path.string() +
                                        " is neither a model directory, a .gguf file nor a whisper.cpp ggml file");
  }
  return kind;
}

}  // namespace detail

namespace detail {

/// Every model's paged pool: kv_cache_bytes, committed when the model loads
/// (the memory a server uses is what it reports from the start).
inline PagedKVCacheConfig paged_cache_config(const CpuLoaderSettings& settings) {
  PagedKVCacheConfig config;
  config.byte_budget = settings.kv_cache_bytes;
  config.enable_prefix_caching = settings.enable_prefix_caching;
  config.commit_memory = true;
  return config;
}

/// A Whisper checkpoint (HF directory or ggml .bin) on the stock Whisper
/// engine: FCFS scheduling and a paged cache (the configuration the encoder
/// work is scheduled in), whatever the settings say for text models.
inline std::unique_ptr<AnyEngine> load_whisper_model(const std::string& id, const std::filesystem::path& path,
                                                     const CpuLoaderSettings& settings, bool untrained) {
  WhisperLoadOptions load;
  load.kv_cache_dtype = DType::f16;
  Whisper model = Whisper::load(path, load);
  if (!model.tokenizer())
    throw invalid_argument("model", path.string() +
                                        " has no vocabulary (vocab.json or tokenizer.json); the server needs one to "
                                        "write text");
  const WhisperConfig& config = model.config();
  ModelInfo info;
  info.id = id;
  info.path = path;
  info.tasks = config.multilingual() ? std::vector<Task>{Task::asr, Task::translation} : std::vector<Task>{Task::asr};
  info.untrained = untrained;
  info.description = model.description() + ", Whisper d_model " + std::to_string(config.d_model) + ", " +
                     std::to_string(config.encoder_layers) + "+" + std::to_string(config.decoder_layers) +
                     " layers, " + (config.multilingual() ? "multilingual" : "English-only") +
                     ", FCFS scheduling, paged KV cache";
  WhisperCpuExecutor executor(std::move(model), {.num_threads = settings.num_threads});
  SchedulerConfig scheduler_config;
  if (settings.max_num_seqs) scheduler_config.max_num_seqs = settings.max_num_seqs;
  // Each 30-s window is 1536 prompt positions: the scheduler's text default
  // (2048) would start one window per step, so concurrent uploads would be
  // encoded one by one. 8192 starts five per step, in one encoder batch.
  scheduler_config.max_num_batched_tokens =
      settings.max_num_batched_tokens ? settings.max_num_batched_tokens : whisper_default_batched_tokens;
  EngineConfig engine_config;
  engine_config.model_name = id;
  engine_config.stream_capacity = settings.stream_capacity;
  engine_config.max_waiting_requests = settings.max_waiting_requests;
  PagedKVCache<> cache(executor.kv_cache_shape(), paged_cache_config(settings));
  auto engine = std::make_unique<WhisperCpuEngine>(FcfsScheduler(scheduler_config), std::move(cache),
                                                   std::move(executor), engine_config);
  info.max_model_len = engine->max_model_len();
  return std::make_unique<EngineModel<WhisperCpuEngine>>(std::move(engine), std::move(info));
}

/// A Qwen3-TTS checkpoint (HF directory or llama.cpp's GGUF pair) on the
/// stock speech engine: FCFS scheduling, a paged cache of the talker's K/V.
inline std::unique_ptr<AnyEngine> load_qwen3_tts_model(const std::string& id, const std::filesystem::path& path,
                                                       const CpuLoaderSettings& settings, const CheckpointKind& kind) {
  Qwen3TtsLoadOptions load_options;
  if (settings.tts_codec_bf16) load_options.codec_precision = Qwen3TtsCodecPrecision::bf16;
  load_options.weights_memory = settings.weights_memory;
  Qwen3Tts model = kind.mmproj.empty() ? Qwen3Tts::load(path, load_options)
                                       : Qwen3Tts::load_gguf(path, kind.mmproj, load_options);
  if (!model.tokenizer())
    throw invalid_argument("model", path.string() + " has no tokenizer.json; the server needs one to read the input");
  const Qwen3TtsConfig& config = model.config();
  ModelInfo info;
  info.id = id;
  info.path = path;
  info.tasks = {Task::tts};
  info.untrained = kind.untrained;
  const bool deadline = settings.scheduling == SchedulingPolicy::playback_deadline;
  info.description = model.description() + ", talker hidden " +
                     std::to_string(config.talker.hidden_size) + " x " + std::to_string(config.talker.num_layers) +
                     " layers, " + std::to_string(config.speakers.size()) + " speakers, " +
                     (deadline ? "playback-deadline" : "FCFS") + " scheduling, paged KV cache" +
                     (model.codec().precision() == Qwen3TtsCodecPrecision::bf16 ? ", codec bf16" : "");
  Qwen3TtsCpuExecutor executor(std::move(model), {.num_threads = settings.num_threads});
  SchedulerConfig scheduler_config;
  if (settings.max_num_seqs) scheduler_config.max_num_seqs = settings.max_num_seqs;
  if (settings.max_num_batched_tokens) scheduler_config.max_num_batched_tokens = settings.max_num_batched_tokens;
  EngineConfig engine_config;
  engine_config.model_name = id;
  engine_config.stream_capacity = settings.stream_capacity;
  engine_config.max_waiting_requests = settings.max_waiting_requests;
  PagedKVCache<> cache(executor.kv_cache_shape(), paged_cache_config(settings));
  auto serve = [&]<class Engine>(auto scheduler) -> std::unique_ptr<AnyEngine> {
    auto engine = std::make_unique<Engine>(std::move(scheduler), std::move(cache), std::move(executor), engine_config);
    info.max_model_len = engine->max_model_len();
    return std::make_unique<EngineModel<Engine>>(std::move(engine), std::move(info));
  };
  if (deadline)
    return serve.template operator()<Qwen3TtsCpuDeadlineEngine>(PlaybackDeadlineScheduler(scheduler_config));
  return serve.template operator()<Qwen3TtsCpuEngine>(FcfsScheduler(scheduler_config));
}

}  // namespace detail

IZWI_DECL std::unique_ptr<AnyEngine> load_cpu_model(const std::string& id, const std::filesystem::path& path,
                                                    const CpuLoaderSettings& settings) {
  const detail::CheckpointKind kind = detail::inspect_checkpoint(path);
  if (settings.device.spec.kind != DeviceSpec::Kind::cpu && kind.architecture != "qwen3")
    throw invalid_argument("device", path.string() + ": architecture '" + kind.architecture +
                                         "' is not served on OpenCL devices (only qwen3 chat models are; Whisper "
                                         "and the speech models run on the CPU only), and this server runs its "
                                         "models on " +
                                         (settings.device.opencl_context ? settings.device.name
                                                                         : to_string(settings.device.spec)) +
                                         " (--device): serve it from an izwi-server started with --device cpu");
  // A host program may name an OpenCL device without opening it: opened here, per load.
  const ServingDevice device = settings.device.spec.kind == DeviceSpec::Kind::opencl && !settings.device.opencl_context
                                   ? open_device(settings.device.spec)
                                   : settings.device;
  if (kind.architecture == "whisper") return detail::load_whisper_model(id, path, settings, kind.untrained);
  if (kind.architecture == "qwen3_tts") return detail::load_qwen3_tts_model(id, path, settings, kind);
  if (kind.architecture != "qwen3")
    throw invalid_argument("model", path.string() + ": architecture '" + kind.architecture +
                                        "' is not served by this build (supported: qwen3, whisper, qwen3_tts)");

  Qwen3LoadOptions load;
  load.kv_cache_dtype = DType::f16;
  // An OpenCL device copies the weights into its own buffers: a private
  // host copy would only double the memory.
  const bool on_device = device.spec.kind == DeviceSpec::Kind::opencl;
  load.weights_memory = on_device ? io::FileMemory::map : settings.weights_memory;
  Qwen3 model = Qwen3::load(path, load);
  if (!model.tokenizer())
    throw invalid_argument("model", path.string() + " has no tokenizer.json; the server needs one to read prompts");

  ModelInfo info;
  const tokenizer::BpeTokenizer& tokenizer = *model.tokenizer();
  for (std::size_t t = 0; t < tokenizer.vocab_size(); ++t)
    info.max_token_bytes = std::max(info.max_token_bytes, tokenizer.token_bytes(static_cast<TokenId>(t)).size());
  info.id = id;
  info.path = path;
  info.tasks = {Task::chat};
  info.untrained = kind.untrained;
  info.description = model.description() + ", " + std::to_string(model.config().num_layers) + " layers, hidden " +
                     std::to_string(model.config().hidden_size) +
                     (settings.scheduling == SchedulingPolicy::priority ? ", priority scheduling" : ", FCFS scheduling") +
                     (settings.kv_cache == KVCacheKind::unified ? ", unified KV cache" : ", paged KV cache") +
                     ", on " + device.name;
  info.device = device.name;

  SchedulerConfig scheduler_config;
  if (settings.max_num_seqs) scheduler_config.max_num_seqs = settings.max_num_seqs;
  if (settings.max_num_batched_tokens) scheduler_config.max_num_batched_tokens = settings.max_num_batched_tokens;

  EngineConfig engine_config;
  engine_config.model_name = id;
  engine_config.stream_capacity = settings.stream_capacity;
  engine_config.max_waiting_requests = settings.max_waiting_requests;

#if defined(IZWI_WITH_OPENCL)
  // (Without OpenCL, open_device has refused every OpenCL spec: the device is the CPU.)
  if (device.opencl_context)
    return detail::serve_qwen3_on_opencl(std::move(model), device.opencl_context, std::move(info), settings,
                                         scheduler_config, engine_config);
#endif
  CpuExecutor<Qwen3> executor(std::move(model), {.num_threads = settings.num_threads});
  const bool priority = settings.scheduling == SchedulingPolicy::priority;
  if (settings.kv_cache == KVCacheKind::unified) {
    UnifiedKVCacheConfig cache_config;
    cache_config.memory_fraction = settings.kv_cache_memory_fraction;
    cache_config.enable_prefix_caching = settings.enable_prefix_caching;
    UnifiedKVCache<> cache(executor.kv_cache_shape(), cache_config);
    return detail::make_served_engine(priority, std::move(executor), std::move(cache), scheduler_config,
                                      engine_config, std::move(info), settings.max_model_len);
  }
  PagedKVCache<> cache(executor.kv_cache_shape(), detail::paged_cache_config(settings));
  return detail::make_served_engine(priority, std::move(executor), std::move(cache), scheduler_config,
                                    engine_config, std::move(info), settings.max_model_len);
}

}  // namespace izwi::server
