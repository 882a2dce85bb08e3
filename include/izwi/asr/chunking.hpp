#pragma once
// Where to cut long audio for the VAD fast path of transcription
// (chunking_strategy "auto" / {"type": "server_vad"}): regions of at most
// 30 s that hold the speech and as little else as fits. Each region is then
// one Transcriber region, decoded at the same time as the others (one engine
// batch); every region costs one full 30-s encoder pass however short it is,
// so the fewer regions the better.
//
//   auto probabilities = silero.speech_probabilities(samples);          // or {} for the energy VAD
//   auto regions = izwi::asr::plan_vad_regions(samples, probabilities, {});
//
// How:
//   1. speech segments: silero-vad's get_speech_timestamps over Silero's
//      probabilities (threshold, min silence, padding as OpenAI's server_vad
//      names them), or the energy VAD (audio/vad.hpp) without them;
//   2. a region starts where speech starts and takes every segment that ends
//      within 30 s of its start. If the next segment starts later than that,
//      the region ends with the last one taken and the next region starts
//      at the next segment (the silence between is never decoded, as in
//      faster-whisper's batched pipeline, which merges speech segments into
//      spans of at most one window); if it runs across, the region is cut at
//      the quietest point of the splitter's range (audio/splitter.hpp: 25-30
//      s from its start) and the next region starts at the cut. Dense speech
//      is thus tiled as the splitter tiles audio; pauses longer than what is
//      left of a window end a region early and are skipped.
// Regions keep the original timeline (silence inside a region stays), so a
// segment's time is its region's offset plus the window's.
// Audio no longer than one window that holds speech is one region of the
// whole audio: the VAD path is then the sequential one.

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

/// Regions of at most max_chunk_s, in order, disjoint, covering every
/// detected speech segment; none when there is no speech. `speech_probabilities`: Silero's, one per 512
/// samples; empty: the energy VAD. Throws izwi::invalid_argument for
/// options out of range (threshold outside [0, 1], negative durations).
std::vector<audio::AudioChunk> plan_vad_regions(std::span<const float> samples_16k,
                                                std::span<const float> speech_probabilities,
                                                const VadChunkingOptions& options = {});

}  // namespace izwi::asr

#include "izwi/asr/impl/chunking.hpp"
