// izwi-server: an OpenAI-compatible HTTP server for izwi's engines.
//
//   izwi-server --model Qwen3-0.6B [--model other.gguf] [--models-dir DIR]
//               [--host 127.0.0.1] [--port 8000] [--api-key KEY] ...
//
// Each model runs its own engine loop; HTTP runs on its own threads (see
// include/izwi/server/server.hpp and docs/server.md). SIGINT/SIGTERM stop it
// gracefully: in-flight requests finish (until --shutdown-grace-s), then exit 0.

#include <boost/json/src.hpp>  // Boost.JSON's compiled part, once per program

#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "izwi/kernels/cpu/dispatch.hpp"
#include "izwi/server/model_loader.hpp"
#include "izwi/server/model_registry.hpp"
#include "izwi/server/server.hpp"

namespace {

constexpr const char* usage_text = R"(usage: izwi-server --model PATH [--model PATH ...] [--models-dir DIR] [options]

An OpenAI-compatible server (/v1/chat/completions, /v1/completions, /v1/models,
/health, /metrics, /v1/admin/models) for Qwen3 checkpoints: Hugging Face
directories (config.json, *.safetensors, tokenizer.json) or .gguf files.

Models:
  --model PATH               serve this checkpoint, under its directory or file name
                             (repeatable); /health answers 503 until all are loaded
  --models-dir DIR           checkpoints an admin may load and unload at run time
                             (POST /v1/admin/models/{id}/load, .../unload)

HTTP:
  --host ADDR                address to listen on (default 127.0.0.1; 0.0.0.0 for all)
  --port N                   port (default 8000; 0 picks a free one, printed at start)
  --api-key KEY              require 'Authorization: Bearer KEY' (repeatable; also
                             IZWI_API_KEY); /health, /livez, /readyz, /metrics stay open
  --admin-api-key KEY        the key of /v1/admin/* (load, unload, admin views;
                             repeatable; also IZWI_ADMIN_API_KEY). Inference keys never
                             open them; without one they answer 403
  --http-threads N           I/O threads (default 2)
  --max-body-mb N            largest request body in MB (default 25) -> 413
  --max-connections N        open connections (default 1024, lowered to fit the
                             open-file limit, which start-up raises to the hard limit);
                             beyond, 503
  --header-timeout-s N       seconds to send a request's headers (default 10)
  --body-timeout-s N         seconds to send a request's body (default 60)
  --idle-timeout-s N         keep-alive connections idle this long are closed (default 30)
  --shutdown-grace-s N       on SIGINT/SIGTERM, in-flight requests get this long (default 30)
  --no-access-log            no per-request line on stderr
  --special-tokens-as-text   encode "<|im_end|>" and other special tokens spelled in
                             prompts and messages as plain text (default: parsed as
                             control tokens, as vLLM does; a request's
                             "special_tokens_as_text" overrides)

Engine (per model):
  --threads N                executor threads (default: one per core)
  --max-queue N              waiting requests before 429, per model and in the prompt
                             preparation queue (default 256; 0: no limit)
  --kv-cache-mb N            KV-cache memory (default 1024)
  --max-num-seqs N           sequences per step (default: the scheduler's, 128)
  --max-num-batched-tokens N tokens per step (default: the scheduler's, 2048)
  --max-model-len N          context limit (default: the model's, clamped to what the
                             KV cache holds for one request; said at start-up)
  --no-prefix-caching        do not reuse cached prompt prefixes

  -h, --help                 this text
)";

struct Options {
  std::vector<std::filesystem::path> models;
  std::optional<std::filesystem::path> models_dir;
  izwi::server::ServerConfig server;
  izwi::server::CpuLoaderSettings loader;
};

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "izwi-server: %s\n(izwi-server --help lists the options)\n", message.c_str());
  std::exit(2);
}

template <class T>
T parse_number(std::string_view flag, std::string_view text, T min, T max) {
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max)
    usage_error(std::string(flag) + " wants a number in [" + std::to_string(min) + ", " + std::to_string(max) +
                "], got '" + std::string(text) + "'");
  return value;
}

Options parse_args(int argc, char** argv) {
  Options o;
  o.server.handle_signals = true;
  if (const char* key = std::getenv("IZWI_API_KEY"); key && *key) o.server.api_keys.emplace_back(key);
  if (const char* key = std::getenv("IZWI_ADMIN_API_KEY"); key && *key) o.server.admin_api_keys.emplace_back(key);
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto value = [&]() -> std::string_view {
      if (i + 1 >= argc) usage_error(std::string(arg) + " needs a value");
      return argv[++i];
    };
    constexpr std::size_t big = std::size_t{1} << 40;
    if (arg == "-h" || arg == "--help") {
      std::fputs(usage_text, stdout);
      std::exit(0);
    } else if (arg == "--model") {
      o.models.emplace_back(value());
    } else if (arg == "--models-dir") {
      o.models_dir = std::filesystem::path(value());
    } else if (arg == "--host") {
      o.server.host = value();
    } else if (arg == "--port") {
      o.server.port = parse_number<unsigned short>(arg, value(), 0, 65535);
    } else if (arg == "--api-key") {
      o.server.api_keys.emplace_back(value());
    } else if (arg == "--admin-api-key") {
      o.server.admin_api_keys.emplace_back(value());
    } else if (arg == "--http-threads") {
      o.server.io_threads = parse_number<std::size_t>(arg, value(), 1, 256);
    } else if (arg == "--max-body-mb") {
      o.server.limits.max_body_bytes = parse_number<std::size_t>(arg, value(), 1, 1 << 20) << 20;
    } else if (arg == "--max-connections") {
      o.server.limits.max_connections = parse_number<std::size_t>(arg, value(), 1, 1 << 20);
    } else if (arg == "--header-timeout-s") {
      o.server.limits.header_timeout = seconds(parse_number<long>(arg, value(), 1, 3600));
    } else if (arg == "--body-timeout-s") {
      o.server.limits.body_timeout = seconds(parse_number<long>(arg, value(), 1, 3600));
    } else if (arg == "--idle-timeout-s") {
      o.server.limits.idle_timeout = seconds(parse_number<long>(arg, value(), 1, 3600));
    } else if (arg == "--shutdown-grace-s") {
      o.server.shutdown_grace = seconds(parse_number<long>(arg, value(), 0, 3600));
    } else if (arg == "--special-tokens-as-text") {
      o.server.special_tokens_as_text = true;
    } else if (arg == "--no-access-log") {
      o.server.access_log = false;
    } else if (arg == "--threads") {
      o.loader.num_threads = parse_number<std::size_t>(arg, value(), 0, 1024);
    } else if (arg == "--max-queue") {
      o.loader.max_waiting_requests = parse_number<std::size_t>(arg, value(), 0, big);
      o.server.max_queued_preparations = o.loader.max_waiting_requests;  // the prep queue counts too
    } else if (arg == "--kv-cache-mb") {
      o.loader.kv_cache_bytes = parse_number<std::size_t>(arg, value(), 1, 1 << 24) << 20;
    } else if (arg == "--max-num-seqs") {
      o.loader.max_num_seqs = parse_number<std::size_t>(arg, value(), 1, 1 << 16);
    } else if (arg == "--max-num-batched-tokens") {
      o.loader.max_num_batched_tokens = parse_number<std::size_t>(arg, value(), 1, 1 << 24);
    } else if (arg == "--max-model-len") {
      o.loader.max_model_len = parse_number<std::size_t>(arg, value(), 1, 1 << 24);
    } else if (arg == "--no-prefix-caching") {
      o.loader.enable_prefix_caching = false;
    } else {
      usage_error("unknown option '" + std::string(arg) + "'");
    }
  }
  return o;
}

/// What to serve when neither --model nor --models-dir is given: nothing —
/// the server cannot guess. The README's main job (scripts/run-demo.sh)
/// generates a random-weight demo checkpoint and passes it as --model.
std::optional<std::filesystem::path> default_model_when_none_given() {
  std::fputs("izwi-server: no model to serve: give --model PATH (a Hugging Face Qwen3 directory or a .gguf file)\n"
             "and/or --models-dir DIR. Example:\n"
             "  izwi-server --model ./Qwen3-0.6B --port 8000\n"
             "scripts/run-demo.sh serves a generated random-weight Qwen3 when given no --model.\n"
             "(izwi-server --help lists the options)\n",
             stderr);
  return std::nullopt;
}

/// The CPU kernel variant chosen for this CPU (kernels/cpu/dispatch.hpp),
/// and the ones IZWI_CPU_ARCH could force instead.
void log_cpu_kernels() {
  std::string built;
  for (std::string_view name : izwi::kernels::cpu::compiled_kernel_names())
    built += (built.empty() ? "" : "|") + std::string(name);
  std::fprintf(stderr, "%s: CPU kernels: %s (IZWI_CPU_ARCH=%s forces one)\n", "izwi-server",
               izwi::kernels::cpu::active_kernels().name, built.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Options options = parse_args(argc, argv);
  log_cpu_kernels();
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
  izwi::server::Server server(options.server, registry);

  // Startup models are queued before the server listens, so /health says 503
  // until they are in (they load on the registry's thread while the server
  // already answers). A model that fails to load ends the process, as vLLM
  // does: an operator asked for it.
  std::atomic<bool> load_failed{false};
  for (const auto& path : options.models) {
    std::fprintf(stderr, "izwi-server: loading %s\n", path.string().c_str());
    try {
      registry.load_path(path, std::nullopt,
                         [&server, &registry, &load_failed, path](std::optional<izwi::server::ApiError> error) {
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
                           std::fprintf(stderr, "izwi-server: loaded %s\n", what.c_str());
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
  std::fprintf(stderr, "izwi-server: listening on http://%s:%u (%zu HTTP threads%s%s)\n", options.server.host.c_str(),
               static_cast<unsigned>(server.port()), options.server.io_threads,
               options.server.api_keys.empty() ? ", no API key" : ", API key required",
               options.server.admin_api_keys.empty() ? ", admin endpoints off (no --admin-api-key)"
                                                     : ", admin key required");
  if (load_failed) server.stop();  // a load that failed before the server started

  server.run();  // until SIGINT/SIGTERM
  std::fprintf(stderr, "izwi-server: stopped\n");
  return load_failed ? 1 : 0;
}
