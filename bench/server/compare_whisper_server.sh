#!/usr/bin/env bash
# izwi-server's /v1/audio/transcriptions beside whisper.cpp's whisper-server
# on one ggml Whisper file: N clients upload jfk.wav (11 s) at once; the
# figure is audio seconds transcribed per wall-clock second, all requests
# included, for N = 1 and 8 (CONCURRENCY).
#
# Both decode the same work per request: English given (no language probe
# on whisper-server; izwi still probes each window for its no-speech
# probability), temperature 1.0 with no fallback (izwi falls back only from
# lower temperatures; whisper-server gets -nf), so each window is one sampled
# decode; random weights rarely end early, so both run to the 224-token
# limit. izwi is built as the README builds it; izwi-server gets
# --max-num-batched-tokens 8192 so that several windows are encoded per step
# (its default of 2048 admits one). whisper-server serves one request at a
# time (one global mutex) with its 2 threads.
#
# Caveat (docs/benchmarks.md): on random weights the two servers do not decode
# the same number of tokens for the same request, so the ratio is not evidence
# until they do (real weights, or equalized decoding).
#
#   bench/server/compare_whisper_server.sh [tiny|base]   # after bench/models/compare_whisper_cpp.sh made the models
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$root/bench/quiet_machine.sh"
build="${IZWI_BENCH_BUILD:-$root/build-bench}"
shape="${1:-tiny}"
concurrency="${CONCURRENCY:-1 8}"
fixtures="${IZWI_FIXTURES_DIR:-$root/../shared/fixtures}"
audio="$fixtures/audio/jfk.wav"
model="$build/whisper-$shape-random/ggml-model-f16.bin"
[[ -f "$model" ]] || { echo "no $model: run bench/models/compare_whisper_cpp.sh first" >&2; exit 1; }

configure_izwi_as_readme "$root" "$build" -DIZWI_BUILD_TOOLS=ON -DIZWI_BUILD_EXAMPLES=ON
cmake --build "$build" --target izwi-server -j "$(nproc)"
wcpp="$("$root/test/reference/whisper_cpp_build.sh" "$build/whisper-cpp" | tail -1)"

izwi_port=8391 peer_port=8392
"$build/examples/server/izwi-server" --model "$model" --port $izwi_port --threads 2 --max-num-batched-tokens 8192 \
  >"$build/izwi-server-bench.log" 2>&1 &
izwi_pid=$!
"$wcpp/whisper-server" -m "$model" --port $peer_port -t 2 -l en -nf -nfa >"$build/whisper-server-bench.log" 2>&1 &
peer_pid=$!
trap 'kill $izwi_pid $peer_pid 2>/dev/null || true' EXIT
for _ in $(seq 120); do
  curl -sf "127.0.0.1:$izwi_port/health" >/dev/null && curl -s "127.0.0.1:$peer_port/" >/dev/null && break
  sleep 1
done
id="$(basename "$model" .bin)"

# Seconds for n simultaneous uploads to all finish.
run_izwi() {
  local n=$1 start end pids=()
  start=$(date +%s.%N)
  for ((i = 0; i < n; ++i)); do
    curl -sf "127.0.0.1:$izwi_port/v1/audio/transcriptions" -F file=@"$audio" -F model="$id" -F language=en \
      -F temperature=1.0 -F response_format=json >/dev/null &
    pids+=($!)
  done
  wait "${pids[@]}"  # the uploads only: a bare wait would wait for the servers too
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}
run_peer() {
  local n=$1 start end pids=()
  start=$(date +%s.%N)
  for ((i = 0; i < n; ++i)); do
    curl -sf "127.0.0.1:$peer_port/inference" -F file=@"$audio" -F temperature=1.0 -F temperature_inc=0 -F response_format=json >/dev/null &
    pids+=($!)
  done
  wait "${pids[@]}"
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}
run_izwi 1 >/dev/null; run_peer 1 >/dev/null  # warm both
echo "| shape | clients | izwi-server wall s | audio s / s | whisper-server wall s | audio s / s | izwi / whisper-server | note |"
echo "|---|---|---|---|---|---|---|---|"
for n in $concurrency; do
  wait_for_quiet_machine "$n clients"
  note="load before: $(load_1min)${PAIR_LABEL:+, $PAIR_LABEL}"
  a=$(run_izwi "$n"); b=$(run_peer "$n")
  awk -v s="$shape" -v n="$n" -v a="$a" -v b="$b" -v note="$note" \
    'BEGIN { printf "| %s | %d | %.2f | %.1f | %.2f | %.1f | %.2f | %s |\n", s, n, a, 11*n/a, b, 11*n/b, b/a, note }'
done
