// izwi-server: an OpenAI-compatible HTTP server for izwi's engines.
//
//   izwi-server --model Qwen3-0.6B [--model other.gguf] [--models-dir DIR]
//               [--host 127.0.0.1] [--port 8000] [--api-key KEY] ...
//
// Each model runs its own engine loop; HTTP runs on its own threads (see
// include/izwi/server/server.hpp and docs/server.md). SIGINT/SIGTERM stop it
// gracefully: in-flight requests finish (until --shutdown-grace-s), then exit 0.

#include <boost/program_options.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "izwi/core/huge_pages.hpp"
#include "izwi/kernels/cpu/dispatch.hpp"
#include "izwi/server/device.hpp"
#include "izwi/server/model_loader.hpp"
#include "izwi/server/model_registry.hpp"
#include "izwi/server/server.hpp"

// The web playground (ui/ of the source tree), embedded at build time by
// cmake/izwiEmbedFiles.cmake into a generated source of this target
// (Server::serve_web_ui).
std::span<const izwi::server::EmbeddedFile> izwi_web_ui_files() noexcept;

namespace {

constexpr const char* usage_intro = R"(usage: izwi-server --model PATH [--model PATH ...] [--models-dir DIR] [options]

An OpenAI-compatible server (/v1/chat/completions, /v1/completions,
/v1/audio/speech, /v1/audio/voices, /v1/audio/transcriptions,
/v1/audio/translations, /v1/models, /health, /metrics, /v1/admin/models) for
Qwen3 checkpoints (Hugging Face directories with config.json,
*.safetensors, tokenizer.json, or .gguf files), Qwen3-TTS checkpoints
(Hugging Face Qwen/Qwen3-TTS-12Hz-* directories, or llama.cpp's GGUF pair:
the talker .gguf with its *mmproj*.gguf beside it) and Whisper checkpoints
(Hugging Face openai/whisper-* directories, or whisper.cpp's ggml .bin
files). Several --model flags serve several models at once. A web
playground to try them is at / (--no-ui: none).
)";

namespace po = boost::program_options;

struct Options {
  std::vector<std::filesystem::path> models;
  std::optional<std::filesystem::path> models_dir;
  izwi::server::ServerConfig server;
  izwi::server::CpuLoaderSettings loader;
  bool web_ui = true;
};

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "izwi-server: %s\n(izwi-server --help lists the options)\n", message.c_str());
  std::exit(2);
}

/// A Program_options value bounded to [min, max]: out of range is a usage
/// error naming the flag and the range, before anything starts.
template <class T>
po::typed_value<T>* bounded(T* target, T min, T max, const char* flag, const char* name = "N") {
  return po::value<T>(target)->value_name(name)->notifier([=](T v) {
    if (v < min || v > max)
      usage_error(std::string("--") + flag + " wants a number in [" + std::to_string(min) + ", " +
                  std::to_string(max) + "], got " + std::to_string(v));
  });
}

/// Values given in a unit the server does not store (MB, seconds), read
/// into plain numbers and converted after parsing.
struct RawNumbers {
  std::size_t max_body_mb = 25, kv_cache_mb = 1024, max_queue = 256;
  double max_audio_s = 3600;
  std::string vad_model;
  std::string voices_dir;
  long header_timeout_s = 10, body_timeout_s = 60, idle_timeout_s = 30, shutdown_grace_s = 30;
  std::string scheduling = "fcfs", kv_cache = "paged", device = "cpu", tts_codec_precision = "f32";
  std::vector<std::string> models;
  std::string models_dir;
};

po::options_description model_options(RawNumbers& raw) {
  po::options_description d("Models");
  d.add_options()
      ("model", po::value(&raw.models)->value_name("PATH")->composing(),
       "serve this checkpoint, under its directory or file name (repeatable); /health answers 503 until all "
       "are loaded")
      ("models-dir", po::value(&raw.models_dir)->value_name("DIR"),
       "checkpoints an admin may load and unload at run time (POST /v1/admin/models/{id}/load, .../unload)");
  return d;
}

