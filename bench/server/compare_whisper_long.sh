#!/usr/bin/env bash
# Real-time factor of a 10-minute file: izwi-server beside whisper.cpp's
# whisper-cli on one ggml Whisper file, 1 and 2 threads (THREADS).
#
# izwi runs it both ways its endpoint offers: openai-whisper's sequential
# algorithm (no chunking_strategy: one 30-s window after the other, each
# window probed, then decoded with the previous text as prompt) and the VAD
# fast path (chunking_strategy=auto: Silero's speech regions, cut at quiet
# points into chunks of at most 30 s, all decoded at once in shared engine
# batches). whisper-cli runs its own long-form loop, which is the sequential
# one. The figure is seconds of processing per second of audio (RTF; below 1
# is faster than real time), and whisper-cli / izwi as a speed ratio.
#
# Comparable work: English given, greedy at temperature 0, the fallback off
# on both sides (izwi: temperature_inc=0; whisper-cli: -nf), non-speech
# symbols suppressed on both (--suppress-nst), no timestamps (no_timestamps
# / -nt: each window then moves by 30 s on both sides), flash attention off
# on the peer. The model is a random-weight Whisper written with
# --eot-scale -1.5 (seed 1), as the server's end-to-end suites use: greedy
# windows end after a few to ~150 tokens, as speech does, instead of running
# to the 224-token limit. The table prints the text tokens each side decoded
# for the whole file: izwi's verbose_json segment tokens, whisper-cli's
# single-token decoder runs (with -nf each window's prompt pass gives its
# first token and one run each the rest and <|endoftext|>: one run per text
# token; its -ojf token list is no count, it merges the byte tokens of a
# character into one entry). The two compute each window's log-mel
# differently (izwi from the window's own samples, whisper.cpp sliced from
# the whole file's, so the frames at a window's end differ), and random
# weights amplify that: the first window's texts part after about ten tokens,
# and the previous-text prompts differ from then on. The table says how far
# apart the counts are; more than 10% is marked UNEQUAL WORK. The VAD path
# decodes other windows (speech regions) and skips the pauses, so its count
# differs by design.
#
# The audio, written once into the build directory: jfk.wav (11 s), a pause,
# silero_test.wav (60 s, speech with its own pauses), a longer pause,
# repeated and cut at 600 s. The pauses grow with each repetition (1.0 s +
# 0.13 s and 2.0 s + 0.29 s per repetition), so no two 30-s windows or VAD
# regions hold the same samples: izwi's prefix cache keys a window's encoder
# output by its samples' hash, and on an exactly periodic file (the first
# version of this script: fixed 1.5-s and 2.5-s pauses, a 75-s period) the
# sequential path's 20 windows were 5 distinct ones, encoded once each,
# while whisper-cli encodes every window. The table prints the prompt tokens
# each izwi run found in the prefix cache (its decode reusing its own probe's
# window is 1536 per window; more means windows repeated).
#
#   bench/server/compare_whisper_long.sh                  # tiny, 1 and 2 threads, 1 round
#   SHAPE=base THREADS=2 ROUNDS=3 bench/server/compare_whisper_long.sh
#   IZWI_SERVER=/path/to/other/izwi-server bench/server/compare_whisper_long.sh   # time another build's server (A/B)
#   BEAM=5 SHAPE=tiny THREADS=2 bench/server/compare_whisper_long.sh   # beam search of width 5 on both sides
#
# BEAM=N (default 1, greedy) decodes every window by beam search of that
# width on both sides (izwi: beam_size; whisper-cli: -bs N -bo 1), still at
# temperature 0 without fallback. whisper-cli then decodes the beams of a
# step in one batch, so its "runs" count is no longer one per text token:
# the token column gives izwi's counts only and the equal-work check is off.
#
# Honest pairs (bench/quiet_machine.sh): the load must be below MAX_LOAD
# before each thread count; ALLOW_LOADED=1 runs anyway and labels the row.
# A benchmark, never run by CI.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$root/bench/quiet_machine.sh"
build="${IZWI_BENCH_BUILD:-$root/build-bench}"
shape="${SHAPE:-tiny}"
threads="${THREADS:-1 2}"
rounds="${ROUNDS:-1}"
beam="${BEAM:-1}"
fixtures="${IZWI_FIXTURES_DIR:-$root/../shared/fixtures}"

