#pragma once
// A transcriber's window job as an engine request for a Whisper model
// (izwi/models/whisper_request.hpp builds the audio placeholders and the
// decoder prompt).

#include <span>
#include <vector>

#include "izwi/asr/transcriber.hpp"
#include "izwi/core/request.hpp"
#include "izwi/models/whisper.hpp"
#if __has_include("izwi/models/whisper_request.hpp")  // TEMPORARY until the engine lands in main
#include "izwi/models/whisper_request.hpp"
#define IZWI_HAVE_WHISPER_REQUEST 1
#else
#include "izwi/core/error.hpp"
#endif

namespace izwi::server::detail {

inline Request whisper_window_request(const Whisper& model, const asr::WindowJob& job,
                                      const std::vector<float>& samples, Task task) {
#if !defined(IZWI_HAVE_WHISPER_REQUEST)
  (void)model, (void)job, (void)samples, (void)task;
  throw invalid_argument("model", "Whisper engine not in this build");
#else
  const std::span<const float> window(samples.data() + job.begin, job.end - job.begin);
  if (job.kind == asr::WindowJob::Kind::language_probe) {
    Request probe = make_whisper_language_probe(model, window);
    probe.task = task;
    return probe;
  }
  WhisperPromptOptions prompt;
  prompt.language = job.language;
  prompt.translate = job.translate;
  prompt.timestamps = true;
  prompt.previous_tokens = job.previous_tokens;
  SamplingParams sampling;
  sampling.temperature = job.temperature;
  sampling.max_tokens = job.max_tokens;
  sampling.logprobs = 0;  // each token's: the average log-probability of the fallback test
  sampling.seed = job.seed;
  Request request = make_whisper_request(model, window, prompt, sampling);
  request.task = task;
  return request;
#endif
}

}  // namespace izwi::server::detail
