# Sourced by the comparison scripts (bench/models/compare_llama_cpp.sh,
# bench/server/compare_llama_server.sh): the guards that make a side-by-side
# figure honest.
#
#   MAX_LOAD=0.3     highest 1-minute load average at which a pair may start
#   LOAD_WAIT=300    seconds to wait for the load to fall below MAX_LOAD
#   ALLOW_LOADED=1   run anyway when it does not, and label every such pair LOADED
#
# A benchmark on a loaded machine measures the other programs: a busy-spinning
# peer (llama.cpp) loses more to them than a pool whose workers sleep.

MAX_LOAD="${MAX_LOAD:-0.3}"
LOAD_WAIT="${LOAD_WAIT:-300}"
ALLOW_LOADED="${ALLOW_LOADED:-0}"

load_1min() { cut -d' ' -f1 /proc/loadavg; }
load_above() { awk -v l="$(load_1min)" -v m="$MAX_LOAD" 'BEGIN { exit !(l >= m) }'; }

# Waits for a quiet machine before the pair named $1. Sets PAIR_LABEL to ""
# (quiet) or "LOADED (1-min load X > MAX_LOAD)"; exits 3 when the machine
# stays loaded and ALLOW_LOADED is not 1.
wait_for_quiet_machine() {
  local what="$1" waited=0
  while load_above && ((waited < LOAD_WAIT)); do
    ((waited == 0)) && echo "   waiting for the 1-minute load ($(load_1min)) to fall below $MAX_LOAD before $what..." >&2
    sleep 10
    waited=$((waited + 10))
  done
  if load_above; then
    if [[ "$ALLOW_LOADED" == 1 ]]; then
      PAIR_LABEL="LOADED (1-min load $(load_1min) > $MAX_LOAD)"
      echo "!! $what runs on a LOADED machine (1-minute load $(load_1min) > $MAX_LOAD): its figures are not comparable" >&2
    else
      echo "refusing to measure $what: 1-minute load $(load_1min) > $MAX_LOAD after ${LOAD_WAIT}s (stop what runs, or ALLOW_LOADED=1 to label the figures LOADED)" >&2
      exit 3
    fi
  else
    PAIR_LABEL=""
  fi
}

# izwi configured exactly as the README and scripts/run-demo.sh build it:
# Release, no CMAKE_CXX_FLAGS, no -march (the kernels dispatch at run time).
configure_izwi_as_readme() {
  local root="$1" build="$2"
  shift 2
  env -u CXXFLAGS -u CFLAGS cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS= \
    -DIZWI_BUILD_TESTS=OFF -DIZWI_HEADER_CHECK=OFF "$@" >/dev/null
}