po::options_description audio_options(Options& o, RawNumbers& raw) {
  po::options_description d("Audio (transcription and speech)");
  d.add_options()
      ("max-audio-s", po::value(&raw.max_audio_s)->value_name("S")->default_value(raw.max_audio_s, "3600")
                          ->notifier([](double s) {
                            if (!(s > 0 && s <= 86400)) usage_error("--max-audio-s wants seconds in (0, 86400]");
                          }),
       "longest upload accepted by /v1/audio/transcriptions and /translations (longer: 413)")
      ("vad-model", po::value(&raw.vad_model)->value_name("PATH"),
       "Silero VAD weights for chunking_strategy (default: assets/silero-vad/silero_vad_v5_16k.safetensors of "
       "the source tree when present; without: an energy VAD)")
      ("voices-dir", po::value(&raw.voices_dir)->value_name("DIR"),
       "keep the voices saved with POST /v1/audio/voices in DIR (created when missing), so they survive restarts "
       "(default: in memory only)")
      ("normalize-speech-text", po::bool_switch(&o.server.normalize_speech_text),
       "read numbers, money, times, addresses and symbols out as words in /v1/audio/speech requests that "
       "send no normalization_options (Kokoro-FastAPI's defaults; default: the input as written)");
  return d;
}

po::options_description http_options(Options& o, RawNumbers& raw) {
  auto& limits = o.server.limits;
  po::options_description d("HTTP");
  d.add_options()
      ("host", po::value(&o.server.host)->value_name("ADDR")->default_value(o.server.host),
       "address to listen on (0.0.0.0 for all)")
      ("port", bounded<unsigned short>(&o.server.port, 0, 65535, "port")->default_value(o.server.port),
       "port (0 picks a free one, printed at start)")
      ("api-key", po::value(&o.server.api_keys)->value_name("KEY")->composing(),
       "require 'Authorization: Bearer KEY' (repeatable; also IZWI_API_KEY); /health, /livez, /readyz, "
       "/metrics stay open")
      ("admin-api-key", po::value(&o.server.admin_api_keys)->value_name("KEY")->composing(),
       "the key of /v1/admin/* (load, unload, admin views; repeatable; also IZWI_ADMIN_API_KEY). Inference "
       "keys never open them; without one they answer 403")
      ("http-threads", bounded<std::size_t>(&o.server.io_threads, 1, 256, "http-threads")
                           ->default_value(o.server.io_threads), "I/O threads")
      ("max-body-mb", bounded<std::size_t>(&raw.max_body_mb, 1, 1 << 20, "max-body-mb")
                          ->default_value(raw.max_body_mb), "largest request body in MB (-> 413)")
      ("max-connections", bounded<std::size_t>(&limits.max_connections, 1, 1 << 20, "max-connections")
                              ->default_value(limits.max_connections),
       "open connections (lowered to fit the open-file limit, which start-up raises to the hard limit); "
       "beyond, 503")
      ("header-timeout-s", bounded<long>(&raw.header_timeout_s, 1, 3600, "header-timeout-s")
                               ->default_value(raw.header_timeout_s), "seconds to send a request's headers (-> 408)")
      ("body-timeout-s", bounded<long>(&raw.body_timeout_s, 1, 3600, "body-timeout-s")
                             ->default_value(raw.body_timeout_s), "seconds to send a request's body (-> 408)")
      ("idle-timeout-s", bounded<long>(&raw.idle_timeout_s, 1, 3600, "idle-timeout-s")
                             ->default_value(raw.idle_timeout_s), "keep-alive connections idle this long are closed")
      ("shutdown-grace-s", bounded<long>(&raw.shutdown_grace_s, 0, 3600, "shutdown-grace-s")
                               ->default_value(raw.shutdown_grace_s),
       "on SIGINT/SIGTERM, in-flight requests get this long")
      ("no-access-log", po::bool_switch(), "no per-request line on stderr")
      ("no-ui", po::bool_switch(), "do not serve the web playground (GET / and /ui/...: 404)")
      ("special-tokens-as-text", po::bool_switch(&o.server.special_tokens_as_text),
       "encode \"<|im_end|>\" and other special tokens spelled in prompts and messages as plain text (default: "
       "parsed as control tokens, as vLLM does; a request's \"special_tokens_as_text\" overrides)");
  return d;
}

