#!/usr/bin/env bash
# THE test command of izwi: README, .ci/run and developers all run this.
#
#   scripts/test.sh            setup, then three configurations (below); exit 0 only if all pass
#   scripts/test.sh --quick    the main configuration only (developers)
#
# Configurations, each in its own build directory under $IZWI_BUILD_ROOT (default build-test/):
#   main   Release. Builds the programs (izwi-server, tools, examples), the header
#          self-containment check and the benchmarks (-fsyntax-only, not
#          linked: only whether they compile is tested; bench scripts build
#          them optimised).
#          Tests: when asan runs too, only the tests asan leaves out (labels
#          below) and those labelled `release` (the CPU kernels, whose subject
#          is the optimised code); every other test runs once, in asan, which
#          sees everything Release sees plus memory errors and undefined
#          behaviour. Run alone (--quick, --only main): every test.
#   asan   -DIZWI_SANITIZE=address,undefined, -O1 (test code -O0 but where a test
#          executable says OPTIMIZED, test/CMakeLists.txt). Builds the test executables only
#          (target izwi-tests). Runs every test except those labelled `slow` (too
#          long under a sanitizer), `install` and `compile-fail` (packaging and
#          compile-time diagnostics: sanitizer flags change nothing there),
#          `fuzz` (fuzz targets carry their own ASan+UBSan, and run in main) and
#          `e2e` (they drive the izwi-server binary, built in main only); with
#          IZWI_TEST_EXCLUDE_LABELS it does not even compile those.
#   tsan   -DIZWI_SANITIZE=thread, -O1 (test code as in asan), -DIZWI_TEST_ONLY_LABELS=threads: only the
#          test executables labelled `threads` are even configured; runs label `threads`.
#   On a CPU without AVX-512 the two sanitizer configurations leave the AVX-512
#   kernel variant out (-DIZWI_KERNELS_AVX512=OFF): no test there could run it.
#   They compile with clang++-14 where it is installed (about half the CPU time
#   of GCC's ASan build); main with the default compiler, as the README builds.
#
# Options:
#   --quick          main only
#   --only a,b       only these configurations (main, asan, tsan)
#   --no-setup       skip scripts/setup-debian.sh and scripts/install-references.sh
#   --clean          delete the build directories first (a cold build)
#   -j, --jobs N     build and test parallelism (default: nproc)
#   -- ARGS...       passed to every ctest run (e.g. -- -R sampling)
# Environment: IZWI_BUILD_ROOT (build directories), CXX (main's compiler),
# IZWI_SANITIZER_CXX (asan's and tsan's; default clang++-14, else clang++). Fit for CI as is:
# it never reads stdin, needs no terminal, and exits non-zero if anything failed.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

configs=(main asan tsan)
setup=1
clean=0
jobs="$(nproc)"
ctest_extra=()
while (($#)); do
  case "$1" in
    --quick) configs=(main) ;;
    --only) shift; IFS=, read -r -a configs <<<"$1" ;;
    --only=*) IFS=, read -r -a configs <<<"${1#--only=}" ;;
    --no-setup) setup=0 ;;
    --clean) clean=1 ;;
    -j|--jobs) shift; jobs="$1" ;;
    -j*) jobs="${1#-j}" ;;
    --jobs=*) jobs="${1#--jobs=}" ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    --) shift; ctest_extra=("$@"); break ;;
    *) echo "test.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
  esac
  shift
done
for c in "${configs[@]}"; do
  case "$c" in main|asan|tsan) ;; *) echo "test.sh: unknown configuration '$c'" >&2; exit 2 ;; esac
done

build_root="${IZWI_BUILD_ROOT:-$root/build-test}"
start_all=$SECONDS
exec </dev/null  # nothing below may wait for input (CI)

banner() { printf '\n==== %s ====\n' "$*"; }

if ((setup)); then
  banner "setup: Debian packages (scripts/setup-debian.sh)"
  "$root/scripts/setup-debian.sh"
  banner "setup: npm reference implementations (scripts/install-references.sh)"
  "$root/scripts/install-references.sh"
