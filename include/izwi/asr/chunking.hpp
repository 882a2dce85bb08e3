#pragma once
// Where to cut long audio for the VAD fast path of transcription
// (chunking_strategy "auto" / {"type": "server_vad"}): chunks of at most
// 30 s, cut at the quietest point near 30 s (audio/splitter.hpp), and only
// the chunks that hold speech. Each chunk is then one Transcriber region,
// decoded at the same time as the others (one engine batch).
//
//   auto probabilities = silero.speech_probabilities(samples);          // or {} for the energy VAD
//   auto regions = izwi::asr::plan_vad_regions(samples, probabilities, {});
//
// With Silero probabilities, speech is silero-vad's get_speech_timestamps
// over them (threshold, min silence, padding as OpenAI's server_vad names
// them); without, the energy VAD (audio/vad.hpp) decides.

#include <cstddef>
#include <span>
#include <vector>

#include "izwi/audio/splitter.hpp"

namespace izwi::asr {

/// OpenAI's server_vad parameters (defaults as theirs).
struct VadChunkingOptions {
  float threshold = 0.5f;            ///< speech probability at which speech starts
  double prefix_padding_ms = 300;    ///< audio kept before detected speech
  double silence_duration_ms = 500;  ///< silence that ends speech
  double max_chunk_s = 30;           ///< Whisper's window
};

/// Chunks covering the audio, at most max_chunk_s each, without the ones
/// that hold no speech. `speech_probabilities`: Silero's, one per 512
/// samples; empty: the energy VAD. Throws izwi::invalid_argument for
/// options out of range (threshold outside [0, 1], negative durations).
std::vector<audio::AudioChunk> plan_vad_regions(std::span<const float> samples_16k,
                                                std::span<const float> speech_probabilities,
                                                const VadChunkingOptions& options = {});

}  // namespace izwi::asr

#include "izwi/asr/impl/chunking.hpp"