configure_izwi_as_readme "$root" "$build" -DIZWI_BUILD_TOOLS=ON -DIZWI_BUILD_EXAMPLES=ON
cmake --build "$build" --target izwi-server izwi-make-random-whisper -j "$(nproc)"
wcpp="$("$root/test/reference/whisper_cpp_build.sh" "$build/whisper-cpp" | tail -1)"
[[ -x "$wcpp/whisper-cli" ]] || { echo "compare_whisper_long.sh: $wcpp/whisper-cli was not built" >&2; exit 1; }

model_dir="$build/whisper-$shape-random-eot"
model="$model_dir/ggml-model-f16.bin"
if [[ ! -f "$model" ]]; then
  "$build/tools/izwi-make-random-whisper" --out "$model_dir" --vocab-from "$fixtures/whisper/for-tests-ggml-tiny.bin" \
    --tiktoken "$fixtures/whisper/multilingual.tiktoken" --shape "$shape" --seed 1 --eot-scale -1.5 --ggml-type f16 \
    >/dev/null
fi

audio="$build/long-speech-600s-aperiodic.wav"
if [[ ! -f "$audio" ]]; then
  python3 - "$fixtures/audio/jfk.wav" "$fixtures/audio/silero_test.wav" "$audio" <<'PY'
import sys, wave
def frames(path):
    with wave.open(path) as w:
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (16000, 1, 2), path
        return w.readframes(w.getnframes())
jfk, silero, rate = frames(sys.argv[1]), frames(sys.argv[2]), 16000
pause = lambda s: bytes(2 * int(round(s * rate)))
data, i, total = b"", 0, 2 * 600 * rate
while len(data) < total:
    data += jfk + pause(1.0 + 0.13 * i) + silero + pause(2.0 + 0.29 * i)
    i += 1