po::options_description engine_options(Options& o, RawNumbers& raw) {
  auto& l = o.loader;
  po::options_description d("Engine (per model)");
  d.add_options()
      ("threads", bounded<std::size_t>(&l.num_threads, 0, 1024, "threads"),
       "executor threads (default: one per core)")
      ("device", po::value(&raw.device)->value_name("cpu|opencl[:P:D]")->default_value(raw.device),
       "where Qwen3 chat models run: the CPU, or an OpenCL device (opencl: the first GPU, else the first device; "
       "opencl:P:D: platform P's device D, as --list-devices prints them). Whisper runs on the CPU only: a "
       "Whisper model on an OpenCL server is refused")
      ("list-devices", "print the devices --device can name, then exit")
      ("scheduling-policy",
       po::value(&raw.scheduling)->value_name("fcfs|priority|playback-deadline")->default_value(raw.scheduling),
       "fcfs: arrival order; priority: the request's \"priority\" (lower first, as vLLM), aged so nothing "
       "starves (chat models); playback-deadline: speech models serve first the streams whose listeners are "
       "closest to running out of audio (other models: arrival order)")
      ("kv-cache", po::value(&raw.kv_cache)->value_name("paged|unified")->default_value(raw.kv_cache),
       "paged: a fixed pool of --kv-cache-mb; unified: a share of physical memory "
       "(--kv-cache-memory-fraction) that shrinks the batch under memory pressure (the Metal-style cache)")
      ("kv-cache-mb", bounded<std::size_t>(&raw.kv_cache_mb, 1, 1 << 24, "kv-cache-mb")
                          ->default_value(raw.kv_cache_mb), "KV-cache memory with --kv-cache paged")
      ("kv-cache-memory-fraction", po::value(&l.kv_cache_memory_fraction)->value_name("F")
                                       ->default_value(l.kv_cache_memory_fraction, "0.85")
                                       ->notifier([](double f) {
                                         if (!(f > 0.0 && f <= 1.0))
                                           usage_error("--kv-cache-memory-fraction wants a number in (0, 1], got " +
                                                       std::to_string(f));
                                       }),
       "share of physical memory for K/V with --kv-cache unified")
      ("max-queue", bounded<std::size_t>(&raw.max_queue, 0, std::size_t{1} << 40, "max-queue")
                        ->default_value(raw.max_queue),
       "waiting requests before 429, per model and in the prompt preparation queue (0: no limit)")
      ("max-num-seqs", bounded<std::size_t>(&l.max_num_seqs, 1, 1 << 16, "max-num-seqs"),
       "sequences per step (default: the scheduler's, 128)")
      ("max-num-batched-tokens", bounded<std::size_t>(&l.max_num_batched_tokens, 1, 1 << 24,
                                                      "max-num-batched-tokens"),
       "tokens per step (default: the scheduler's, 2048)")
      ("max-model-len", bounded<std::size_t>(&l.max_model_len, 1, 1 << 24, "max-model-len"),
       "context limit (default: the model's, clamped to what the KV cache holds for one request; said at "
       "start-up)")
      ("no-prefix-caching", po::bool_switch(), "do not reuse cached prompt prefixes")
      ("mmap", po::bool_switch(),
       "map Qwen3 and Qwen3-TTS checkpoint files instead of reading them into huge-page memory: the page cache is "
       "shared with other processes and no private copy is made, but batch-1 decode runs ~15% slower from 4-KiB "
       "pages (docs/benchmarks.md)")
      ("tts-codec-precision", po::value(&raw.tts_codec_precision)->value_name("f32|bf16")
                                  ->default_value(raw.tts_codec_precision),
       "Qwen3-TTS codec decoder: f32, or bf16 on AMX where the CPU has AMX-BF16 (f32 elsewhere; docs/tts.md)");
  return d;
}

void apply(Options& o, const RawNumbers& raw, const po::variables_map& vm) {
  using std::chrono::seconds;
  for (const auto& m : raw.models) o.models.emplace_back(m);
  if (vm.count("models-dir")) o.models_dir = std::filesystem::path(raw.models_dir);
  o.server.limits.max_body_bytes = raw.max_body_mb << 20;
  o.server.limits.header_timeout = seconds(raw.header_timeout_s);
  o.server.limits.body_timeout = seconds(raw.body_timeout_s);
  o.server.limits.idle_timeout = seconds(raw.idle_timeout_s);
  o.server.shutdown_grace = seconds(raw.shutdown_grace_s);
  o.server.access_log = !vm["no-access-log"].as<bool>();
  o.web_ui = !vm["no-ui"].as<bool>();
  o.loader.kv_cache_bytes = raw.kv_cache_mb << 20;
  o.loader.max_waiting_requests = raw.max_queue;
  o.server.max_queued_preparations = raw.max_queue;  // the prep queue counts too
  o.loader.enable_prefix_caching = !vm["no-prefix-caching"].as<bool>();
  o.loader.weights_memory = vm["mmap"].as<bool>() ? izwi::io::FileMemory::map : izwi::io::FileMemory::read;
  o.server.max_audio_seconds = raw.max_audio_s;
  if (!raw.vad_model.empty()) {
    if (!std::filesystem::is_regular_file(raw.vad_model)) usage_error("--vad-model " + raw.vad_model + " is not a file");
    o.server.vad_model = std::filesystem::path(raw.vad_model);
  }
#if defined(IZWI_DEFAULT_VAD_MODEL)
  else if (std::filesystem::is_regular_file(IZWI_DEFAULT_VAD_MODEL)) {
    o.server.vad_model = std::filesystem::path(IZWI_DEFAULT_VAD_MODEL);
  }
#endif
  if (!raw.voices_dir.empty()) o.server.voices_dir = std::filesystem::path(raw.voices_dir);
  if (raw.scheduling == "fcfs") o.loader.scheduling = izwi::server::SchedulingPolicy::fcfs;
  else if (raw.scheduling == "priority") o.loader.scheduling = izwi::server::SchedulingPolicy::priority;
  else if (raw.scheduling == "playback-deadline")
    o.loader.scheduling = izwi::server::SchedulingPolicy::playback_deadline;
  else usage_error("--scheduling-policy wants fcfs, priority or playback-deadline, got '" + raw.scheduling + "'");
  if (raw.kv_cache == "paged") o.loader.kv_cache = izwi::server::KVCacheKind::paged;
  else if (raw.kv_cache == "unified") o.loader.kv_cache = izwi::server::KVCacheKind::unified;
  else usage_error("--kv-cache wants paged or unified, got '" + raw.kv_cache + "'");
  if (raw.tts_codec_precision == "f32" || raw.tts_codec_precision == "bf16")
    o.loader.tts_codec_bf16 = raw.tts_codec_precision == "bf16";
  else usage_error("--tts-codec-precision wants f32 or bf16, got '" + raw.tts_codec_precision + "'");
  try {
    o.loader.device.spec = izwi::server::parse_device_spec(raw.device);
  } catch (const izwi::invalid_argument& e) {
    usage_error(std::string("--device ") + e.what());
  }
}

