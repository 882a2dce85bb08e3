// izwi-chat: chat with a Qwen3 checkpoint in the terminal.
//
//   izwi-chat MODEL [--system TEXT] [--threads N] [--max-tokens N] [--temperature T]
//             [--no-think] [--prompt TEXT]
//
// MODEL is a Hugging Face directory as published on the hub (config.json,
// model*.safetensors, tokenizer.json — e.g. a download of Qwen/Qwen3-0.6B)
// or a .gguf file with a tokenizer.json beside it. The conversation goes
// through Qwen3's chat template; the reply streams token by token and each
// turn ends with its tokens/s. With --prompt, one turn is answered and the
// program exits (scripts use it); otherwise it reads turns from stdin.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "izwi/engine/engine.hpp"
#include "izwi/executor/cpu.hpp"
#include "izwi/kernels/cpu/dispatch.hpp"
#include "izwi/kv_cache/paged.hpp"
#include "izwi/models/qwen3.hpp"
#include "izwi/scheduler/fcfs.hpp"
#include "izwi/stock_engines.hpp"
#include "izwi/tokenizer/chat_template.hpp"

#include <boost/program_options.hpp>

namespace {

namespace po = boost::program_options;

struct Options {
  std::string model;
  std::string system;
  std::string prompt;
  std::size_t threads = 0;
  std::uint32_t max_tokens = 512;
  float temperature = 0.6f;
  bool thinking = true;
};

constexpr const char* usage_line =
    "usage: izwi-chat MODEL [--system TEXT] [--threads N] [--max-tokens N] [--temperature T] [--no-think] "
    "[--prompt TEXT]\n";

Options parse(int argc, char** argv) {
  Options o;
  po::options_description options("options");
  options.add_options()
      ("system", po::value(&o.system)->value_name("TEXT"), "system message")
      ("prompt", po::value(&o.prompt)->value_name("TEXT"), "answer this one turn and exit (else read turns from stdin)")
      ("threads", po::value(&o.threads)->value_name("N")->default_value(o.threads), "CPU threads (0: all cores)")
      ("max-tokens", po::value(&o.max_tokens)->value_name("N")->default_value(o.max_tokens), "longest reply")
      ("temperature", po::value(&o.temperature)->value_name("T")->default_value(o.temperature, "0.6"), "sampling temperature")
      ("no-think", po::bool_switch(), "turn Qwen3's thinking off")
      ("help,h", "show this help");
  po::options_description hidden;
  hidden.add_options()("model", po::value(&o.model));
  po::options_description all;
  all.add(options).add(hidden);
  po::positional_options_description positional;
  positional.add("model", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "izwi-chat: " << e.what() << "\n" << usage_line << options;
    std::exit(2);
  }
  if (vm.count("help")) {
    std::cout << usage_line << options;
    std::exit(0);
  }
  o.thinking = !vm["no-think"].as<bool>();
  if (o.model.empty()) {
    std::cerr << "izwi-chat: MODEL is required\n" << usage_line << options;
    std::exit(2);
  }
  return o;
}

/// A one-line bar on stderr, redrawn in place.
void draw_progress(std::size_t done, std::size_t total) {
  const double fraction = total ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
  const int width = 40, filled = static_cast<int>(fraction * width);
  std::fprintf(stderr, "\rloading [%s%s] %5.1f%% of %.0f MB", std::string(filled, '#').c_str(),
               std::string(width - filled, '.').c_str(), fraction * 100.0, static_cast<double>(total) / 1e6);
  if (done >= total) std::fputc('\n', stderr);
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
  std::fprintf(stderr, "%s: CPU kernels: %s%s (IZWI_CPU_ARCH=%s forces one)\n", "izwi-chat", active.name,
               extensions.c_str(), built.c_str());
}

}  // namespace

int main(int argc, char** argv) try {
  const Options options = parse(argc, argv);
  log_cpu_kernels();
  izwi::Qwen3LoadOptions load;
  load.on_progress = draw_progress;
  izwi::Qwen3 model = izwi::Qwen3::load(options.model, load);
  if (!model.tokenizer()) {
    std::fprintf(stderr, "izwi-chat: %s has no tokenizer.json; a chat needs one\n", options.model.c_str());
    return 1;
  }
  std::fprintf(stderr, "%s: %u layers, hidden %u\n", model.description().c_str(), model.config().num_layers,
               model.config().hidden_size);

  izwi::CpuExecutor<izwi::Qwen3> executor(std::move(model), {.num_threads = options.threads});
  izwi::PagedKVCacheConfig cache_config;
  cache_config.byte_budget = std::size_t{1} << 30;
  izwi::PagedKVCache<> cache(executor.kv_cache_shape(), cache_config);
  izwi::Engine engine(izwi::FcfsScheduler{}, std::move(cache), std::move(executor));
  engine.run();
  const auto& tokenizer = *engine.executor().model().tokenizer();

  std::vector<izwi::tokenizer::ChatMessage> history;
  if (!options.system.empty()) history.push_back({"system", options.system, std::nullopt, {}});
  auto answer = [&](const std::string& user) {
    history.push_back({"user", user, std::nullopt, {}});
    izwi::tokenizer::ChatTemplateOptions chat;
    chat.add_generation_prompt = true;
    chat.enable_thinking = options.thinking;
    izwi::Request request;
    request.task = izwi::Task::chat;
    request.prompt_tokens = tokenizer.encode(izwi::tokenizer::render_qwen3_chat(history, chat));
    request.sampling.temperature = options.temperature;
    request.sampling.top_p = 0.95f;
    request.sampling.top_k = 20;
    request.sampling.max_tokens = options.max_tokens;
    izwi::ResponseStream stream = engine.generate_streaming(std::move(request));
    std::string reply;
    while (auto chunk = stream.next()) {
      std::fputs(chunk->text.c_str(), stdout);
      std::fflush(stdout);
      reply += chunk->text;
      if (chunk->finished())
        std::fprintf(stderr, "\n[%zu tokens, %.1f tokens/s, first token after %.0f ms, finish: %s]\n",
                     chunk->stats->num_output_tokens, chunk->stats->decode_tokens_per_second,
                     chunk->stats->time_to_first_token * 1e3,
                     std::string(izwi::to_string(*chunk->finish_reason)).c_str());
    }
    history.push_back({"assistant", reply, std::nullopt, {}});
  };

  if (!options.prompt.empty()) {
    answer(options.prompt);
    return 0;
  }
  std::string line;
  while (std::fprintf(stderr, "> "), std::getline(std::cin, line))
    if (!line.empty()) answer(line);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "\nizwi-chat: %s\n", e.what());
  return 1;
}
