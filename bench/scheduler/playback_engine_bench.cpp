// izwi_playback_engine_bench: what listeners hear under overload, FCFS against
// playback-deadline scheduling, on the real engine (Qwen3TtsCpuExecutor) in
// wall-clock time. For an idle machine: the figures depend on its speed.
//
//   izwi_playback_engine_bench DIR [--threads 2] [--long-streams 3] [--long-frames 300]
//       [--burst-streams 5] [--burst-frames 60] [--burst-at 5] [--horizon 2]
//       [--first-audio 1] [--low-water 0.1] [--max-num-seqs 128] [--displace 0]
//
// DIR is a Qwen3-TTS checkpoint (Hugging Face layout), e.g. one written by
//   izwi-make-random-qwen3-tts --out DIR --shape 0.6b
// The scenario is the simulated one's "burst" (bench/scheduler/playback_bench.cpp):
// --long-streams requests of --long-frames frames arrive at 0, then
// --burst-streams of --burst-frames frames at --burst-at seconds. Each
// request is forced to its length (EOS masked). Pick the counts so that the
// burst needs more than the machine makes (the printed step-cost fit tells:
// a stream keeps real time while a step takes under 80 ms). For each
// scheduler: every stream's time to first audio and its listener's stalls
// (the listener model of test/scheduler/playback_simulation.hpp, on the
// wall-clock delivery times), and the step cost fitted as a + b * batch, which
// the simulation's --per-step / --per-sequence can take.

#include <chrono>
#include <cstdio>
#include <exception>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "izwi/scheduler/playback_deadline.hpp"
#include "izwi/stock_engines.hpp"
#include "scheduler/playback_simulation.hpp"

#include "command_line.hpp"

namespace po = boost::program_options;
namespace cli = izwi::command_line;

