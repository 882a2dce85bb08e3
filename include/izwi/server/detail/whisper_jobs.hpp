#pragma once
// A transcriber's window job as an engine request for a Whisper model
// (izwi/models/whisper_request.hpp builds the audio placeholders and the
// decoder prompt).

#include <span>
#include <vector>

#include "izwi/asr/transcriber.hpp"
#include "izwi/core/request.hpp"
#include "izwi/models/whisper_request.hpp"

namespace izwi::server::detail {

inline Request whisper_window_request(const Whisper& model, const asr::WindowJob& job,
                                      const std::vector<float>& samples, Task task) {
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
  // The previous segments' text and timestamp tokens, as openai-whisper
  // conditions on them; any other special token would be refused.
  const auto& special = model.special_tokens();
  for (const TokenId t : job.previous_tokens)
    if (t < special.eot || special.is_timestamp(t)) prompt.previous_tokens.push_back(t);
  SamplingParams sampling = whisper_sampling(job.temperature);  // each token's logprob: the fallback test
  sampling.max_tokens = job.max_tokens;
  sampling.logprobs = 0;
  sampling.seed = job.seed;
  Request request = make_whisper_request(model, window, prompt, sampling);
  request.task = task;
  return request;
}

}  // namespace izwi::server::detail