fi

# Sanitizer builds: -O1 keeps izwi's code fast, -g1 keeps line numbers in reports
# (test code compiles at -O0 there unless its executable is OPTIMIZED: test/CMakeLists.txt).
sanitizer_flags=(-DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS=-O1" "-DCMAKE_CXX_FLAGS_DEBUG=-g1")
# The sanitizer configurations test the kernel variants this CPU runs; on one
# without AVX-512 that variant could only be compiled there (main compiles it),
# at about 50 s of ASan CPU time, so they leave it out.
sanitizer_note=""
if [[ "$(uname -m)" == x86_64 ]] && ! grep -qw avx512f /proc/cpuinfo 2>/dev/null; then
  sanitizer_flags+=(-DIZWI_KERNELS_AVX512=OFF)
  sanitizer_note=", no AVX-512 kernels (CPU has none)"
else
  sanitizer_flags+=(-DIZWI_KERNELS_AVX512=ON)
fi
# The sanitizer configurations compile with Clang where it is installed
# (setup-debian.sh installs clang-14 for the fuzz targets): its ASan+UBSan
# build of the test executables took 300 s of CPU against GCC 12's 675 s, its
# TSan build 157 s against 185 s, and the tests ran no slower (docs/benchmarks.md,
# "Build and test time"). It also puts a second compiler on every test:
# main builds with the default one (GCC on Debian), as the README does.
# IZWI_SANITIZER_CXX chooses another.
sanitizer_cxx="${IZWI_SANITIZER_CXX:-}"
if [[ -z "$sanitizer_cxx" ]]; then
  sanitizer_cxx="$(command -v clang++-14 || command -v clang++ || command -v "${CXX:-c++}" || true)"
fi
if [[ -n "$sanitizer_cxx" ]]; then
  sanitizer_flags+=("-DCMAKE_CXX_COMPILER=$sanitizer_cxx")
  sanitizer_note+=", $(basename "$sanitizer_cxx")"
fi
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}"

# Labels the asan configuration leaves out; with asan in the run, main builds
# and runs only these (and `release`), so each test runs once.
sanitizer_skipped_labels="slow;install;compile-fail;fuzz;e2e"
main_test_labels=""
main_tests="all tests"
if [[ " ${configs[*]} " == *" asan "* ]]; then
  main_test_labels="$sanitizer_skipped_labels;release"
  main_tests="tests asan skips + release"
fi

declare -A describe=(
  [main]="Release: $main_tests, header check, examples, benchmarks built"
  [asan]="address,undefined: all but slow/install/compile-fail/fuzz/e2e$sanitizer_note"
  [tsan]="thread: tests labelled threads$sanitizer_note"
)
declare -A result build_time test_time
total_tests=0
total_failed=0
any_failure=0

