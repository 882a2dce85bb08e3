// izwi_playback_bench: what listeners hear under overload, FCFS against
// playback-deadline scheduling, in simulated time (deterministic; the figures
// do not depend on the machine or its load).
//
//   izwi_playback_bench [--scenario burst|staggered|both] [--per-step S]
//                       [--per-sequence S] [--per-prefill-token S]
//                       [--horizon S] [--first-audio S] [--max-num-seqs N] [--displace S]
//
// The synthetic executor and the listener model are in
// test/scheduler/playback_simulation.hpp. A step costs
// per_step + per_sequence * (frames made) + per_prefill_token * (prompt tokens);
// each frame is 1920 samples at 24 kHz (80 ms), as Qwen3-TTS-12Hz makes them.
// Calibrate the three costs from a real engine (e.g. tools/qwen3_tts_bench at
// batch 1 and 8) to see what a given machine would do. Prints, per scenario
// and scheduler, every stream's time to first audio and underruns.

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "izwi/scheduler/fcfs.hpp"
#include "izwi/scheduler/playback_deadline.hpp"
#include "scheduler/fixed_block_kv_cache.hpp"
#include "scheduler/playback_simulation.hpp"

#include "command_line.hpp"

namespace po = boost::program_options;
namespace cli = izwi::command_line;

namespace {

using izwi::test::SimulatedStream;
using izwi::test::SimulationReport;

struct Options {
  std::string scenario = "both";
  izwi::test::StepCostModel cost;
  izwi::SchedulerConfig config;
};

/// Three long streams get ahead while the machine is lightly loaded, then
/// five short ones arrive at once: eight streams need more than the machine
/// makes at batch 8, but the long ones' buffers can cover the burst.
std::vector<SimulatedStream> burst_scenario() {
  std::vector<SimulatedStream> s;
  for (int i = 0; i < 3; ++i) s.push_back({.arrival_seconds = 0.1 * i, .prompt_tokens = 96, .frames = 500});
  for (int i = 0; i < 5; ++i) s.push_back({.arrival_seconds = 10.0 + 0.05 * i, .prompt_tokens = 64, .frames = 62});
  return s;
}

/// A stream every 1.5 s, lengths cycling 24 s, 4 s, 4 s, 8 s of audio, plus
/// two text requests: concurrency swings around what the machine sustains.
std::vector<SimulatedStream> staggered_scenario() {
  const std::size_t frames[] = {300, 50, 50, 100};
  std::vector<SimulatedStream> s;
  for (int i = 0; i < 16; ++i)
    s.push_back({.arrival_seconds = 1.5 * i, .prompt_tokens = 80, .frames = frames[i % 4]});
  s.push_back({.arrival_seconds = 5.0, .prompt_tokens = 200, .frames = 100, .audio = false});
  s.push_back({.arrival_seconds = 13.0, .prompt_tokens = 200, .frames = 100, .audio = false});
  return s;
}

template <class S, class SetTime>
SimulationReport run(S& scheduler, const std::vector<SimulatedStream>& streams, const Options& o, SetTime set_time) {
  izwi::test::FixedBlockKVCache kv(4096, 16);
  SimulationReport r = izwi::test::simulate(scheduler, kv, streams, o.cost, izwi::test::SimulatedAudio{}, set_time);
  if (r.problem.empty() && kv.num_used_blocks() != 0) r.problem = "KV blocks leaked";
  if (r.problem.empty() && !kv.contract_violation().empty()) r.problem = kv.contract_violation();
  return r;
}

void print(const char* scheduler, const SimulationReport& r) {
  std::printf("  %s: %zu steps, %.2f s simulated%s%s\n", scheduler, r.steps, r.simulated_seconds,
              r.problem.empty() ? "" : ", PROBLEM: ", r.problem.c_str());
  std::printf("    %-4s %-5s %8s %8s %10s %9s %8s %7s\n", "id", "kind", "arrival", "audio_s", "ttfa_s", "underruns",
              "stall_s", "preempt");
  for (const auto& s : r.streams)
    std::printf("    %-4llu %-5s %8.2f %8.2f %10.3f %9u %8.3f %7u\n", static_cast<unsigned long long>(s.id),
                s.audio ? "audio" : "text", s.arrival_seconds, s.audio_seconds, s.time_to_first_audio,
                s.num_underruns, s.underrun_seconds, s.num_preemptions);
  std::printf("    worst stall %.3f s, total stall %.3f s, worst time to first audio %.3f s\n",
              r.worst_underrun_seconds(), r.total_underrun_seconds(), r.worst_time_to_first_audio());
}

void compare(const char* name, const std::vector<SimulatedStream>& streams, const Options& o) {
  std::printf("scenario %s: %zu requests; step cost %.4f + %.4f/frame + %.5f/prefill token s\n", name,
              streams.size(), o.cost.per_step, o.cost.per_sampling_sequence, o.cost.per_prefill_token);
  izwi::FcfsScheduler fcfs(o.config);
  print("FCFS", run(fcfs, streams, o, [](izwi::TimePoint) {}));
  izwi::BasicPlaybackDeadlineScheduler<izwi::ManualTimeSource> deadline(o.config);
  print("playback deadline", run(deadline, streams, o, [&](izwi::TimePoint t) { deadline.time_source().set(t); }));
}

constexpr cli::Program program{"izwi_playback_bench", "izwi_playback_bench [--scenario burst|staggered|both] [options]",
                               "FCFS against playback-deadline scheduling under overload, in simulated time"};

Options parse(int argc, char** argv) {
  Options o;
  o.config.seed = 1;
  po::options_description options("options (S: seconds)");
  options.add_options()
      ("scenario", po::value(&o.scenario)->value_name("NAME")->default_value(o.scenario), "burst, staggered or both")
      ("per-step", cli::seconds(&o.cost.per_step)->value_name("S"), "step cost: fixed part")
      ("per-sequence", cli::seconds(&o.cost.per_sampling_sequence)->value_name("S"), "step cost per frame made")
      ("per-prefill-token", cli::seconds(&o.cost.per_prefill_token)->value_name("S"), "step cost per prompt token")
      ("horizon", cli::seconds(&o.config.playback_horizon_seconds)->value_name("S"),
       "a stream with more unplayed audio than this sits out")
      ("first-audio", cli::seconds(&o.config.playback_first_audio_seconds)->value_name("S"),
       "time-to-first-audio target")
      ("max-num-seqs", cli::count(&o.config.max_num_seqs)->value_name("N"), "sequences per step (seats)")
      ("displace", cli::seconds(&o.config.playback_displace_seconds)->value_name("S"),
       "seat swapping threshold (0: off)")
      ("help,h", "show this help");
  cli::read_command_line(argc, argv, program, options);
  if (o.scenario != "burst" && o.scenario != "staggered" && o.scenario != "both")
    cli::usage_error(program, "--scenario must be burst, staggered or both, got '" + o.scenario + "'");
  try {
    o.config.validate();
  } catch (const std::exception& e) {
    cli::usage_error(program, e.what());
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  if (o.scenario != "staggered") compare("burst", burst_scenario(), o);
  if (o.scenario != "burst") compare("staggered", staggered_scenario(), o);
  return 0;
}