Options parse_args(int argc, char** argv) {
  Options o;
  RawNumbers raw;
  o.server.handle_signals = true;
  po::options_description all;
  all.add(model_options(raw)).add(http_options(o, raw)).add(engine_options(o, raw)).add(audio_options(o, raw));
  all.add_options()("help,h", "this text");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, all), vm);
    if (vm.count("help")) {
      std::cout << usage_intro << all;
      std::exit(0);
    }
    if (vm.count("list-devices")) {
      for (const std::string& line : izwi::server::list_devices()) std::cout << line << '\n';
      std::exit(0);
    }
    po::notify(vm);
  } catch (const po::error& e) {
    usage_error(e.what());
  }
  // Environment keys join the flags' (as before: both count).
  if (const char* key = std::getenv("IZWI_API_KEY"); key && *key) o.server.api_keys.emplace_back(key);
  if (const char* key = std::getenv("IZWI_ADMIN_API_KEY"); key && *key) o.server.admin_api_keys.emplace_back(key);
  apply(o, raw, vm);
  return o;
}

/// What to serve when neither --model nor --models-dir is given: nothing —
/// the server cannot guess. The README's main job (scripts/run-demo.sh)
/// generates a random-weight demo checkpoint and passes it as --model.
std::optional<std::filesystem::path> default_model_when_none_given() {
  std::fputs("izwi-server: no model to serve: give --model PATH (a Hugging Face Qwen3, Qwen3-TTS or Whisper directory, a\n"
             ".gguf file or a whisper.cpp ggml .bin file; repeat it to serve several) and/or --models-dir DIR.\n"
             "Example:\n"
             "  izwi-server --model ./Qwen3-0.6B --model ./ggml-base.en.bin --port 8000\n"
             "scripts/run-demo.sh serves a generated random-weight Qwen3, Qwen3-TTS and Whisper when given no --model.\n"
             "(izwi-server --help lists the options)\n",
             stderr);
  return std::nullopt;
}

/// The CPU kernel variant chosen for this CPU (kernels/cpu/dispatch.hpp),
/// and the ones IZWI_CPU_ARCH could force instead.
void log_cpu_kernels() {
  std::string built;
  for (std::string_view name : izwi::kernels::cpu::compiled_kernel_names()) {
    if (!built.empty()) built += '|';  // (GCC 12 -Wrestrict misfires on "" + string)
    built += name;
  }
  const izwi::kernels::cpu::KernelTable& active = izwi::kernels::cpu::active_kernels();
  const std::string extensions = *active.extensions ? std::string(" (with ") + active.extensions + ")" : "";
  std::fprintf(stderr, "%s: CPU kernels: %s%s (IZWI_CPU_ARCH=%s forces one)\n", "izwi-server", active.name,
               extensions.c_str(), built.c_str());
}

