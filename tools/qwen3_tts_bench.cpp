// izwi-qwen3-tts-bench: speed of the Qwen3-TTS model side on the CPU, for an
// idle machine (figures taken while others compile are not evidence).
//
//   izwi-qwen3-tts-bench DIR [--threads 2] [--frames 48] [--streams 1,4,8] [--window 12]
//
// For each stream count S: S requests generated together (talker + code
// predictor, sampled as upstream, EOS masked so each makes --frames frames),
// then their codes decoded by the codec decoder in --window-frame windows,
// the S streams batched per window. Prints frames/s and the real-time factor
// (audio seconds per wall second) of each part and of both together.
// llama.cpp's llama-tts prints the same figures for one stream (its
// "timings" lines) on the GGUF pair izwi-qwen3-tts-to-gguf writes.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "izwi/kernels/cpu/thread_pool.hpp"
#include "izwi/models/qwen3_tts.hpp"

using namespace izwi;

namespace {

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
  std::string dir;
  std::size_t threads = 2, frames = 48, window = 12;
  std::vector<std::size_t> streams = {1, 4, 8};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--threads") threads = std::stoul(next());
    else if (a == "--frames") frames = std::stoul(next());
    else if (a == "--window") window = std::stoul(next());
    else if (a == "--streams") streams = parse_list(next());
    else if (dir.empty() && a.rfind("--", 0) != 0) dir = a;
    else throw std::runtime_error("unknown argument " + a);
  }
  if (dir.empty() || frames == 0 || window == 0) {
    std::cerr << "usage: izwi-qwen3-tts-bench DIR [--threads 2] [--frames 48] [--streams 1,4,8] [--window 12]\n";
    return 2;
  }
  const Qwen3Tts model = Qwen3Tts::load(dir);
  detail::ThreadPool pool(threads);
  const double audio_per_frame = double(model.codec().samples_per_frame()) / model.codec().config().output_sample_rate;
  std::printf("model %s, %zu threads, %zu frames per stream, codec windows of %zu frames\n",
              model.description().c_str(), threads, frames, window);
  std::printf("%8s %14s %14s %14s %10s\n", "streams", "talker+pred f/s", "codec f/s", "total f/s", "RTF");
  for (std::size_t s : streams) {
    std::vector<Qwen3TtsRequest> requests(s);
    for (std::size_t i = 0; i < s; ++i) {
      requests[i].text_tokens = {9707, 11, 1879, 13, 1096, 374, 264, 1273};
      requests[i].sampling.seed = i + 1;
      requests[i].sampling.max_frames = static_cast<std::uint32_t>(frames);
      requests[i].sampling.min_frames = static_cast<std::uint32_t>(frames);  // the speed of `frames` frames, not of an early EOS
    }
    Qwen3TtsGenerator generator(model, pool);
    auto start = std::chrono::steady_clock::now();
    const std::vector<Qwen3TtsCodes> codes = generator.generate(requests);
    const double generate_s = seconds_since(start);
    std::size_t total_frames = 0;
    for (const auto& c : codes) total_frames += c.frames;

    const std::size_t groups = model.config().num_code_groups;
    std::vector<Qwen3TtsCodecState> states;
    for (std::size_t i = 0; i < s; ++i) states.push_back(model.codec().new_stream());
    std::vector<std::vector<float>> pcm(s);
    start = std::chrono::steady_clock::now();
    for (std::size_t first = 0; first < frames; first += window) {
      std::vector<Qwen3TtsCodecStream> batch;
      for (std::size_t i = 0; i < s; ++i) {
        const std::size_t n = std::min(window, codes[i].frames > first ? codes[i].frames - first : 0);
        if (n > 0) batch.push_back({&states[i], std::span(codes[i].codes).subspan(first * groups, n * groups), &pcm[i]});
      }
      if (!batch.empty()) model.codec().decode_batch(pool, batch);
    }
    const double decode_s = seconds_since(start);
    const double total_s = generate_s + decode_s;
    std::printf("%8zu %14.2f %14.2f %14.2f %10.3f\n", s, double(total_frames) / generate_s,
                double(total_frames) / decode_s, double(total_frames) / total_s,
                double(total_frames) * audio_per_frame / total_s);
  }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "izwi-qwen3-tts-bench: " << e.what() << "\n";
  return 1;
}
