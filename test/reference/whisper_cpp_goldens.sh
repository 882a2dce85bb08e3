#!/usr/bin/env bash
# Regenerates izwi's Whisper goldens (test/models/goldens/whisper-tiny-random-*.json)
# from whisper.cpp, built natively from the source npm's @fugood/whisper.node
# 1.1.3 ships (test/reference/whisper_cpp_build.sh). CI never runs this: it
# compares against the committed goldens (test/models/whisper_reference_test.cpp).
#
# The model is the random-weight Whisper of the tiny shape that
# izwi-make-random-whisper writes (seed 7) as a ggml file; the input is izwi's
# log-mel of each audio file (so the comparison is of the model alone), and
# whisper-cli's segments of jfk.wav (its own mel and decoding rules):
#
#   test/reference/whisper_cpp_goldens.sh [build dir]   # default build-test/dev
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build-test/dev}"
fixtures="${IZWI_FIXTURES_DIR:-$root/../shared/fixtures}"
out="$root/test/models/goldens"
threads="${THREADS:-2}"
mkdir -p "$out"

cmake --build "$build" --target izwi-make-random-whisper >&2
tool="$build/tools/izwi-make-random-whisper"
reference_build="$("$root/test/reference/whisper_cpp_build.sh")"
reference="$reference_build/izwi-whisper-reference"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$tool" --out "$work/model" --vocab-from "$fixtures/whisper/for-tests-ggml-tiny.bin" \
  --tiktoken "$fixtures/whisper/multilingual.tiktoken" --seed 7 --ggml-type f16 >&2
# name:audio file:offset of the 30-s window in seconds
for window in jfk:jfk.wav:0 silero_test:silero_test.wav:0 silero_test-30s:silero_test.wav:30; do
  IFS=: read -r name audio offset <<< "$window"
  "$tool" --mel-of "$fixtures/audio/$audio" --offset "$offset" --mel-out "$work/$name.mel" >&2
  "$reference" "$work/model/ggml-model.bin" "$work/$name.mel" "$threads" 2>/dev/null > "$out/whisper-tiny-random-$name.json"
  echo "wrote $out/whisper-tiny-random-$name.json" >&2
done

# End to end through whisper-cli (its own mel, its decoding rules, timestamps
# on, greedy: -bs 1, no temperature fallback: -nf, no flash attention: -nfa,
# whose f16 queries change the numerics): the segments of jfk.wav.
for variant in "" -f16; do
  model="$work/model/ggml-model$variant.bin"
  "$reference_build/whisper-cli" -m "$model" -f "$fixtures/audio/jfk.wav" -bs 1 -nf -l en \
    -t "$threads" -nfa -ojf -of "$work/cli" >/dev/null 2>&1
  /usr/bin/python3 - "$work/cli.json" "$out/whisper-tiny-random-jfk-cli$variant.json" "$variant" <<'PY'
import json, sys
cli = json.loads(open(sys.argv[1], "rb").read().decode("utf-8", "replace"))
segments = [{"t0_ms": s["offsets"]["from"], "t1_ms": s["offsets"]["to"], "tokens": [t["id"] for t in s["tokens"]]}
            for s in cli["transcription"]]
source = "whisper-cli -bs 1 -nf -nfa -l en -ojf, ggml-model%s.bin" % sys.argv[3]
json.dump({"source": source, "segments": segments}, open(sys.argv[2], "w"), indent=1)
PY
  echo "wrote $out/whisper-tiny-random-jfk-cli$variant.json" >&2
done

# The same with beam search (-bs 5, whisper.cpp's own beam algorithm), F32 file.
"$reference_build/whisper-cli" -m "$work/model/ggml-model.bin" -f "$fixtures/audio/jfk.wav" -bs 5 -nf -l en \
  -t "$threads" -nfa -ojf -of "$work/cli-bs5" >/dev/null 2>&1
/usr/bin/python3 - "$work/cli-bs5.json" "$out/whisper-tiny-random-jfk-cli-bs5.json" <<'PY'
import json, sys
cli = json.loads(open(sys.argv[1], "rb").read().decode("utf-8", "replace"))
segments = [{"t0_ms": s["offsets"]["from"], "t1_ms": s["offsets"]["to"], "tokens": [t["id"] for t in s["tokens"]]}
            for s in cli["transcription"]]
json.dump({"source": "whisper-cli -bs 5 -nf -nfa -l en -ojf, ggml-model.bin", "segments": segments},
          open(sys.argv[2], "w"), indent=1)
PY
echo "wrote $out/whisper-tiny-random-jfk-cli-bs5.json" >&2
