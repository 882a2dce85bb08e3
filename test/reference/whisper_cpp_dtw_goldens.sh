#!/usr/bin/env bash
# Regenerates test/models/goldens/whisper-tiny-random-jfk-dtw.json: whisper.cpp's
# DTW token timestamps (whisper-cli -dtw tiny, t_dtw per token) of jfk.wav on
# the random-weight tiny model (izwi-make-random-whisper --seed 7, F32 ggml),
# greedy without fallback or flash attention, as whisper_cpp_goldens.sh decodes.
# The Whisper tests align the same tokens with izwi's code and compare.
#
#   test/reference/whisper_cpp_dtw_goldens.sh [build dir]   # default build-test/dev
#
# whisper-cli: $IZWI_WHISPER_CLI when set (an existing build), else the one
# test/reference/whisper_cpp_build.sh builds (once, ~2 min).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build-test/dev}"
fixtures="${IZWI_FIXTURES_DIR:-$root/../shared/fixtures}"
out="$root/test/models/goldens/whisper-tiny-random-jfk-dtw.json"
threads="${THREADS:-2}"

cmake --build "$build" --target izwi-make-random-whisper >&2
cli="${IZWI_WHISPER_CLI:-$("$root/test/reference/whisper_cpp_build.sh")/whisper-cli}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$build/tools/izwi-make-random-whisper" --out "$work/model" --vocab-from "$fixtures/whisper/for-tests-ggml-tiny.bin" \
  --tiktoken "$fixtures/whisper/multilingual.tiktoken" --seed 7 >&2
"$cli" -m "$work/model/ggml-model.bin" -f "$fixtures/audio/jfk.wav" -bs 1 -nf -l en -t "$threads" -nfa \
  -dtw tiny -ojf -of "$work/cli" >/dev/null 2>&1
/usr/bin/python3 - "$work/cli.json" "$out" <<'PY'
import json, sys
cli = json.loads(open(sys.argv[1], "rb").read().decode("utf-8", "replace"))
# whisper.cpp gives each text token the time (centiseconds) where the warping
# path reaches the row after it; special and timestamp tokens carry -1.
tokens = [[t["id"], t["t_dtw"]] for s in cli["transcription"] for t in s["tokens"]]
source = "whisper-cli -bs 1 -nf -nfa -l en -dtw tiny -ojf, ggml-model.bin (random tiny, seed 7), jfk.wav"
json.dump({"source": source, "tokens": tokens}, open(sys.argv[2], "w"), indent=None)
PY
echo "wrote $out" >&2
