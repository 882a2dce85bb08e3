// izwi-qwen3-tts-bench: speed of Qwen3-TTS on the engine (what izwi-server
// runs), for an idle machine (figures taken while others compile are not
// evidence).
//
//   izwi-qwen3-tts-bench DIR [--threads 2] [--frames 48] [--streams 1,4,8]
//                            [--first-window 2] [--window 8] [--batch-variant]
//                            [--reference-seconds S] [--codec-precision f32|bf16] [--mmap]
//   izwi-qwen3-tts-bench --gguf TALKER.gguf --mmproj MMPROJ.gguf [...]   (llama.cpp's pair: the peer's very file)
//
// For each stream count S: S speech requests added together to a
// Qwen3TtsCpuEngine (sampled as upstream, EOS masked so each makes --frames
// frames), stepped until all finish. Prints the aggregate frames/s, the
// aggregate speed in audio seconds per wall second (above 1: faster than real
// time), each stream's mean frames/s, and the mean and worst time to first
// audio. llama.cpp's llama-tts prints frames/s and its real-time ratio for
// one stream on the GGUF pair izwi-qwen3-tts-to-gguf writes.
// --codec-precision bf16 runs the codec's convolutional decoder on AMX in
// bf16 where the CPU has it (Qwen3TtsCodecPrecision; f32 elsewhere): the A/B
// of the codec's precision. --mmap maps the talker's and predictor's
// checkpoint instead of reading it into huge-page memory (io::FileMemory):
// the A/B of that choice.
// --batch-variant runs the executor with batch_invariant off (the
// row-count-dependent kernels): the A/B of what the batch-invariance
// guarantee costs. --reference-seconds S (a Base checkpoint with the speech
// tokenizer's encoder) clones every request in context from S seconds of a
// synthetic reference: it prints the time of the x-vector and of the reference
// codes once, and the TTFA then includes the longer prompt and the codec's
// reference prefix.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "izwi/models/qwen3_tts_request.hpp"
#include "izwi/stock_engines.hpp"

using namespace izwi;

