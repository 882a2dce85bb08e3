#!/usr/bin/env bash
# izwi beside whisper.cpp on one ggml Whisper file, in one run, as ratios
# (DESIGN §6): encoder seconds per 30-s window and decoder tokens/s of one
# window of jfk.wav, greedy, without timestamps, 1 and 2 threads.
#
# The models are random-weight Whispers of the published shapes (tiny, base,
# small), F16, written by izwi-make-random-whisper with whisper.cpp's
# vocabulary and mel filters (../shared/fixtures/whisper). The peer is
# whisper-cli built natively (GGML_NATIVE) from the source npm's
# @fugood/whisper.node 1.1.3 ships (test/reference/whisper_cpp_build.sh);
# izwi is built exactly as the README builds it (Release, no -march: its
# kernels pick the instruction set at run time). Both run the same file, with
# flash attention off on the peer (as the goldens; izwi has none yet), and one
# greedy decode each: whisper-cli gets -nf (no temperature fallback; without
# it the random weights' text fails its thresholds and it decodes the window
# five more times at higher temperatures, which changes nothing per token but
# takes minutes on a loaded machine).
#
# Honest pairs (bench/quiet_machine.sh): the 1-minute load average must be
# below MAX_LOAD before each pair; the programs alternate, ROUNDS times; the
# table gives each side's median.
#
#   bench/models/compare_whisper_cpp.sh                     # tiny base small, 1 and 2 threads, 3 rounds
#   SHAPES="tiny" THREADS="2" ROUNDS=5 bench/models/compare_whisper_cpp.sh
#
# The 10-minute file's real-time factor: bench/server/compare_whisper_long.sh;
# concurrent transcriptions: bench/server/compare_whisper_server.sh.
# A benchmark, never run by CI.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$root/bench/quiet_machine.sh"
build="${IZWI_BENCH_BUILD:-$root/build-bench}"
shapes="${SHAPES:-tiny base small}"
threads="${THREADS:-1 2}"
rounds="${ROUNDS:-3}"
fixtures="${IZWI_FIXTURES_DIR:-$root/../shared/fixtures}"
audio="$fixtures/audio/jfk.wav"

configure_izwi_as_readme "$root" "$build" -DIZWI_BUILD_TOOLS=ON
cmake --build "$build" --target izwi-whisper-transcribe izwi-make-random-whisper -j "$(nproc)"
wcpp="$("$root/test/reference/whisper_cpp_build.sh" "$build/whisper-cpp" | tail -1)"
peer="$wcpp/whisper-cli"
[[ -x "$peer" ]] || { echo "compare_whisper_cpp.sh: $peer was not built" >&2; exit 1; }
echo "izwi: $(git -C "$root" describe --always --dirty 2>/dev/null || echo '?'), Release, no -march flags"
echo "whisper.cpp: @fugood/whisper.node 1.1.3's source, GGML_NATIVE=ON; machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores"

out="$build/compare-whisper-cpp"
rm -rf "$out"
mkdir -p "$out"
for shape in $shapes; do
  model="$build/whisper-$shape-random"
  if [[ ! -f "$model/ggml-model-f16.bin" ]]; then
    "$build/tools/izwi-make-random-whisper" --out "$model" --vocab-from "$fixtures/whisper/for-tests-ggml-tiny.bin" \
      --tiktoken "$fixtures/whisper/multilingual.tiktoken" --shape "$shape" --seed 7 --ggml-type f16 >/dev/null
  fi
  for n in $threads; do
    for ((r = 1; r <= rounds; r++)); do
      wait_for_quiet_machine "$shape, $n thread(s), round $r"
      echo "== $shape, $n thread(s), round $r/$rounds; load before: $(load_1min) ${PAIR_LABEL}"
      [[ -n "$PAIR_LABEL" ]] && echo "$PAIR_LABEL" >"$out/loaded-$shape-$n-r$r.txt"
      izwi() { "$build/tools/izwi-whisper-transcribe" --model "$model/ggml-model-f16.bin" --file "$audio" \
                 --language en --threads "$n" --kv f16 >/dev/null 2>"$out/izwi-$shape-$n-r$r.txt"; }
      whisper() { "$peer" -m "$model/ggml-model-f16.bin" -f "$audio" -l en -t "$n" -nfa -nt -nf --suppress-nst -bs 1 -bo 1 \
                    >/dev/null 2>"$out/wcpp-$shape-$n-r$r.txt"; }
      if ((r % 2)); then izwi; whisper; else whisper; izwi; fi
    done
  done
done

python3 - "$out" "$shapes" "$threads" "$rounds" <<'PY'
import re, statistics, sys, pathlib
out, shapes, threads, rounds = pathlib.Path(sys.argv[1]), sys.argv[2].split(), sys.argv[3].split(), int(sys.argv[4])
print("\n| shape | threads | encoder s/window izwi | whisper.cpp | whisper.cpp / izwi | decoder tokens/s izwi | whisper.cpp | izwi / whisper.cpp | note |")
print("|---|---|---|---|---|---|---|---|---|")
for s in shapes:
    for n in threads:
        ie, id_, we, wd, loaded = [], [], [], [], []
        for r in range(1, rounds + 1):
            t = (out / f"izwi-{s}-{n}-r{r}.txt").read_text()
            ie.append(float(re.search(r"encoder: ([\d.e+-]+) s", t).group(1)))
            id_.append(float(re.search(r"\(([\d.]+) tokens/s\)", t).group(1)))
            w = (out / f"wcpp-{s}-{n}-r{r}.txt").read_text()
            we.append(float(re.search(r"encode time =\s*([\d.]+) ms", w).group(1)) / 1000)
            m = re.search(r"decode time =\s*[\d.]+ ms /\s*\d+ runs \(\s*([\d.]+) ms per run\)", w)
            wd.append(1000 / float(m.group(1)))
            if (out / f"loaded-{s}-{n}-r{r}.txt").exists(): loaded.append(r)
        m = statistics.median
        note = f"median of {rounds}" + (f"; LOADED rounds {loaded}: not evidence" if loaded else "")
        print(f"| {s} | {n} | {m(ie):.3f} | {m(we):.3f} | {m(we)/m(ie):.2f} | {m(id_):.1f} | {m(wd):.1f} | {m(id_)/m(wd):.2f} | {note} |")
PY
