#!/usr/bin/env bash
# izwi against itself: batch-1 decode (tg128) from the checkpoint read into
# huge-page memory (the default) and from a mapping of it (--mmap), the two
# alternated, on the GGUF files bench/models/compare_llama_cpp.sh writes.
# No peer: it measures one of izwi's own choices (io/file_memory.hpp).
#
#   bench/models/compare_weights_memory.sh                   # f16, 1 and 2 threads, 2 rounds
#   TYPES="f16 q8_0" THREADS="2" ROUNDS=3 bench/models/compare_weights_memory.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$root/bench/quiet_machine.sh"
build="${IZWI_BENCH_BUILD:-$root/build-bench}"
types="${TYPES:-f16}"
threads="${THREADS:-1 2}"
rounds="${ROUNDS:-2}"

configure_izwi_as_readme "$root" "$build" -DIZWI_BUILD_BENCHMARKS=ON -DIZWI_BUILD_TOOLS=ON
cmake --build "$build" --target izwi-bench-qwen3 -j "$(nproc)"
echo "izwi: $(git -C "$root" describe --always --dirty 2>/dev/null || echo '?'), Release, no -march flags"
echo "transparent huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo 'unknown')"
echo "| weights | threads | round | weights memory | load before | tg128 tokens/s |"
echo "|---|---|---|---|---|---|"
for t in $types; do
  model="$build/qwen3-0.6b-shape-$t/model.gguf"
  [[ -f "$model" ]] || { echo "no $model: run bench/models/compare_llama_cpp.sh first" >&2; exit 1; }
  for n in $threads; do
    for ((r = 1; r <= rounds; r++)); do
      if ((r % 2)); then order="map read"; else order="read map"; fi
      for memory in $order; do
        wait_for_quiet_machine "$t, $n thread(s), $memory, round $r"
        load="$(load_1min)${PAIR_LABEL:+, $PAIR_LABEL}"
        flag=()
        [[ "$memory" == map ]] && flag=(--mmap)
        rate=$("$build/bench/models/izwi-bench-qwen3" "$model" --threads "$n" --pp 16 --tg 128 --batch 1 --reps 3 \
                 "${flag[@]}" | awk '$2 == "tg128" { print $3 }')
        echo "| $t | $n | $r | $memory | $load | $rate |"
      done
    done
  done
done
