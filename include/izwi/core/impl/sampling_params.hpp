#pragma once

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

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
  validate_logit_bias();
}

inline void SamplingParams::validate_logit_bias() const {
  using detail::throw_out_of_range;
  if (logit_bias.size() > max_logit_bias)
    throw_out_of_range("logit_bias", "at most 1024 entries", logit_bias.size());
  std::vector<TokenId> ids;
  ids.reserve(logit_bias.size());
  for (const auto& [token, bias] : logit_bias) {
    if (token < 0) throw_out_of_range("logit_bias", "keyed by non-negative token ids", token);
    if (!(bias >= -100.0f && bias <= 100.0f)) throw_out_of_range("logit_bias", "biases in [-100, 100]", bias);
    ids.push_back(token);
  }
  std::sort(ids.begin(), ids.end());
  if (const auto twice = std::adjacent_find(ids.begin(), ids.end()); twice != ids.end())
    throw invalid_argument("logit_bias", "logit_bias names token " + std::to_string(*twice) + " more than once");
}

}  // namespace izwi
