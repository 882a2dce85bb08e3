// izwi-qwen3-tts-bench: speed of Qwen3-TTS on the engine (what izwi-server
// runs), for an idle machine (figures taken while others compile are not
// evidence).
//
//   izwi-qwen3-tts-bench DIR [--threads 2] [--frames 48] [--streams 1,4,8]
//                            [--first-window 2] [--window 8] [--batch-variant]
//                            [--reference-seconds S] [--codec-precision f32|bf16] [--mmap]
//   izwi-qwen3-tts-bench --gguf TALKER.gguf --mmproj MMPROJ.gguf [...]   (llama.cpp's pair: the peer's very file)
//   izwi-qwen3-tts-bench --help
//
// Exit status: 0 after a run or --help, 2 for bad arguments, 1 when the model
// fails to load or run.
//
// For each stream count S: S speech requests added together to a
// Qwen3TtsCpuEngine (sampled as upstream, EOS masked so each makes --frames
// frames), stepped until all finish. Prints the aggregate frames/s, the
// aggregate speed in audio seconds per wall second (above 1: faster than real
// time), each stream's mean frames/s, and the mean and worst time to first
// audio. llama.cpp's llama-tts prints frames/s and its real-time ratio for
// one stream on the GGUF pair izwi-qwen3-tts-to-gguf writes.
// --codec-precision bf16 runs the codec's convolutional decoder in bf16 on
// AMX or AVX512_BF16 where the CPU has one (Qwen3TtsCodecPrecision; f32 elsewhere): the A/B
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
#include <iostream>
#include <string>
#include <vector>

#include "izwi/models/qwen3_tts_request.hpp"
#include "izwi/stock_engines.hpp"

#include "command_line.hpp"

namespace po = boost::program_options;
namespace cli = izwi::command_line;
using namespace izwi;

