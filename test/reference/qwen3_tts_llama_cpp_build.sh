#!/usr/bin/env bash
# Builds llama.cpp's llama-tts natively from the source node-llama-cpp 3.22.1
# ships (test/reference/node_modules, a git bundle), for
# test/reference/qwen3_tts_goldens.sh. Never run by CI: the goldens are committed.
#
# Three environment-gated lines are patched into the copy (they change
# nothing unless the variables are set), because llama-tts prints neither
# its codes nor float samples, and a fourth passes -fa through to mtmd:
#   IZWI_CODES_FILE=path   mtmd-helper-gen.cpp appends the text token ids it
#                          built the prompt from ("text: ...") and every
#                          frame's 16 codes (one line per frame)
#   IZWI_PCM=1             tts.cpp writes the float32 samples instead of a WAV
#   IZWI_XVECTOR_FILE=path mtmd-helper-gen.cpp writes the speaker encoder's
#                          x-vector of --tts-speaker-file (one line of floats)
#   -fa off                now also turns flash attention off in the code predictor and codec
#
#   test/reference/qwen3_tts_llama_cpp_build.sh [work dir]   # prints the llama-tts path
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="${1:-${IZWI_LLAMA_TTS_DIR:-$root/build-test/llama-cpp-tts}}"
mkdir -p "$work"
work="$(cd "$work" && pwd)"
jobs="${JOBS:-$(nproc)}"
src="$work/llama.cpp"
if [[ ! -d "$src/tools/tts" ]]; then
  rm -rf "$src"
  git clone -q "$root/test/reference/node_modules/node-llama-cpp/llama/gitRelease.bundle" "$src"
fi
helper="$src/tools/mtmd/mtmd-helper-gen.cpp"
if ! grep -q IZWI_CODES_FILE "$helper"; then
  # After the prompt's token ids are known: the utterance's ids, [3, n - 5).
  sed -i '0,/^\s*ids.resize((size_t) n_ids);/s|^\(\s*\)ids.resize((size_t) n_ids);|&\n\1if (const char * izwi_f = getenv("IZWI_CODES_FILE")) { FILE * fp = fopen(izwi_f, "w"); fprintf(fp, "text:"); for (int i = 3; i < n_ids - 5; i++) fprintf(fp, " %d", ids[(size_t) i]); fprintf(fp, "\\n"); fclose(fp); }|' "$helper"
  # After each frame's codes arrive.
  sed -i '0,/^\s*codes_buf.insert(codes_buf.end(), out.codes, out.codes + out.n_codes);/s|^\(\s*\)codes_buf.insert(codes_buf.end(), out.codes, out.codes + out.n_codes);|&\n\1if (const char * izwi_f = getenv("IZWI_CODES_FILE")) { FILE * fp = fopen(izwi_f, "a"); for (int i = 0; i < out.n_codes; i++) fprintf(fp, i ? " %d" : "%d", out.codes[i]); fprintf(fp, "\\n"); fclose(fp); }|' "$helper"
  sed -i 's|^\(\s*\)inp.out_type    = MTMD_HELPER_GEN_AUDIO_OUTTYPE_WAV;|\1inp.out_type    = getenv("IZWI_PCM") ? MTMD_HELPER_GEN_AUDIO_OUTTYPE_PCM : MTMD_HELPER_GEN_AUDIO_OUTTYPE_WAV;|' "$src/tools/tts/tts.cpp"
  # llama-tts does not pass -fa to mtmd (whose default, auto, means flash
  # attention with f16 K/V in the code predictor); pass it through. Under the
  # defaults both are auto, so this changes nothing unless -fa is given.
  sed -i 's|^\(\s*\)mtmd_params.device  = params.mmproj_device;|&\n\1mtmd_params.flash_attn_type = params.flash_attn_type;|' "$src/tools/tts/tts.cpp"
  grep -q 'mtmd_params.flash_attn_type = params.flash_attn_type' "$src/tools/tts/tts.cpp" \
    && grep -q 'getenv("IZWI_CODES_FILE")' "$helper" && [[ $(grep -c IZWI_CODES_FILE "$helper") == 2 ]] \
    && grep -q IZWI_PCM "$src/tools/tts/tts.cpp" || { echo "patching llama.cpp failed: its source changed" >&2; exit 1; }
fi
if ! grep -q IZWI_XVECTOR_FILE "$helper"; then
  # After the speaker encoder's x-vector is copied out: one line of floats.
  sed -i '0,/^\s*out.assign(embd, embd + n);/s|^\(\s*\)out.assign(embd, embd + n);|&\n\1if (const char * izwi_f = getenv("IZWI_XVECTOR_FILE")) { FILE * fp = fopen(izwi_f, "w"); for (size_t i = 0; i < n; i++) fprintf(fp, i ? " %.9g" : "%.9g", embd[i]); fprintf(fp, "\\n"); fclose(fp); }|' "$helper"
  [[ $(grep -c IZWI_XVECTOR_FILE "$helper") == 1 ]] || { echo "patching llama.cpp's x-vector print failed: its source changed" >&2; exit 1; }
fi
build="$work/build"
if [[ ! -f "$build/build.ninja" ]]; then
  # AMX compiled out as bench/models/compare_llama_cpp.sh explains (SIGILL on this VM).
  noamx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
  cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    "-DCMAKE_C_FLAGS=$noamx" "-DCMAKE_CXX_FLAGS=$noamx" >&2
fi
nice -n 15 cmake --build "$build" --target llama-tts -j "$jobs" >&2
echo "$build/bin/llama-tts"
