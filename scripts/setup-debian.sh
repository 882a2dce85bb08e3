#!/usr/bin/env bash
# Installs every system dependency izwi needs, from Debian 12 packages.
# Idempotent: packages already present are skipped by apt-get; safe to re-run.
# Used by README, .ci/run and developers alike: add a dependency here, nowhere else.
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config clang-14 libclang-rt-14-dev
  # library dependencies (DESIGN §Dependencies)
  libboost1.81-all-dev xtensor-dev libxsimd-dev librange-v3-dev
  # Boost.JSON's compiled library (libboost_json.so): every JSON file izwi reads
  # goes through it (issue 9); libboost1.81-all-dev does not pull it in
  libboost-json1.81-dev
  catch2 libbenchmark-dev
  # XXH3-128 for the prefix-cache block hash (header-only use, XXH_INLINE_ALL)
  libxxhash-dev
  # audio (issue 5): decode/encode through libsndfile, resampling through soxr,
  # FFTs of arbitrary size (400, 512, 1280) through FFTW3 (single precision)
  libsndfile1-dev libsoxr-dev libfftw3-dev
  # audio (issues 12, 13): FFmpeg's demuxers and codecs for the uploads
  # libsndfile cannot read (MP4/M4A, WebM/Matroska, ADTS AAC, MPEG-PS) and the
  # AAC encoder for /v1/audio/speech's response_format aac
  libavformat-dev libavcodec-dev libavutil-dev
  # speech (issue 13): /v1/audio/speech's `speed` time-stretches the audio
  # with Rubber Band (streaming/real-time mode), which keeps the pitch
  librubberband-dev
  # tokenizer (issue 3): NFC normalization and Unicode letter/number classes
  # for the Qwen2 split pattern come from ICU rather than tables of our own
  libicu-dev
  # transcription (issue 12): zlib compresses each window's text for Whisper's
  # compression-ratio test (the temperature fallback), as openai-whisper does
  zlib1g-dev
  # the OpenCL executor (issue 14): the ICD loader and headers to build
  # izwi::opencl, PoCL's CPU device so its tests run on hosts without a GPU
  # (tests label "opencl"), clinfo to see which devices a host offers. The
  # C++ bindings (opencl-clhpp-headers) are not needed: izwi calls the C API.
  ocl-icd-opencl-dev pocl-opencl-icd clinfo
  # reference implementations for tests (DESIGN §6)
  python3 python3-numpy python3-onnx
  # promtool checks izwi-server's /metrics in the end-to-end tests (issue 4);
  # Debian 12 ships it in the prometheus package (2.42)
  prometheus
  # headless Chromium runs the web playground's end-to-end tests (issue 15;
  # test/server/e2e/webui.test.mjs, driven by playwright-core from npm)
  chromium
  # qemu-x86_64 runs the kernel tests on emulated older CPUs (Westmere: no AVX,
  # Haswell: no AVX-512) to check the runtime kernel dispatch (issue 10)
  qemu-user
)
# Node.js and npm (references from the npm registry): the machine image may
# already carry a newer Node.js with its own npm; Debian's packages only fill a gap.
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm  >/dev/null 2>&1 || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
