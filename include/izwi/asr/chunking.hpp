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
//
// VadRegionPlanner makes the same plan while Silero is still running: fed the
// probabilities as they come, it hands out each region as soon as no later
// probability can change it (about 32 s after the region starts), so the
// decoder starts on the first region while the VAD works through the rest.
// The regions it hands out, in all, are plan_vad_regions' over the whole audio.

#include <cstddef>
#include <span>
#include <vector>

#include "izwi/audio/splitter.hpp"
#include "izwi/audio/vad.hpp"

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

namespace detail {

/// plan_vad_regions' options, checked and turned into the parts' own.
struct VadPlanSettings {
  audio::SplitOptions split;
  audio::SpeechSegmentOptions segments;
  std::size_t max_len = 0;  // samples
  float pause = 0;          // below this a Silero window is a pause (quiet_cut)
};

}  // namespace detail

/// plan_vad_regions, incrementally: Silero's probabilities come in order as
/// they are computed, and each region is handed out once it is final.
///
///   asr::VadRegionPlanner planner(samples, options);
///   while (more windows) { planner.add_probabilities(next); start(planner.take_final()); }
///   start(planner.finish());
///
/// A region starting at s depends only on the audio and the probabilities
/// up to s + max_chunk_s plus a guard (silence_duration_ms, twice the
/// padding, and a second); take_final() returns the regions that start early
/// enough for that to be known. Holds a view of the samples: they must
/// outlive it.
class VadRegionPlanner {
 public:
  /// Throws as plan_vad_regions for options out of range.
  VadRegionPlanner(std::span<const float> samples_16k, const VadChunkingOptions& options = {});

  /// Silero's probabilities of the next windows (one per 512 samples, the
  /// last partial window zero-padded, as SileroVad::speech_probabilities).
  /// Throws izwi::invalid_argument past the audio's windows or after finish().
  void add_probabilities(std::span<const float> next);
  /// Regions no later probability can change, not handed out before, in order.
  std::vector<audio::AudioChunk> take_final();
  /// Every window given: the rest of the plan. Throws izwi::invalid_argument
  /// if a window's probability is missing.
  std::vector<audio::AudioChunk> finish();

  /// Windows of the audio: how many probabilities the plan takes in all.
  std::size_t windows() const noexcept;
  /// Probabilities given so far.
  std::size_t windows_seen() const noexcept { return probabilities_.size(); }

 private:
  std::span<const float> samples_;
  detail::VadPlanSettings settings_;
  std::size_t guard_ = 0;   // samples past max_len a region's start must be from the last one seen
  std::size_t resume_ = 0;  // end of the last region handed out
  std::vector<float> probabilities_;
  bool finished_ = false;
};

}  // namespace izwi::asr

#include "izwi/asr/impl/chunking.hpp"
