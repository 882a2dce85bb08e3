#pragma once
// A transcriber's window job as an engine request for a Whisper model
// (izwi/models/whisper_request.hpp builds the audio placeholders and the
// decoder prompt), the cache that lets a window's jobs share its audio, and
// the Silero pass of chunking_strategy that runs beside the decoding.

#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "izwi/asr/chunking.hpp"
#include "izwi/asr/transcriber.hpp"
#include "izwi/core/error.hpp"
#include "izwi/core/request.hpp"
#include "izwi/models/silero_vad.hpp"
#include "izwi/models/whisper_request.hpp"

namespace izwi::server::detail {

/// The audio inputs of a transcription's recent windows, so that the jobs
/// over one window (its probe, its decodes, every round of a beam search)
/// share one log-mel and content hash instead of computing them per request.
/// Shared by the work threads that build the requests: locked.
class WindowAudioCache {
 public:
  std::shared_ptr<const AudioInput> get(const Whisper& model, const asr::WindowJob& job,
                                        const std::vector<float>& samples) {
    {
      std::lock_guard lock(mutex_);
      for (const Entry& e : entries_)
        if (e.begin == job.begin && e.end == job.end) return e.audio;
    }
    // Built outside the lock: two threads may build the same window once each; both are right.
    std::shared_ptr<const AudioInput> audio =
        make_whisper_window_audio(model, std::span<const float>(samples.data() + job.begin, job.end - job.begin));
    std::lock_guard lock(mutex_);
    entries_.push_back({job.begin, job.end, audio});
    // A few windows (VAD regions decode at once); each holds its samples and
    // log-mel, ~3 MB for 30 s, which the requests in flight share anyway.
    if (entries_.size() > max_entries) entries_.erase(entries_.begin());
    return audio;
  }

  static constexpr std::size_t max_entries = 4;

 private:
  struct Entry {
    std::size_t begin, end;
    std::shared_ptr<const AudioInput> audio;
  };
  std::mutex mutex_;
  std::vector<Entry> entries_;
};

/// `cache`: where the window's audio input is looked up and kept (nullptr: built for this request).
inline Request whisper_window_request(const Whisper& model, const asr::WindowJob& job,
                                      const std::vector<float>& samples, Task task, WindowAudioCache* cache = nullptr) {
  if (job.begin > job.end || job.end > samples.size())
    throw invalid_argument("window", "a window job lies outside the audio");
  std::shared_ptr<const AudioInput> window =
      cache ? cache->get(model, job, samples)
            : make_whisper_window_audio(model, std::span<const float>(samples.data() + job.begin, job.end - job.begin));
  if (job.kind == asr::WindowJob::Kind::language_probe) {
    Request probe = make_whisper_language_probe(model, std::move(window));
    probe.task = task;
    return probe;
  }
  WhisperPromptOptions prompt;
  prompt.language = job.language;
  prompt.translate = job.translate;
  prompt.timestamps = job.timestamps;
  // The previous segments' text and timestamp tokens, as openai-whisper
  // conditions on them; any other special token would be refused.
  const auto& special = model.special_tokens();
  for (const TokenId t : job.previous_tokens)
    if (t < special.eot || special.is_timestamp(t)) prompt.previous_tokens.push_back(t);
  SamplingParams sampling = whisper_sampling(job.temperature);  // each token's logprob: the fallback test
  sampling.max_tokens = job.max_tokens;
  sampling.logprobs = job.top_logprobs;  // a beam round's candidates; 0: the token's own only
  sampling.seed = job.seed;
  Request request = make_whisper_request(model, std::move(window), prompt, sampling);
  request.task = task;
  // A beam continues its tokens as prompt: the executor's timestamp rules
  // read them as generated text (they follow <|startoftranscript|>'s sequence).
  for (const TokenId t : job.continuation)
    if (t >= special.eot && !special.is_timestamp(t))
      throw invalid_argument("continuation", "a beam holds text and timestamp tokens only, got " + std::to_string(t));
  request.prompt_tokens.insert(request.prompt_tokens.end(), job.continuation.begin(), job.continuation.end());
  return request;
}

/// chunking_strategy with Silero over audio longer than one window: the
/// VAD pass, a piece at a time, so a transcription's first regions are
/// decoded while Silero works through the rest (its windows are sequential:
/// each carries the LSTM state of the one before). The regions handed out
/// in all are plan_vad_regions' over the whole file (asr::VadRegionPlanner).
/// One piece runs at a time, on a work thread.
class VadPass {
 public:
  /// About 30 s of audio per piece (~70 ms of one core): short enough that
  /// window requests are built between pieces, long enough that posting
  /// costs nothing.
  static constexpr std::size_t windows_per_piece = 938;

  /// Throws izwi::invalid_argument for chunking options out of range.
  VadPass(const models::SileroVad& vad, std::shared_ptr<const std::vector<float>> samples,
          const asr::VadChunkingOptions& options)
      : samples_(std::move(samples)), stream_(vad.stream()), planner_(*samples_, options) {}

  /// Runs the next piece; the regions that became final. `finished`: the
  /// audio is done and these are the last.
  std::vector<audio::AudioChunk> advance(bool& finished) {
    const std::size_t end = std::min(planner_.windows(), next_window_ + windows_per_piece);
    std::vector<float> p;
    p.reserve(end - next_window_);
    for (; next_window_ < end; ++next_window_) p.push_back(stream_.process_window_of(*samples_, next_window_));
    planner_.add_probabilities(p);
    finished = next_window_ == planner_.windows();
    if (!finished) return planner_.take_final();
    std::vector<audio::AudioChunk> out = planner_.take_final();
    for (const audio::AudioChunk& c : planner_.finish()) out.push_back(c);
    return out;
  }

 private:
  std::shared_ptr<const std::vector<float>> samples_;  // the planner's view lives as long as this
  models::SileroVadStream stream_;
  asr::VadRegionPlanner planner_;
  std::size_t next_window_ = 0;
};

}  // namespace izwi::server::detail