namespace {

constexpr cli::Program program{"izwi-qwen3-tts-bench",
                               "izwi-qwen3-tts-bench DIR | --gguf TALKER.gguf --mmproj MMPROJ.gguf [options]",
                               "speed of Qwen3-TTS on the engine"};

struct Options {
  std::string dir, talker_gguf, mmproj_gguf;  // DIR, or llama.cpp's pair
  std::size_t threads = 2, frames = 48, first_window = 2, window = 8;
  std::vector<std::size_t> streams = {1, 4, 8};
  bool batch_invariant = true;
  double reference_seconds = 0;  // 0: no in-context cloning
  Qwen3TtsLoadOptions load;
};

/// "1,4,8" -> {1, 4, 8}; every item a positive count.
std::vector<std::size_t> parse_streams(const std::string& text) {
  if (text.empty()) cli::usage_error(program, "--streams needs at least one stream count (1,4,8)");
  const auto streams = cli::parse_count_list(text);
  if (!streams || std::find(streams->begin(), streams->end(), std::size_t{0}) != streams->end())
    cli::usage_error(program, "--streams takes positive stream counts separated by commas (1,4,8), not " + text);
  return *streams;
}

Options parse(int argc, char** argv) {
  Options o;
  std::string streams = "1,4,8", codec_precision = "f32";
  po::options_description options("options");
  options.add_options()
      ("gguf", po::value(&o.talker_gguf)->value_name("TALKER.gguf"),
       "llama.cpp's talker, instead of DIR (needs --mmproj)")
      ("mmproj", po::value(&o.mmproj_gguf)->value_name("MMPROJ.gguf"), "llama.cpp's mmproj, with --gguf")
      ("threads", cli::count(&o.threads)->value_name("N"), "CPU threads")
      ("frames", cli::count(&o.frames)->value_name("N"), "frames each stream makes (EOS masked)")
      ("streams", po::value(&streams)->value_name("LIST")->default_value(streams),
       "stream counts to time, comma-separated: one row each")
      ("first-window", cli::count(&o.first_window)->value_name("N"), "frames in the first audio window")
      ("window", cli::count(&o.window)->value_name("N"), "frames the audio windows double up to")
      ("batch-variant", po::bool_switch(), "row-count-dependent kernels (batch_invariant off)")
      ("reference-seconds", po::value(&o.reference_seconds)->value_name("S")->default_value(o.reference_seconds),
       "clone every request in context from S seconds of a synthetic reference (a Base checkpoint; 0: no cloning)")
      ("codec-precision", po::value(&codec_precision)->value_name("f32|bf16")->default_value(codec_precision),
       "the codec decoder's precision (bf16: AMX or AVX512_BF16 where the CPU has one)")
      ("mmap", po::bool_switch(), "map the checkpoint instead of reading it into huge-page memory")
      ("help,h", "show this help");
  po::options_description hidden;
  hidden.add_options()("dir", po::value(&o.dir));
  po::positional_options_description positional;
  positional.add("dir", 1);
  const po::variables_map vm = cli::read_command_line(argc, argv, program, options, hidden, positional);
  if (!o.dir.empty() && !o.talker_gguf.empty()) cli::usage_error(program, "give DIR or --gguf and --mmproj, not both");
  if (o.dir.empty() && o.talker_gguf.empty()) cli::usage_error(program, "no model: give DIR, or --gguf and --mmproj");
  if (o.talker_gguf.empty() != o.mmproj_gguf.empty()) cli::usage_error(program, "--gguf and --mmproj go together");
  if (o.frames == 0 || o.window == 0 || o.first_window == 0)
    cli::usage_error(program, "--frames, --window and --first-window must be positive");
  if (!std::isfinite(o.reference_seconds) || o.reference_seconds < 0)
    cli::usage_error(program, "--reference-seconds must be 0 (no cloning) or more");
  o.streams = parse_streams(streams);
  const auto precision = parse_qwen3_tts_codec_precision(codec_precision);
  if (!precision) cli::usage_error(program, "--codec-precision takes f32 or bf16, not " + codec_precision);
  o.load.codec_precision = *precision;
  if (vm["mmap"].as<bool>()) o.load.weights_memory = io::FileMemory::map;
  o.batch_invariant = !vm["batch-variant"].as<bool>();
  return o;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// In-context cloning's x-vector, codes and transcript from o.reference_seconds
/// of a synthetic reference; prints what each took, once.
Qwen3TtsRequest in_context_clone(const Qwen3Tts& model, const Options& o) {
  Qwen3TtsRequest clone;
  std::vector<float> reference(static_cast<std::size_t>(o.reference_seconds * 24000));
  for (std::size_t i = 0; i < reference.size(); ++i)
    reference[i] = static_cast<float>(0.3 * std::sin(0.037 * double(i)) + 0.1 * std::sin(0.11 * double(i)));
  detail::ThreadPool pool(o.threads);
  auto start = std::chrono::steady_clock::now();
  clone.speaker_embedding = model.speaker_embedding(reference, 24000, pool);
  const double xvector_s = seconds_since(start);
  start = std::chrono::steady_clock::now();
  clone.reference_codes = model.reference_codes(reference, 24000, pool);
  const double codes_s = seconds_since(start);
  clone.reference_text_tokens = {40, 1079, 264, 5785, 311, 1473, 279, 1273, 13};
  clone.text_mode = Qwen3TtsTextMode::streaming;
  std::printf("in-context cloning from %.1f s of reference: x-vector %.3f s, %zu frames of codes %.3f s\n",
              o.reference_seconds, xvector_s, clone.reference_codes.size() / model.config().num_code_groups, codes_s);
  return clone;
}

/// `streams` requests (each `clone` plus the same text) added together to a
/// fresh engine, stepped until all finish; prints the table's row.
void time_streams(const Qwen3Tts& model, const Options& o, const Qwen3TtsRequest& clone, std::size_t streams) {
  Qwen3TtsCpuExecutor executor(model, {.num_threads = o.threads, .batch_invariant = o.batch_invariant});
  PagedKVCacheConfig cache_config;
  cache_config.byte_budget = std::size_t{1} << 30;
  PagedKVCache<> cache(executor.kv_cache_shape(), cache_config);
  Qwen3TtsCpuEngine engine(FcfsScheduler{}, std::move(cache), std::move(executor));
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < streams; ++i) {
    Qwen3TtsRequest r = clone;
    r.text_tokens = {9707, 11, 1879, 13, 1096, 374, 264, 1273};
    r.sampling.seed = i + 1;
    r.sampling.max_frames = static_cast<std::uint32_t>(o.frames);
    r.sampling.min_frames = static_cast<std::uint32_t>(o.frames);  // the speed of `frames` frames, not of an early EOS
    engine.add_request(make_qwen3_tts_request(model, r, {static_cast<std::uint32_t>(o.first_window),
                                                         static_cast<std::uint32_t>(o.window)}));
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
  const double audio_per_frame = double(model.codec().samples_per_frame()) / model.codec().config().output_sample_rate;
  const double n = double(streams);
  std::printf("%8zu %12.2f %12.3f %14.2f %14.3f %14.3f\n", streams, double(total_frames) / wall,
              double(total_frames) * audio_per_frame / wall, per_stream / n, ttfa_sum / n, ttfa_worst);
}

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  const Qwen3Tts model = o.dir.empty() ? Qwen3Tts::load_gguf(o.talker_gguf, o.mmproj_gguf, o.load)
                                        : Qwen3Tts::load(o.dir, o.load);
  std::printf("model %s, %zu threads, %zu frames per stream, audio windows of %zu frames, doubling up to %zu, %s, "
              "codec %s, weights %s\n",
              model.description().c_str(), o.threads, o.frames, o.first_window, o.window,
              o.batch_invariant ? "batch-invariant kernels" : "batch-variant kernels (--batch-variant)",
              model.codec().precision() == Qwen3TtsCodecPrecision::bf16 ? "bf16" : "f32",
              o.load.weights_memory == io::FileMemory::map ? "mapped (--mmap)" : "read into huge pages");
  const Qwen3TtsRequest clone = o.reference_seconds > 0 ? in_context_clone(model, o) : Qwen3TtsRequest{};
  std::printf("%8s %12s %12s %14s %14s %14s\n", "streams", "total f/s", "audio s/s", "f/s per stream",
              "mean TTFA s", "worst TTFA s");
  for (std::size_t streams : o.streams) time_streams(model, o, clone, streams);
  return 0;
} catch (const std::exception& e) {
  std::cerr << program.name << ": " << e.what() << "\n";
  return 1;
}
