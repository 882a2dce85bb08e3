#pragma once
// A transcriber's window job as an engine request for a Whisper model
// (izwi/models/whisper_request.hpp builds the audio placeholders and the
// decoder prompt).

#include <span>
#include <string>
#include <vector>

#include "izwi/asr/transcriber.hpp"
#include "izwi/core/error.hpp"
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
  sampling.logprobs = job.top_logprobs;  // a beam round's candidates; 0: the token's own only
  sampling.seed = job.seed;
  Request request = make_whisper_request(model, window, prompt, sampling);
  request.task = task;
  // A beam continues its tokens as prompt: the executor's timestamp rules
  // read them as generated text (they follow <|startoftranscript|>'s sequence).
  for (const TokenId t : job.continuation)
    if (t >= special.eot && !special.is_timestamp(t))
      throw invalid_argument("continuation", "a beam holds text and timestamp tokens only, got " + std::to_string(t));
  request.prompt_tokens.insert(request.prompt_tokens.end(), job.continuation.begin(), job.continuation.end());
  return request;
}

}  // namespace izwi::server::detail
