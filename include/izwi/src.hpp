#pragma once
// izwi's compiled part, for IZWI_SEPARATE_COMPILATION (see izwi/config.hpp):
// include this in exactly one translation unit of a program whose every
// translation unit defines IZWI_SEPARATE_COMPILATION. The CMake target
// izwi::compiled is that translation unit (src/izwi.cpp).
//
// It defines the non-template functions marked IZWI_DECL (model loading,
// Qwen3-TTS's model, codec, encoders and executor, Whisper's loading and
// executor) and
// explicitly instantiates the stock engine configurations of
// izwi/stock_engines.hpp. The model files' part (io/) is <izwi/io/src.hpp>,
// the server's <izwi/server/src.hpp>.

#if !defined(IZWI_SEPARATE_COMPILATION)
#error "izwi/src.hpp is for IZWI_SEPARATE_COMPILATION builds; header-only builds need no compiled part"
#endif

#define IZWI_SOURCE
#include "izwi/stock_engines.hpp"

#include "izwi/models/impl/qwen3_load.ipp"

// Qwen3-TTS, each body after those it uses (as the headers include them).
#include "izwi/models/impl/qwen3_tts_config.ipp"
#include "izwi/models/impl/qwen3_tts_codec_load.ipp"
#include "izwi/models/impl/qwen3_tts_codec_gguf.ipp"
#include "izwi/models/impl/qwen3_tts_codec.ipp"
#include "izwi/models/impl/qwen3_tts_speaker_encoder.ipp"
#include "izwi/models/impl/qwen3_tts_speech_encoder.ipp"
#include "izwi/models/impl/qwen3_tts_load.ipp"
#include "izwi/models/impl/qwen3_tts_gguf.ipp"
#include "izwi/models/impl/qwen3_tts_compute.ipp"
#include "izwi/models/impl/qwen3_tts.ipp"
#include "izwi/models/impl/qwen3_tts_request.ipp"
#include "izwi/executor/impl/qwen3_tts_cpu.ipp"

// Whisper.
#include "izwi/models/impl/whisper_load.ipp"
#include "izwi/executor/impl/whisper_cpu.ipp"

#define IZWI_STOCK_INSTANTIATION template
#include "izwi/detail/stock_instantiations.hpp"
#undef IZWI_STOCK_INSTANTIATION
