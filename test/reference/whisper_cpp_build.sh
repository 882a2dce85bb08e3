#!/usr/bin/env bash
# Builds whisper.cpp's whisper-cli and izwi's reference driver
# (test/reference/whisper_cpp/reference_driver.cpp) natively from the source npm's
# @fugood/whisper.node 1.1.3 ships, for test/reference/whisper_cpp_goldens.sh.
#
# The package ships whisper.cpp's src/, include/ and examples/ but not ggml's
# core sources nor whisper.cpp's cmake/ helpers, so the tree does not build on
# its own. This script compiles whisper.cpp's sources with a small CMakeLists
# of its own against the complete ggml/ of the llama.cpp source that
# node-llama-cpp 3.22.1 ships (test/reference/node_modules, a git bundle).
# Never run by CI: the goldens it feeds are committed.
#
#   test/reference/whisper_cpp_build.sh [work dir]     # prints the build directory
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="${1:-${IZWI_WHISPER_CPP_DIR:-$root/build-test/whisper-cpp}}"
mkdir -p "$work"
work="$(cd "$work" && pwd)"
jobs="${JOBS:-$(nproc)}"

pkg="$work/npm/node_modules/@fugood/whisper.node"
if [[ ! -d "$pkg/whisper.cpp/src" ]]; then
  # --ignore-scripts: nothing may be downloaded or built at install time.
  npm install --ignore-scripts --no-save --no-audit --no-fund --prefix "$work/npm" @fugood/whisper.node@1.1.3 >&2
fi
src="$pkg/whisper.cpp"

llama="$work/llama.cpp"
if [[ ! -d "$llama/ggml/src" ]]; then
  git clone -q "$root/test/reference/node_modules/node-llama-cpp/llama/gitRelease.bundle" "$llama"
fi

project="$work/project"
mkdir -p "$project"
# A copy of whisper.cpp with one accessor appended, so the driver can read the
# encoder output (whisper.h has no getter for it).
cp "$src/src/whisper.cpp" "$project/whisper_with_accessor.cpp"
cat >> "$project/whisper_with_accessor.cpp" <<'ACCESSOR'

extern "C" int izwi_reference_encoder_output(struct whisper_context * ctx, float * out, size_t n) {
    ggml_tensor * t = ctx->state ? ctx->state->embd_enc : nullptr;
    if (t == nullptr || t->type != GGML_TYPE_F32 || (size_t) ggml_nelements(t) != n) return -1;
    ggml_backend_tensor_get(t, out, 0, n * sizeof(float));
    return 0;
}
ACCESSOR
cat > "$project/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.16)
project(whisper_cpp_reference C CXX)
set(CMAKE_CXX_STANDARD 17)
set(GGML_NATIVE ON CACHE BOOL "" FORCE)
set(GGML_OPENMP ON CACHE BOOL "" FORCE)
set(BUILD_SHARED_LIBS OFF CACHE BOOL "" FORCE)
add_subdirectory("$llama/ggml" ggml)
add_library(whisper STATIC "$project/whisper_with_accessor.cpp")
target_include_directories(whisper PUBLIC "$src/include" PRIVATE "$src/src")
target_compile_definitions(whisper PRIVATE WHISPER_VERSION="1.1.3-npm")
target_link_libraries(whisper PUBLIC ggml)
add_library(common STATIC "$src/examples/common.cpp" "$src/examples/common-ggml.cpp" "$src/examples/common-whisper.cpp" "$src/examples/grammar-parser.cpp")
target_include_directories(common PUBLIC "$src/examples")
target_link_libraries(common PUBLIC whisper)
add_executable(whisper-cli "$src/examples/cli/cli.cpp")
target_link_libraries(whisper-cli PRIVATE common whisper)
# whisper-server: the peer of izwi-server's transcription endpoint (one global
# mutex, one request at a time) for the concurrency benchmark still to write.
add_executable(whisper-server "$src/examples/server/server.cpp")
target_include_directories(whisper-server PRIVATE "$src/examples/server")
target_link_libraries(whisper-server PRIVATE common whisper)
add_executable(izwi-whisper-reference "$root/test/reference/whisper_cpp/reference_driver.cpp")
target_link_libraries(izwi-whisper-reference PRIVATE whisper)
CMAKE

build="$project/build"
if [[ ! -x "$build/whisper-cli" || ! -x "$build/whisper-server" || ! -x "$build/izwi-whisper-reference" || \
      "$root/test/reference/whisper_cpp/reference_driver.cpp" -nt "$build/izwi-whisper-reference" ]]; then
  # AMX compiled out: ggml's AMX kernels die with SIGILL in this VM (see
  # bench/models/compare_llama_cpp.sh); whisper's F32 goldens do not use them.
  noamx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
  cmake -S "$project" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "-DCMAKE_C_FLAGS=$noamx" \
    "-DCMAKE_CXX_FLAGS=$noamx" >&2
  cmake --build "$build" --target whisper-cli whisper-server izwi-whisper-reference -j "$jobs" >&2
fi
echo "$build"