namespace {

Qwen3TtsCodecPrecision parse_codec_precision(const std::string& text) {
  if (const auto precision = parse_qwen3_tts_codec_precision(text)) return *precision;
  throw std::runtime_error("--codec-precision takes f32 or bf16, not " + text);
}

std::vector<std::size_t> parse_list(const std::string& text) {
  std::vector<std::size_t> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::stoul(item));
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) try {
  std::string dir, talker_gguf, mmproj_gguf;
  std::size_t threads = 2, frames = 48, first_window = 2, window = 8;
  std::vector<std::size_t> streams = {1, 4, 8};
  bool batch_invariant = true;
  double reference_seconds = 0;
  Qwen3TtsLoadOptions load_options;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--threads") threads = std::stoul(next());
    else if (a == "--frames") frames = std::stoul(next());
    else if (a == "--window") window = std::stoul(next());
    else if (a == "--first-window") first_window = std::stoul(next());
    else if (a == "--gguf") talker_gguf = next();
    else if (a == "--mmproj") mmproj_gguf = next();
    else if (a == "--streams") streams = parse_list(next());
    else if (a == "--batch-variant") batch_invariant = false;
    else if (a == "--reference-seconds") reference_seconds = std::stod(next());
    else if (a == "--codec-precision") load_options.codec_precision = parse_codec_precision(next());
    else if (a == "--mmap") load_options.weights_memory = io::FileMemory::map;
    else if (dir.empty() && a.rfind("--", 0) != 0) dir = a;
    else throw std::runtime_error("unknown argument " + a);
  }
  if ((dir.empty() == talker_gguf.empty()) || talker_gguf.empty() != mmproj_gguf.empty() || frames == 0 ||
      window == 0 || first_window == 0) {
    std::cerr << "usage: izwi-qwen3-tts-bench DIR | --gguf TALKER.gguf --mmproj MMPROJ.gguf [--threads 2] [--frames 48] "
                 "[--streams 1,4,8] [--first-window 2] [--window 8] [--batch-variant] [--reference-seconds S] "
                 "[--codec-precision f32|bf16] [--mmap]\n";
    return 2;
  }
  const Qwen3Tts model = dir.empty() ? Qwen3Tts::load_gguf(talker_gguf, mmproj_gguf, load_options)
                                      : Qwen3Tts::load(dir, load_options);
  const double audio_per_frame = double(model.codec().samples_per_frame()) / model.codec().config().output_sample_rate;
  std::printf("model %s, %zu threads, %zu frames per stream, audio windows of %zu frames, doubling up to %zu, %s, "
              "codec %s, weights %s\n",
              model.description().c_str(), threads, frames, first_window, window,
              batch_invariant ? "batch-invariant kernels" : "batch-variant kernels (--batch-variant)",
              model.codec().precision() == Qwen3TtsCodecPrecision::bf16 ? "bf16 (AMX)" : "f32",
              load_options.weights_memory == io::FileMemory::map ? "mapped (--mmap)" : "read into huge pages");
  Qwen3TtsRequest clone;  // in-context cloning's x-vector, codes and transcript (--reference-seconds)
  if (reference_seconds > 0) {
    std::vector<float> reference(static_cast<std::size_t>(reference_seconds * 24000));
    for (std::size_t i = 0; i < reference.size(); ++i)
      reference[i] = static_cast<float>(0.3 * std::sin(0.037 * double(i)) + 0.1 * std::sin(0.11 * double(i)));
    detail::ThreadPool pool(threads);
    auto start = std::chrono::steady_clock::now();
    clone.speaker_embedding = model.speaker_embedding(reference, 24000, pool);
    const double xvector_s = seconds_since(start);
    start = std::chrono::steady_clock::now();
    clone.reference_codes = model.reference_codes(reference, 24000, pool);
    const double codes_s = seconds_since(start);
    clone.reference_text_tokens = {40, 1079, 264, 5785, 311, 1473, 279, 1273, 13};
    clone.text_mode = Qwen3TtsTextMode::streaming;
    std::printf("in-context cloning from %.1f s of reference: x-vector %.3f s, %zu frames of codes %.3f s\n",
                reference_seconds, xvector_s, clone.reference_codes.size() / model.config().num_code_groups, codes_s);
  }
  std::printf("%8s %12s %12s %14s %14s %14s\n", "streams", "total f/s", "audio s/s", "f/s per stream",
              "mean TTFA s", "worst TTFA s");
  for (std::size_t s : streams) {
    Qwen3TtsCpuExecutor executor(model, {.num_threads = threads, .batch_invariant = batch_invariant});
    PagedKVCacheConfig cache_config;
    cache_config.byte_budget = std::size_t{1} << 30;
    PagedKVCache<> cache(executor.kv_cache_shape(), cache_config);
    Qwen3TtsCpuEngine engine(FcfsScheduler{}, std::move(cache), std::move(executor));
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < s; ++i) {
      Qwen3TtsRequest r = clone;
      r.text_tokens = {9707, 11, 1879, 13, 1096, 374, 264, 1273};
      r.sampling.seed = i + 1;
      r.sampling.max_frames = static_cast<std::uint32_t>(frames);
      r.sampling.min_frames = static_cast<std::uint32_t>(frames);  // the speed of `frames` frames, not of an early EOS
      engine.add_request(make_qwen3_tts_request(model, r, {static_cast<std::uint32_t>(first_window),
                                                           static_cast<std::uint32_t>(window)}));
    }
    std::size_t total_frames = 0;
    double ttfa_sum = 0, ttfa_worst = 0, per_stream = 0;
    while (engine.has_unfinished_requests())
      for (const StreamChunk& chunk : engine.step())
        if (chunk.stats) {
          total_frames += chunk.stats->num_output_tokens;
          ttfa_sum += chunk.stats->time_to_first_audio;
          ttfa_worst = std::max(ttfa_worst, chunk.stats->time_to_first_audio);
          per_stream += chunk.stats->decode_tokens_per_second;
        }
    const double wall = seconds_since(start);
    std::printf("%8zu %12.2f %12.3f %14.2f %14.3f %14.3f\n", s, double(total_frames) / wall,
                double(total_frames) * audio_per_frame / wall, per_stream / double(s), ttfa_sum / double(s), ttfa_worst);
  }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "izwi-qwen3-tts-bench: " << e.what() << "\n";
  return 1;
}
