#pragma once

#include <cmath>
#include <sstream>

#include "izwi/core/error.hpp"

namespace izwi {

namespace detail {

template <class T>
[[noreturn]] inline void throw_out_of_range(const char* field, const char* range, const T& value) {
  std::ostringstream message;
  message << field << " must be " << range << ", got " << value;
  throw invalid_argument(field, message.str());
}

}  // namespace detail

inline void SamplingParams::validate() const {
  using detail::throw_out_of_range;
  // NaN fails every comparison, so each check is written to reject it.
  if (!(temperature >= 0.0f) || std::isinf(temperature))
    throw_out_of_range("temperature", "a finite number >= 0", temperature);
  if (!(top_p > 0.0f && top_p <= 1.0f)) throw_out_of_range("top_p", "in (0, 1]", top_p);
  if (top_k < -1) throw_out_of_range("top_k", "-1, 0 (disabled) or >= 1", top_k);
  if (!(min_p >= 0.0f && min_p <= 1.0f)) throw_out_of_range("min_p", "in [0, 1]", min_p);
  if (!(repetition_penalty > 0.0f) || std::isinf(repetition_penalty))
    throw_out_of_range("repetition_penalty", "a finite number > 0", repetition_penalty);
  if (!(presence_penalty >= -2.0f && presence_penalty <= 2.0f))
    throw_out_of_range("presence_penalty", "in [-2, 2]", presence_penalty);
  if (!(frequency_penalty >= -2.0f && frequency_penalty <= 2.0f))
    throw_out_of_range("frequency_penalty", "in [-2, 2]", frequency_penalty);
  if (max_tokens && *max_tokens < 1) throw_out_of_range("max_tokens", ">= 1", *max_tokens);
  if (max_tokens && min_tokens > *max_tokens) {
    std::ostringstream range;
    range << "in [0, max_tokens] = [0, " << *max_tokens << "]";
    throw_out_of_range("min_tokens", range.str().c_str(), min_tokens);
  }
  if (logprobs && *logprobs > max_logprobs) throw_out_of_range("logprobs", "in [0, 20]", *logprobs);
  for (const auto& s : stop)
    if (s.empty()) throw invalid_argument("stop", "stop must not contain an empty string");
  for (TokenId t : stop_token_ids)
    if (t < 0) throw_out_of_range("stop_token_ids", "non-negative token ids", t);
}

}  // namespace izwi