run_config() {
  local name="$1" dir="$build_root/$1" log="$build_root/$1.log"
  local cmake_args=() target=() ctest_args=()
  case "$name" in
    main)
      cmake_args=(-DCMAKE_BUILD_TYPE=Release -DIZWI_BUILD_TESTS=ON -DIZWI_HEADER_CHECK=ON
                  -DIZWI_BUILD_EXAMPLES=ON -DIZWI_BUILD_BENCHMARKS=ON -DIZWI_BENCHMARKS_COMPILE_ONLY=ON
                  -DIZWI_SANITIZE= -DIZWI_KERNELS_AVX512=ON "-DIZWI_TEST_ONLY_LABELS=$main_test_labels" -DIZWI_TEST_EXCLUDE_LABELS=)
      ;;
    asan)
      cmake_args=("${sanitizer_flags[@]}" -DIZWI_SANITIZE=address,undefined -DIZWI_BUILD_TESTS=ON
                  -DIZWI_HEADER_CHECK=OFF -DIZWI_BUILD_EXAMPLES=OFF -DIZWI_BUILD_BENCHMARKS=OFF
                  -DIZWI_TEST_ONLY_LABELS= "-DIZWI_TEST_EXCLUDE_LABELS=$sanitizer_skipped_labels")
      target=(--target izwi-tests)
      ctest_args=(-LE "^(${sanitizer_skipped_labels//;/|})\$")
      ;;
    tsan)
      cmake_args=("${sanitizer_flags[@]}" -DIZWI_SANITIZE=thread -DIZWI_BUILD_TESTS=ON
                  -DIZWI_HEADER_CHECK=OFF -DIZWI_BUILD_EXAMPLES=OFF -DIZWI_BUILD_BENCHMARKS=OFF
                  -DIZWI_TEST_ONLY_LABELS=threads -DIZWI_TEST_EXCLUDE_LABELS=)
      target=(--target izwi-tests)
      ctest_args=(-L '^threads$')
      ;;
  esac

  banner "$name: ${describe[$name]}"
  ((clean)) && rm -rf "$dir"
  # A build directory configured with another compiler starts over: CMake
  # would delete its cache itself, and with it options given here (it then
  # configured the defaults: AVX-512 kernels, every test executable).
  if [[ "$name" != main && -n "$sanitizer_cxx" && -f "$dir/CMakeCache.txt" &&
        "$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$dir/CMakeCache.txt")" != "$sanitizer_cxx" ]]; then
    echo "$name: $dir was configured with another compiler; starting it over with $sanitizer_cxx"
    rm -rf "$dir"
  fi
  mkdir -p "$dir"
  : >"$log"
  local t0=$SECONDS
  if ! cmake -S "$root" -B "$dir" -G Ninja "${cmake_args[@]}" 2>&1 | tee -a "$log" ||
     ! cmake --build "$dir" -j "$jobs" "${target[@]}" 2>&1 | tee -a "$log"; then
    build_time[$name]=$((SECONDS - t0))
    test_time[$name]=0
    result[$name]="BUILD FAILED (log: $log)"
    any_failure=1
    # Counted as one failed test, as ctest counts an executable that was not built.
    total_tests=$((total_tests + 1))
    total_failed=$((total_failed + 1))
    return
  fi
  build_time[$name]=$((SECONDS - t0))

  t0=$SECONDS
  local rc=0
  (cd "$dir" && ctest -j "$jobs" --output-on-failure --timeout 600 --no-tests=ignore \
     "${ctest_args[@]}" "${ctest_extra[@]}") 2>&1 | tee -a "$log" || rc=$?
  test_time[$name]=$((SECONDS - t0))

  local line passed failed total
  line="$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -1 || true)"
  if [[ -n "$line" ]]; then
    failed="$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$line")"
    total="$(sed -E 's/.* failed out of ([0-9]+).*/\1/' <<<"$line")"
    result[$name]="$line"
  elif grep -q "No tests were found" "$log"; then
    failed=0 total=0
    result[$name]="no tests matched (none labelled for this configuration yet)"
  else
    failed=1 total=0
    result[$name]="ctest produced no summary (exit $rc; log: $log)"
  fi
  total_tests=$((total_tests + total))
  total_failed=$((total_failed + failed))
  if ((rc != 0 || failed != 0)); then
    any_failure=1
    [[ "${result[$name]}" == *"failed out of"* ]] && result[$name]+="  <-- FAILED"
  fi
}

for c in "${configs[@]}"; do
  run_config "$c"
done

elapsed=$((SECONDS - start_all))
banner "izwi test summary"
for c in "${configs[@]}"; do
  printf '%-5s %-62s build %4ds  tests %4ds  %s\n' "$c" "(${describe[$c]})" \
    "${build_time[$c]}" "${test_time[$c]}" "${result[$c]}"
done
printf 'total time %dm%02ds (setup included), %d configuration(s), logs in %s\n' \
  $((elapsed / 60)) $((elapsed % 60)) "${#configs[@]}" "$build_root"
# The last line, in ctest's own words, over every configuration.
passed=$((total_tests - total_failed))
percent=100
((total_tests > 0)) && percent=$((passed * 100 / total_tests))
echo "${percent}% tests passed, ${total_failed} tests failed out of ${total_tests}"
exit "$any_failure"