data = data[:total]
with wave.open(sys.argv[3], "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(rate); w.writeframes(data)
PY
fi
audio_s=600

server="${IZWI_SERVER:-$build/examples/server/izwi-server}"
out="$build/compare-whisper-long${IZWI_SERVER:+-other}"
rm -rf "$out"
mkdir -p "$out"
echo "izwi: ${IZWI_SERVER:-$(git -C "$root" describe --always --dirty 2>/dev/null || echo '?')}, Release, no -march flags; izwi-server --threads N --max-num-batched-tokens 8192"
echo "whisper.cpp: @fugood/whisper.node 1.1.3's source, GGML_NATIVE=ON; machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores"
echo "model: $model (random weights, --eot-scale -1.5); audio: $audio ($audio_s s); beam size $beam"

port=8393
izwi_pid=
trap '[[ -n "$izwi_pid" ]] && kill "$izwi_pid" 2>/dev/null || true' EXIT
id="$(basename "$model" .bin)"

# Seconds for one upload of $1 (extra form fields after it) to be answered into $2.
izwi_once() {
  local file=$1 answer=$2 start end hits
  shift 2
  hits=$(prefix_hits)
  start=$(date +%s.%N)
  curl -sf "127.0.0.1:$port/v1/audio/transcriptions" -F file=@"$file" -F model="$id" -F language=en -F temperature=0 \
    -F temperature_inc=0 -F beam_size="$beam" -F no_timestamps=true -F response_format=verbose_json "$@" -o "$answer"
  end=$(date +%s.%N)
  echo $(($(prefix_hits) - hits)) >"$answer.hits"
  echo "$end - $start" | bc
}
# Prompt tokens the server found in its prefix cache so far.
prefix_hits() {
  curl -sf "127.0.0.1:$port/metrics" | awk '/^izwi:prefix_cache_hits_total/ {s += $2} END {print s + 0}'
}
# Seconds whisper-cli spends on the file (its total time less the model load);
# its timings in $2.log.
wcpp_once() {
  local n=$1 prefix=$2
  "$wcpp/whisper-cli" -m "$model" -f "$audio" -l en -t "$n" -nfa -nt -nf --suppress-nst -bs "$beam" -bo 1 \
    >"$prefix.txt" 2>"$prefix.log"
  python3 - "$prefix.log" <<'PY'
import re, sys
t = open(sys.argv[1], errors="replace").read()
ms = lambda what: float(re.search(what + r" time =\s*([\d.]+) ms", t).group(1))
print((ms("total") - ms("load")) / 1000)
PY
}

# A fresh server for every round: a second upload of the file would find its
# windows' encoder outputs in the prefix cache of the first (keyed by the
# samples' hash), which no new file gets. Within a round the sequential and
# the VAD passes cut the audio into different windows.
for n in $threads; do
  for ((r = 1; r <= rounds; r++)); do
    "$server" --model "$model" --port $port --threads "$n" --max-num-batched-tokens 8192 \
      >"$out/izwi-server-$n-r$r.log" 2>&1 &
    izwi_pid=$!
    for _ in $(seq 120); do curl -sf "127.0.0.1:$port/health" >/dev/null && break; sleep 1; done
    izwi_once "$fixtures/audio/jfk.wav" "$out/warm.json" >/dev/null
    izwi_once "$fixtures/audio/jfk.wav" "$out/warm.json" -F chunking_strategy=auto >/dev/null
    wait_for_quiet_machine "$n thread(s), round $r"
    [[ -n "$PAIR_LABEL" ]] && echo "$PAIR_LABEL" >"$out/loaded-$n-r$r.txt"
    echo "== $n thread(s), round $r/$rounds; load before: $(load_1min) ${PAIR_LABEL}" >&2
    izwi_once "$audio" "$out/seq-$n-r$r.json" >"$out/seq-$n-r$r.s"
    izwi_once "$audio" "$out/vad-$n-r$r.json" -F chunking_strategy=auto >"$out/vad-$n-r$r.s"
    wcpp_once "$n" "$out/wcpp-$n-r$r" >"$out/wcpp-$n-r$r.s"
    kill "$izwi_pid"
    wait "$izwi_pid" 2>/dev/null || true
    izwi_pid=
  done
done

python3 - "$out" "$threads" "$rounds" "$audio_s" "$beam" <<'PY'
import json, pathlib, re, statistics, sys
out, threads, rounds, audio_s = pathlib.Path(sys.argv[1]), sys.argv[2].split(), int(sys.argv[3]), float(sys.argv[4])
beam = int(sys.argv[5])
EOT = 50257  # multilingual <|endoftext|>: text tokens are below it
def izwi_tokens(path):
    answer = json.loads(path.read_text())
    return [t for s in answer["segments"] for t in s.get("tokens", []) if t < EOT], len(answer["segments"])
def wcpp_tokens(path):  # its single-token decoder runs: one per text token (see the top)
    t = path.read_text(errors="replace")
    return int(re.search(r"decode time =\s*[\d.]+ ms /\s*(\d+) runs", t).group(1))
secs = lambda p: float(p.read_text())
print("\n| threads | whisper-cli s | RTF | izwi sequential s | RTF | izwi VAD s | RTF | whisper-cli / izwi seq | whisper-cli / izwi VAD "
      "| text tokens whisper-cli / seq / VAD | note |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
m = statistics.median
for n in threads:
    w = [secs(out / f"wcpp-{n}-r{r}.s") for r in range(1, rounds + 1)]
    s = [secs(out / f"seq-{n}-r{r}.s") for r in range(1, rounds + 1)]
    v = [secs(out / f"vad-{n}-r{r}.s") for r in range(1, rounds + 1)]
    tw = wcpp_tokens(out / f"wcpp-{n}-r{rounds}.log")
    ts, _ = izwi_tokens(out / f"seq-{n}-r{rounds}.json")
    tv, regions = izwi_tokens(out / f"vad-{n}-r{rounds}.json")
    loaded = [r for r in range(1, rounds + 1) if (out / f"loaded-{n}-r{r}.txt").exists()]
    hits = lambda mode: int(float((out / f"{mode}-{n}-r{rounds}.json.hits").read_text() or 0))
    note = f"median of {rounds}; VAD: {regions} segments; prefix-cache hits seq {hits('seq')} / VAD {hits('vad')} tokens"
    if beam > 1:
        note += f"; beam {beam}: whisper-cli's runs are beam batches, not tokens"
    else:
        apart = abs(len(ts) - tw) / max(tw, 1)
        note += f"; seq tokens {100 * apart:.0f}% from whisper-cli's" + ("; UNEQUAL WORK" if apart > 0.1 else "")
    if loaded: note += f"; LOADED rounds {loaded}: not evidence"
    print(f"| {n} | {m(w):.2f} | {m(w)/audio_s:.4f} | {m(s):.2f} | {m(s)/audio_s:.4f} | {m(v):.2f} | {m(v)/audio_s:.4f} "
          f"| {m(w)/m(s):.2f} | {m(w)/m(v):.2f} | {tw} / {len(ts)} / {len(tv)} | {note} |")
PY
