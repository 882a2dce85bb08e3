#pragma once
// The model files' compiled part (io/: GGUF, safetensors, whisper.cpp's ggml
// files, checkpoint directories, JSON and config views), for
// IZWI_SEPARATE_COMPILATION (see izwi/config.hpp): include this in exactly one
// translation unit of a program whose every translation unit defines
// IZWI_SEPARATE_COMPILATION. The CMake target izwi::io_compiled is that
// translation unit (src/izwi_io.cpp); izwi::compiled and
// izwi::server_http_compiled link it.
//
// Its own part, not izwi/src.hpp's: the HTTP Server reads model files too
// (Silero VAD's weights) without any stock engine.

#if !defined(IZWI_SEPARATE_COMPILATION)
#error "izwi/io/src.hpp is for IZWI_SEPARATE_COMPILATION builds; header-only builds need no compiled part"
#endif

#include "izwi/io/config.hpp"
#include "izwi/io/ggml_whisper.hpp"
#include "izwi/io/gguf.hpp"
#include "izwi/io/gguf_qwen3.hpp"
#include "izwi/io/json.hpp"
#include "izwi/io/model_directory.hpp"
#include "izwi/io/quantize.hpp"
#include "izwi/io/safetensors.hpp"
#include "izwi/io/weights.hpp"

// The bodies, each after those it uses (as the headers include them).
#include "izwi/io/impl/json.ipp"
#include "izwi/io/impl/config.ipp"
#include "izwi/io/impl/quantize.ipp"
#include "izwi/io/impl/safetensors.ipp"
#include "izwi/io/impl/gguf.ipp"
#include "izwi/io/impl/gguf_qwen3.ipp"
#include "izwi/io/impl/ggml_whisper.ipp"
#include "izwi/io/impl/weights.ipp"
#include "izwi/io/impl/model_directory.ipp"
