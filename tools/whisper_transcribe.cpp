// izwi-whisper-transcribe: runs a Whisper checkpoint (HF directory or
// whisper.cpp ggml .bin) on the first 30-s window of an audio file with greedy
// decoding, and prints the text, the token ids and how long each stage took.
// A tool for checking a checkpoint by hand and for side-by-side timing with
// whisper-cli; the server's /v1/audio/transcriptions comes with the engine
// integration.
//
//   izwi-whisper-transcribe --model PATH --file audio.wav [--language en|auto] [--translate]
//       [--timestamps] [--threads N] [--tiktoken FILE] [--kv f32|f16]

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <string>

#include "izwi/audio/decode.hpp"
#include "izwi/audio/mel.hpp"
#include "izwi/models/whisper.hpp"
#include "izwi/models/whisper_runner.hpp"

namespace {

[[noreturn]] void usage(const std::string& problem) {
  std::cerr << "izwi-whisper-transcribe: " << problem
            << "\nusage: izwi-whisper-transcribe --model PATH --file AUDIO [--language en|auto] [--translate]"
               " [--timestamps] [--threads N] [--tiktoken FILE] [--kv f32|f16]\n";
  std::exit(2);
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

}  // namespace

int main(int argc, char** argv) try {
  std::string model_path, file, language = "en", tiktoken, kv = "f32";
  bool translate = false, timestamps = false;
  std::size_t threads = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--model") model_path = value();
    else if (a == "--file") file = value();
    else if (a == "--language") language = value();
    else if (a == "--translate") translate = true;
    else if (a == "--timestamps") timestamps = true;
    else if (a == "--threads") threads = std::stoul(value());
    else if (a == "--tiktoken") tiktoken = value();
    else if (a == "--kv") kv = value();
    else usage("unknown option " + a);
  }
  if (model_path.empty() || file.empty()) usage("--model and --file are required");
  if (kv != "f32" && kv != "f16") usage("--kv takes f32 or f16");

  auto start = std::chrono::steady_clock::now();
  izwi::WhisperLoadOptions load;
  load.kv_cache_dtype = kv == "f16" ? izwi::DType::f16 : izwi::DType::f32;
  if (!tiktoken.empty()) load.tiktoken_file = tiktoken;
  const izwi::Whisper model = izwi::Whisper::load(model_path, load);
  std::cerr << "loaded " << model.description() << " in " << seconds_since(start) << " s\n";

  izwi::audio::DecodeOptions decode;
  decode.target_sample_rate = izwi::audio::whisper_sample_rate;
  const auto audio = izwi::audio::decode_file(file, decode);
  start = std::chrono::steady_clock::now();
  const auto mel = izwi::audio::WhisperLogMel(model.config().n_mels)(audio.audio.samples);
  std::cerr << "log-mel: " << seconds_since(start) << " s\n";

  izwi::WhisperRunner runner(model, {.num_threads = threads});
  start = std::chrono::steady_clock::now();
  runner.start(mel.values);
  std::cerr << "encoder: " << seconds_since(start) << " s\n";

  if (language == "auto") {
    const izwi::WhisperLanguage detected = izwi::whisper_detect_language(runner);
    std::cerr << "language: " << detected.code << " (p = " << detected.probability << ")\n";
    language = detected.code;
  }
  izwi::WhisperGreedyOptions options;
  options.language = language;
  options.translate = translate;
  options.timestamps = timestamps;
  start = std::chrono::steady_clock::now();
  const double cpu_start = process_cpu_seconds();
  const izwi::WhisperGreedyResult result = izwi::whisper_greedy_decode(runner, options);
  const double decode_seconds = seconds_since(start), decode_cpu = process_cpu_seconds() - cpu_start;
  std::cerr << "decoder: " << result.tokens.size() << " tokens in " << decode_seconds << " s ("
            << static_cast<double>(result.tokens.size()) / decode_seconds << " tokens/s); CPU " << decode_cpu
            << " s (" << 1e3 * decode_cpu / static_cast<double>(result.tokens.size()) << " ms per token)\n";
  std::cout << "tokens:";
  for (auto t : result.tokens) std::cout << ' ' << t;
  std::cout << "\ntext: " << result.text << "\n";
  if (model.tokenizer() == nullptr) std::cerr << "(no tokenizer: give --tiktoken for text)\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "izwi-whisper-transcribe: " << e.what() << "\n";
  return 1;
}
