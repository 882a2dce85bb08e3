// izwi-matmul-group-ab: Qwen3-0.6B's q/k/v and gate/up products (F16,
// hidden 1024) as five matmul() calls or as two matmul_group() calls, in one
// binary, alternating back to back (which goes first switches every
// repetition), so both see the same machine. Prints each side's p25 and
// median microseconds and the variant of the kernels.
//
//   izwi-matmul-group-ab [rows=1] [threads=2] [repetitions=2000]
//   izwi-matmul-group-ab [--rows 1] [--threads 2] [--repetitions 2000]   (the same, named)
//
// With 1 thread the two do the same work (the control); with more, the group
// saves three pool synchronisations per layer.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "izwi/kernels/cpu/thread_pool.hpp"
#include "izwi/kernels/cpu/dispatch.hpp"
#include "izwi/kernels/cpu/matmul.hpp"

#include "command_line.hpp"

namespace po = boost::program_options;
namespace cli = izwi::command_line;

namespace {

namespace kc = izwi::kernels::cpu;

struct Weight {
  std::vector<std::uint16_t> data;
  kc::WeightMatrix matrix;
  Weight(std::size_t rows, std::size_t cols) : data(rows * cols, 0x2e66 /* 0.1 */) {
    matrix = {izwi::DType::f16, rows, cols, data.data()};
  }
};

constexpr std::size_t hidden = 1024;

struct Layer {
  Weight q{2048, hidden}, k{1024, hidden}, v{1024, hidden}, gate{3072, hidden}, up{3072, hidden};
};

struct Outputs {
  std::vector<float> q, k, v, gate, up;
  explicit Outputs(std::size_t m) : q(m * 2048), k(m * 1024), v(m * 1024), gate(m * 3072), up(m * 3072) {}
};

void separate(const float* x, std::size_t m, const Layer& w, Outputs& y, izwi::detail::ThreadPool& pool) {
  kc::matmul(x, m, hidden, w.q.matrix, y.q.data(), pool);
  kc::matmul(x, m, hidden, w.k.matrix, y.k.data(), pool);
  kc::matmul(x, m, hidden, w.v.matrix, y.v.data(), pool);
  kc::matmul(x, m, hidden, w.gate.matrix, y.gate.data(), pool);
  kc::matmul(x, m, hidden, w.up.matrix, y.up.data(), pool);
}

void grouped(const float* x, std::size_t m, const Layer& w, Outputs& y, izwi::detail::ThreadPool& pool) {
  const kc::MatmulOutput qkv[] = {
      {&w.q.matrix, y.q.data(), 2048}, {&w.k.matrix, y.k.data(), 1024}, {&w.v.matrix, y.v.data(), 1024}};
  kc::matmul_group(x, hidden, m, qkv, pool);
  const kc::MatmulOutput gate_up[] = {{&w.gate.matrix, y.gate.data(), 3072}, {&w.up.matrix, y.up.data(), 3072}};
  kc::matmul_group(x, hidden, m, gate_up, pool);
}

struct Options {
  std::size_t rows = 1;
  std::size_t threads = 2;
  std::size_t repetitions = 2000;
};

constexpr cli::Program program{
    "izwi-matmul-group-ab", "izwi-matmul-group-ab [ROWS [THREADS [REPETITIONS]]]",
    "q/k/v and gate/up as five matmul() or two matmul_group() calls, alternating"};

/// ROWS, THREADS and REPETITIONS in that order, each also accepted as a
/// named option (Program_options needs the names for positional arguments).
Options parse(int argc, char** argv) {
  Options o;
  po::options_description arguments("ROWS, THREADS and REPETITIONS, in that order or named as here");
  arguments.add_options()
      ("rows", cli::count(&o.rows)->value_name("N"), "activation rows (tokens in the step), >= 1")
      ("threads", cli::count(&o.threads)->value_name("N"), "thread-pool size, >= 1 (1: the control)")
      ("repetitions", cli::count(&o.repetitions)->value_name("N"), "repetitions of each side, >= 1")
      ("help,h", "show this help");
  po::positional_options_description positional;
  positional.add("rows", 1).add("threads", 1).add("repetitions", 1);
  cli::read_command_line(argc, argv, program, arguments, {}, positional);
  if (o.rows == 0 || o.threads == 0 || o.repetitions == 0)
    cli::usage_error(program, "ROWS, THREADS and REPETITIONS must be >= 1");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const std::size_t m = o.rows, threads = o.threads, reps = o.repetitions;
  izwi::detail::ThreadPool pool(threads);
  const Layer layer;
  Outputs y(m);
  const std::vector<float> x(m * hidden, 0.5f);
  std::vector<double> separate_us, grouped_us;
  using clock = std::chrono::steady_clock;
  for (std::size_t rep = 0; rep < reps; ++rep)
    for (int side = 0; side < 2; ++side) {
      const bool run_separate = (side == 0) == (rep % 2 == 0);
      const auto start = clock::now();
      if (run_separate) separate(x.data(), m, layer, y, pool);
      else grouped(x.data(), m, layer, y, pool);
      (run_separate ? separate_us : grouped_us)
          .push_back(std::chrono::duration<double, std::micro>(clock::now() - start).count());
    }
  std::sort(separate_us.begin(), separate_us.end());
  std::sort(grouped_us.begin(), grouped_us.end());
  std::printf("kernels %s, rows %zu, threads %zu, %zu repetitions: five matmul() p25 %.1f median %.1f us; "
              "two matmul_group() p25 %.1f median %.1f us; grouped / separate (median) %.3f\n",
              kc::active_kernels().name, m, threads, reps, separate_us[reps / 4], separate_us[reps / 2],
              grouped_us[reps / 4], grouped_us[reps / 2], grouped_us[reps / 2] / separate_us[reps / 2]);
  return 0;
}
