// izwi-whisper-transcribe: runs a Whisper checkpoint (HF directory or
// whisper.cpp ggml .bin) on the first 30-s window of an audio file with greedy
// decoding, and prints the text, the token ids and how long each stage took.
// A tool for checking a checkpoint by hand and for side-by-side timing with
// whisper-cli; the server's /v1/audio/transcriptions comes with the engine
// integration.
//
//   izwi-whisper-transcribe --model PATH --file audio.wav [--language en|auto] [--translate]
//       [--timestamps] [--threads N] [--tiktoken FILE] [--kv f32|f16]
//   izwi-whisper-transcribe --help
//
// Exit status: 0; 1 when loading or decoding fails; 2 for a mistake on the
// command line.

#include <chrono>
#include <ctime>
#include <iostream>
#include <string>

#include "izwi/audio/decode.hpp"
#include "izwi/audio/mel.hpp"
#include "izwi/models/whisper.hpp"
#include "izwi/models/whisper_runner.hpp"

#include "command_line.hpp"

namespace po = boost::program_options;
namespace cli = izwi::command_line;

namespace {

struct Options {
  std::string model, file, tiktoken;
  std::string language = "en";
  std::string kv = "f32";
  bool translate = false, timestamps = false;
  std::size_t threads = 0;  // WhisperRunner's 0: all cores
};

constexpr cli::Program program{
    "izwi-whisper-transcribe", "izwi-whisper-transcribe --model PATH --file AUDIO [options]",
    "transcribes the first 30-s window of an audio file (greedy), with timings"};

Options parse(int argc, char** argv) {
  Options o;
  po::options_description options("options");
  options.add_options()
      ("model", po::value(&o.model)->value_name("PATH"), "HF directory or whisper.cpp ggml .bin (required)")
      ("file", po::value(&o.file)->value_name("AUDIO"), "audio file to transcribe (required)")
      ("language", po::value(&o.language)->value_name("CODE|auto")->default_value(o.language),
       "spoken language; auto detects it")
      ("translate", po::bool_switch(&o.translate), "translate to English")
      ("timestamps", po::bool_switch(&o.timestamps), "decode with timestamp tokens")
      ("threads", po::value(&o.threads)->value_name("N")->default_value(o.threads), "threads (0: all cores)")
      ("tiktoken", po::value(&o.tiktoken)->value_name("FILE"),
       "openai-whisper's rank file, for the text when the checkpoint has no tokenizer")
      ("kv", po::value(&o.kv)->value_name("f32|f16")->default_value(o.kv), "KV-cache element type")
      ("help,h", "show this help");
  cli::read_command_line(argc, argv, program, options);
  if (o.model.empty() || o.file.empty()) cli::usage_error(program, "--model and --file are required");
  if (o.kv != "f32" && o.kv != "f16") cli::usage_error(program, "--kv takes f32 or f16");
  return o;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// CPU seconds of the whole process (all threads): with --threads 1 the
/// decoder's own work, much less sensitive to other programs than wall time.
double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

izwi::Whisper load_model(const Options& o) {
  const auto start = std::chrono::steady_clock::now();
  izwi::WhisperLoadOptions load;
  load.kv_cache_dtype = o.kv == "f16" ? izwi::DType::f16 : izwi::DType::f32;
  if (!o.tiktoken.empty()) load.tiktoken_file = o.tiktoken;
  izwi::Whisper model = izwi::Whisper::load(o.model, load);
  std::cerr << "loaded " << model.description() << " in " << seconds_since(start) << " s\n";
  return model;
}

/// The log-mel of the audio file, run through the encoder.
void encode(const Options& o, const izwi::Whisper& model, izwi::WhisperRunner& runner) {
  izwi::audio::DecodeOptions decode;
  decode.target_sample_rate = izwi::audio::whisper_sample_rate;
  const auto audio = izwi::audio::decode_file(o.file, decode);
  auto start = std::chrono::steady_clock::now();
  const auto mel = izwi::audio::WhisperLogMel(model.config().n_mels)(audio.audio.samples);
  std::cerr << "log-mel: " << seconds_since(start) << " s\n";
  start = std::chrono::steady_clock::now();
  runner.start(mel.values);
  std::cerr << "encoder: " << seconds_since(start) << " s\n";
}

/// Greedy decoding of the encoded window, timed in wall and CPU seconds.
izwi::WhisperGreedyResult decode(const Options& o, izwi::WhisperRunner& runner) {
  izwi::WhisperGreedyOptions options;
  options.language = o.language;
  if (o.language == "auto") {
    const izwi::WhisperLanguage detected = izwi::whisper_detect_language(runner);
    std::cerr << "language: " << detected.code << " (p = " << detected.probability << ")\n";
    options.language = detected.code;
  }
  options.translate = o.translate;
  options.timestamps = o.timestamps;
  const auto start = std::chrono::steady_clock::now();
  const double cpu_start = process_cpu_seconds();
  izwi::WhisperGreedyResult result = izwi::whisper_greedy_decode(runner, options);
  const double decode_seconds = seconds_since(start), decode_cpu = process_cpu_seconds() - cpu_start;
  std::cerr << "decoder: " << result.tokens.size() << " tokens in " << decode_seconds << " s ("
            << static_cast<double>(result.tokens.size()) / decode_seconds << " tokens/s); CPU " << decode_cpu
            << " s (" << 1e3 * decode_cpu / static_cast<double>(result.tokens.size()) << " ms per token)\n";
  return result;
}

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  const izwi::Whisper model = load_model(o);
  izwi::WhisperRunner runner(model, {.num_threads = o.threads});
  encode(o, model, runner);
  const izwi::WhisperGreedyResult result = decode(o, runner);
  std::cout << "tokens:";
  for (auto t : result.tokens) std::cout << ' ' << t;
  std::cout << "\ntext: " << result.text << "\n";
  if (model.tokenizer() == nullptr) std::cerr << "(no tokenizer: give --tiktoken for text)\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "izwi-whisper-transcribe: " << e.what() << "\n";
  return 1;
}