/// Opens --device once, before any model loads, and names it in the log. A
/// device that cannot be opened (no OpenCL platform, no such index, a build
/// without OpenCL) is said with the reason; false then, and the server exits.
bool open_serving_device(izwi::server::ServingDevice& device) {
  try {
    device = izwi::server::open_device(device.spec);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "izwi-server: --device %s: %s\n", izwi::server::to_string(device.spec).c_str(), e.what());
    return false;
  }
  std::fprintf(stderr, "izwi-server: device: %s%s%s\n", device.name.c_str(), device.details.empty() ? "" : "; ",
               device.details.c_str());
  return true;
}

/// Where loaded weights live, for each "loaded" line: decode runs ~15%
/// slower from 4-KiB pages than from huge ones (docs/benchmarks.md), and the
/// kernel grants huge pages silently or not at all, so the operator sees
/// which the process got.
std::string weights_memory_phrase(const izwi::server::CpuLoaderSettings& loader) {
  std::string how = loader.weights_memory == izwi::io::FileMemory::map ? "checkpoints mapped (--mmap)"
                                                                      : "checkpoints read into memory";
  // A device copies the weights of the models it runs: their files stay mapped (model_loader.ipp).
  if (loader.device.spec.kind == izwi::server::DeviceSpec::Kind::opencl) how += ", mapped for the device's models";
  return how + "; " + izwi::describe_huge_pages();
}

}  // namespace

int main(int argc, char** argv) {
  Options options = parse_args(argc, argv);
  log_cpu_kernels();
  if (!open_serving_device(options.loader.device)) return 1;
  if (options.models.empty() && !options.models_dir) {
    std::optional<std::filesystem::path> model = default_model_when_none_given();
    if (!model) return 2;
    options.models.push_back(*model);
  }
  if (options.models_dir && !std::filesystem::is_directory(*options.models_dir))
    usage_error("--models-dir " + options.models_dir->string() + " is not a directory");

  // The usual soft limit (1024 files) is what --max-connections alone would
  // take; the server also lowers its connection limit to fit what is left.
  izwi::server::http::raise_open_file_limit();

  izwi::server::ModelRegistry registry(izwi::server::cpu_model_loader(options.loader), options.models_dir);
  std::optional<izwi::server::Server> constructed;
  try {
    constructed.emplace(options.server, registry);
  } catch (const std::exception& e) {
    // The VAD model or the voices directory.
    std::fprintf(stderr, "izwi-server: cannot start: %s\n", e.what());
    return 2;
  }
  izwi::server::Server& server = *constructed;
  if (options.web_ui) server.serve_web_ui(izwi_web_ui_files());

  // Startup models are queued before the server listens, so /health says 503
  // until they are in (they load on the registry's thread while the server
  // already answers). A model that fails to load ends the process, as vLLM
  // does: an operator asked for it.
  std::atomic<bool> load_failed{false};
  for (const auto& path : options.models) {
    std::fprintf(stderr, "izwi-server: loading %s\n", path.string().c_str());
    try {
      registry.load_path(path, std::nullopt,
                         [&server, &registry, &load_failed, &options, path](std::optional<izwi::server::ApiError> error) {
                           if (error) {
                             std::fprintf(stderr, "izwi-server: %s\n", error->what());
                             load_failed = true;
                             server.stop();
                             return;
                           }
                           std::string what = path.string();
                           for (const auto& entry : registry.entries())
                             if (entry.info && entry.info->path == path)
                               what = "'" + entry.id + "' (" + entry.info->description +
                                      (entry.info->untrained ? "; UNTRAINED: random weights" : "") + ")";
                           std::fprintf(stderr, "izwi-server: loaded %s; %s\n", what.c_str(),
                                        weights_memory_phrase(options.loader).c_str());
                         });
    } catch (const std::exception& e) {
      std::fprintf(stderr, "izwi-server: %s\n", e.what());
      return 2;
    }
  }

  try {
    server.start();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "izwi-server: cannot listen on %s:%u: %s\n", options.server.host.c_str(),
                 static_cast<unsigned>(options.server.port), e.what());
    return 1;
  }
  std::fprintf(stderr, "izwi-server: listening on http://%s:%u (%zu HTTP threads%s%s%s)\n",
               options.server.host.c_str(), static_cast<unsigned>(server.port()), options.server.io_threads,
               options.server.api_keys.empty() ? ", no API key" : ", API key required",
               options.server.admin_api_keys.empty() ? ", admin endpoints off (no --admin-api-key)"
                                                     : ", admin key required",
               options.web_ui ? ", web playground at /" : ", no web playground (--no-ui)");
  if (load_failed) server.stop();  // a load that failed before the server started

  server.run();  // until SIGINT/SIGTERM
  std::fprintf(stderr, "izwi-server: stopped\n");
  return load_failed ? 1 : 0;
}