namespace {

using izwi::test::SimulationReport;
using izwi::test::StreamOutcome;

struct Options {
  std::string dir;
  std::size_t threads = 2;
  std::size_t long_streams = 3, long_frames = 300;
  std::size_t burst_streams = 5, burst_frames = 60;
  double burst_at = 5.0;
  izwi::SchedulerConfig scheduler;
};

struct Arrival {
  double at;
  std::size_t frames;
};

std::vector<Arrival> arrivals(const Options& o) {
  std::vector<Arrival> a;
  for (std::size_t i = 0; i < o.long_streams; ++i) a.push_back({0.0, o.long_frames});
  for (std::size_t i = 0; i < o.burst_streams; ++i) a.push_back({o.burst_at, o.burst_frames});
  return a;
}

double since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// Least-squares a + b * batch over (batch, seconds) pairs.
std::pair<double, double> fit_step_cost(const std::vector<std::pair<double, double>>& steps) {
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (auto [x, y] : steps) n += 1, sx += x, sy += y, sxx += x * x, sxy += x * y;
  const double det = n * sxx - sx * sx;
  if (n == 0 || det == 0) return {n ? sy / n : 0.0, 0.0};
  const double b = (n * sxy - sx * sy) / det;
  return {(sy - b * sx) / n, b};
}

template <class Engine>
SimulationReport run(Engine& engine, const Options& o) {
  const std::vector<Arrival> plan = arrivals(o);
  SimulationReport report;
  report.streams.resize(plan.size());
  std::map<izwi::RequestId, std::size_t> index;
  std::vector<std::vector<std::pair<double, double>>> deliveries(plan.size());
  std::vector<std::pair<double, double>> step_costs;
  std::size_t next = 0;
  const auto start = std::chrono::steady_clock::now();
  while (next < plan.size() || engine.has_unfinished_requests()) {
    for (; next < plan.size() && plan[next].at <= since(start); ++next) {
      izwi::Qwen3TtsRequest r;
      for (std::size_t k = 0; k < 12; ++k) r.text_tokens.push_back(static_cast<izwi::TokenId>(100 + 37 * next + k));
      r.sampling.seed = next + 1;
      r.sampling.max_frames = r.sampling.min_frames = static_cast<std::uint32_t>(plan[next].frames);
      const izwi::RequestId id = engine.add_request(izwi::make_qwen3_tts_request(engine.executor().model(), r));
      index[id] = next;
      report.streams[next] = StreamOutcome{.id = id, .audio = true, .arrival_seconds = since(start)};
    }
    if (!engine.has_unfinished_requests()) {
      std::this_thread::sleep_for(std::chrono::duration<double>(plan[next].at - since(start)));
      continue;
    }
    const double before = since(start);
    const auto& chunks = engine.step();
    const double after = since(start);
    ++report.steps;
    step_costs.emplace_back(static_cast<double>(engine.scheduler().last_plan().sequences.size()), after - before);
    for (const izwi::StreamChunk& c : chunks) {
      const std::size_t i = index.at(c.id);
      StreamOutcome& out = report.streams[i];
      if (!c.audio.empty()) {
        if (deliveries[i].empty()) out.time_to_first_audio = after - out.arrival_seconds;
        deliveries[i].emplace_back(after, static_cast<double>(c.audio.size()) / c.audio_sample_rate);
      }
      if (c.finished()) {
        out.completed = c.finish_reason == izwi::FinishReason::length;
        out.finished_at = after;
        if (c.stats) out.num_preemptions = c.stats->num_preemptions;
        izwi::test::listen(deliveries[i], out);
      }
    }
  }
  report.simulated_seconds = since(start);
  const auto [a, b] = fit_step_cost(step_costs);
  std::printf("    step cost fit: %.4f s + %.4f s per sequence (%zu steps)\n", a, b, step_costs.size());
  return report;
}

void print(const char* name, const SimulationReport& r) {
  std::printf("  %s: %zu steps, %.2f s wall\n", name, r.steps, r.simulated_seconds);
  std::printf("    %-4s %8s %8s %10s %9s %8s %7s\n", "id", "arrival", "audio_s", "ttfa_s", "underruns", "stall_s",
              "preempt");
  for (const auto& s : r.streams)
    std::printf("    %-4llu %8.2f %8.2f %10.3f %9u %8.3f %7u%s\n", static_cast<unsigned long long>(s.id),
                s.arrival_seconds, s.audio_seconds, s.time_to_first_audio, s.num_underruns, s.underrun_seconds,
                s.num_preemptions, s.completed ? "" : "  (did not complete)");
  std::printf("    worst stall %.3f s, total stall %.3f s, worst time to first audio %.3f s\n",
              r.worst_underrun_seconds(), r.total_underrun_seconds(), r.worst_time_to_first_audio());
}

template <class Scheduler>
auto make_engine(const Options& o) {
  izwi::Qwen3TtsCpuExecutor executor(izwi::Qwen3Tts::load(o.dir), {.num_threads = o.threads});
  izwi::PagedKVCache<> cache(executor.kv_cache_shape(), {.byte_budget = std::size_t{2} << 30});
  using E = izwi::Engine<Scheduler, izwi::PagedKVCache<>, izwi::Qwen3TtsCpuExecutor>;
  return std::make_unique<E>(Scheduler(o.scheduler), std::move(cache), std::move(executor));
}

constexpr cli::Program program{
    "izwi_playback_engine_bench",
    "izwi_playback_engine_bench DIR [options]\n  DIR: a Qwen3-TTS checkpoint (Hugging Face layout)",
    "FCFS against playback-deadline scheduling under overload, on the real engine"};

/// The flags, which --help lists; DIR is positional and not among them.
po::options_description flags(Options& o) {
  po::options_description options("options (N: a count, S: seconds)");
  options.add_options()
      ("threads", cli::count(&o.threads)->value_name("N"), "CPU threads of the executor")
      ("long-streams", cli::count(&o.long_streams)->value_name("N"), "streams arriving at 0 s")
      ("long-frames", cli::count(&o.long_frames)->value_name("N"), "frames (80 ms each) of every long stream")
      ("burst-streams", cli::count(&o.burst_streams)->value_name("N"), "streams arriving together at --burst-at")
      ("burst-frames", cli::count(&o.burst_frames)->value_name("N"), "frames of every burst stream")
      ("burst-at", cli::seconds(&o.burst_at)->value_name("S"), "when the burst arrives")
      ("horizon", cli::seconds(&o.scheduler.playback_horizon_seconds)->value_name("S"),
       "a stream with more unplayed audio than this sits out")
      ("first-audio", cli::seconds(&o.scheduler.playback_first_audio_seconds)->value_name("S"),
       "time-to-first-audio target")
      ("low-water", cli::seconds(&o.scheduler.playback_low_water_seconds)->value_name("S"),
       "streams sit out only while another has less audio left than this")
      ("max-num-seqs", cli::count(&o.scheduler.max_num_seqs)->value_name("N"), "sequences per step (seats)")
      ("displace", cli::seconds(&o.scheduler.playback_displace_seconds)->value_name("S"),
       "seat swapping threshold (0: off)")
      ("help,h", "show this help");
  return options;
}

Options parse(int argc, char** argv) {
  Options o;
  o.scheduler.seed = 1;
  po::options_description hidden;
  hidden.add_options()("dir", po::value(&o.dir));
  po::positional_options_description positional;
  positional.add("dir", 1);
  cli::read_command_line(argc, argv, program, flags(o), hidden, positional);
  if (o.dir.empty())
    cli::usage_error(program, "DIR is required: a Qwen3-TTS checkpoint, e.g. from izwi-make-random-qwen3-tts");
  if (o.long_frames == 0 || o.burst_frames == 0)
    cli::usage_error(program, "--long-frames and --burst-frames must be >= 1");
  try {
    o.scheduler.validate();
  } catch (const std::exception& e) {
    cli::usage_error(program, e.what());
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  std::printf("burst on %s: %zu x %zu frames at 0 s, %zu x %zu frames at %.1f s, %zu threads\n", o.dir.c_str(),
              o.long_streams, o.long_frames, o.burst_streams, o.burst_frames, o.burst_at, o.threads);
  {
    auto engine = make_engine<izwi::FcfsScheduler>(o);
    print("FCFS", run(*engine, o));
  }
  {
    auto engine = make_engine<izwi::PlaybackDeadlineScheduler>(o);
    print("playback deadline", run(*engine, o));
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "izwi_playback_engine_bench: %s\n", e.what());
  return 1;
}
