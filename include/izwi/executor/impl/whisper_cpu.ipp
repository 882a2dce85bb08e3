#pragma once
// Bodies of izwi/executor/whisper_cpu.hpp but the two templates (the step,
// impl/whisper_cpu.hpp).
// Inline in header-only builds; compiled once, in <izwi/src.hpp>, under
// IZWI_SEPARATE_COMPILATION (see izwi/config.hpp).

#include "izwi/config.hpp"
#include "izwi/executor/whisper_cpu.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "izwi/core/error.hpp"
#include "izwi/models/detail/whisper_decoding.hpp"
#include "izwi/models/whisper_request.hpp"

namespace izwi {

IZWI_DECL WhisperCpuExecutor::WhisperCpuExecutor(Whisper model, WhisperCpuExecutorConfig config)
    : model_(std::move(model)),
      config_(config),
      pool_(std::make_unique<detail::ThreadPool>(config.num_threads)),
      ops_(*pool_),
      eot_(model_.special_tokens().eot),
      space_(model_.tokenizer() ? model_.tokenizer()->token_to_id(" ") : std::nullopt) {}

IZWI_DECL bool WhisperCpuExecutor::failed(RequestId id) const noexcept {
  return std::find(failed_.begin(), failed_.end(), id) != failed_.end();
}

/// Which sequences need their window encoded this step; encodes them in one batch.
IZWI_DECL void WhisperCpuExecutor::encode_windows(const StepPlan& plan, StepResult& result) {
  const WhisperConfig& c = model_.config();
  const std::size_t n_audio = c.n_audio_ctx, mel_floats = std::size_t{c.n_mels} * 2 * n_audio;
  to_encode_.clear();
  for (const ScheduledSequence& seq : plan.sequences) {
    if (seq.num_computed_tokens >= n_audio || seq.num_tokens == 0 || pending_.contains(seq.id)) continue;
    if (seq.audio == nullptr) {
      failed_.push_back(seq.id);
      result.failures.push_back({seq.id, "a Whisper request needs audio (build it with make_whisper_request)"});
      continue;
    }
    to_encode_.push_back(&seq);
  }
  if (to_encode_.empty()) return;
  mels_.resize(to_encode_.size() * mel_floats);
  for (std::size_t w = 0; w < to_encode_.size(); ++w) {
    const AudioInput& audio = *to_encode_[w]->audio;
    std::span<const float> mel = audio.features;
    if (mel.size() != mel_floats) {  // not computed ahead (or for another mel count): compute it here
      mel_scratch_ = detail::whisper::window_log_mel(c.n_mels, std::span(audio.samples).first(
                                                                   std::min(audio.samples.size(), whisper_window_samples)));
      mel = mel_scratch_;
    }
    std::copy(mel.begin(), mel.end(), mels_.begin() + static_cast<std::ptrdiff_t>(w * mel_floats));
  }
  encoded_.resize(to_encode_.size() * n_audio * c.d_model);
  model_.encode_batch(ops_, mels_.data(), to_encode_.size(), encoded_.data());
}

/// Step 3's batch: every decoder token of the step (positions from
/// audio_positions() on), with its self- and cross-attention views.
IZWI_DECL void WhisperCpuExecutor::flatten_decoder_rows(const StepPlan& plan, StepResult& result) {
  const std::size_t audio = model_.audio_positions(), n_audio = model_.config().n_audio_ctx;
  tokens_.clear();
  positions_.clear();
  slots_.clear();
  logit_rows_.clear();
  sampling_.clear();
  self_.clear();
  cross_.clear();
  for (const ScheduledSequence& seq : plan.sequences) {
    if (failed(seq.id)) continue;
    const std::size_t end = seq.num_computed_tokens + seq.num_tokens;
    const std::size_t first = std::max(seq.num_computed_tokens, audio);
    if (first >= end) {
      if (seq.samples)
        result.failures.push_back({seq.id, "a Whisper request needs a decoder prompt after its audio placeholders"});
      continue;
    }
    detail::CpuOps::attention_sequence self{first, end - first, seq.block_table, tokens_.size()};
    self.first_visible = audio;
    detail::CpuOps::attention_sequence cross = self;
    cross.first_visible = 0;
    cross.visible_end = n_audio;
    self_.push_back(self);
    cross_.push_back(cross);
    for (std::size_t p = first; p < end; ++p) {
      tokens_.push_back(seq.tokens[p]);
      positions_.push_back(static_cast<std::int64_t>(p - audio));
      slots_.push_back(plan.slot_mapping[seq.slot_offset + (p - seq.num_computed_tokens)]);
    }
    if (seq.samples) {
      logit_rows_.push_back(static_cast<std::uint32_t>(tokens_.size() - 1));
      sampling_.push_back(&seq);
    }
  }
}

/// Step 4 for one sequence: openai-whisper's filters, then the Sampler.
IZWI_DECL void WhisperCpuExecutor::sample(const ScheduledSequence& seq, std::span<float> logits, StepResult& result) {
  const tokenizer::WhisperSpecialTokens& s = model_.special_tokens();
  const std::span<const TokenId> decoder_prompt =
      seq.tokens.subspan(model_.audio_positions(), seq.num_prompt_tokens - model_.audio_positions());
  // The filters see the text after the <|startoftranscript|> sequence, whether
  // the engine generated it or the prompt carries it (a beam of beam_search
  // continues its tokens as a prompt).
  const std::span<const TokenId> decoder_tokens = seq.tokens.subspan(model_.audio_positions());
  const std::span<const TokenId> generated = decoder_tokens.subspan(detail::whisper::sample_begin(decoder_tokens, s));
  if (s.multilingual && decoder_prompt.size() == 1 && decoder_prompt[0] == s.sot && generated.empty())
    return answer_language_probe(seq, logits, result);

  const bool timestamps = std::find(decoder_prompt.begin(), decoder_prompt.end(), s.no_timestamps) == decoder_prompt.end();
  if (config_.checkpoint_suppress_tokens)
    detail::whisper::apply_checkpoint_suppression(logits, model_.generation_config(), generated.empty());
  detail::whisper::apply_decoding_rules(logits, generated, s, space_, timestamps, config_.initial_timestamp);

  sampler_.sample_into(logits, seq, decoder_prompt, generated, eos_token_ids(), result);
}

/// The most probable language token, log P(language | languages), the
/// languages ranked, and <|nospeech|>'s log-probability over the vocabulary.
IZWI_DECL void WhisperCpuExecutor::answer_language_probe(const ScheduledSequence& seq, std::span<const float> logits,
                                                      StepResult& result) {
  const tokenizer::WhisperSpecialTokens& s = model_.special_tokens();
  for (float l : logits)
    if (!std::isfinite(l)) {
      result.failures.push_back({seq.id, std::string(describe(SampleError::non_finite_logits))});
      return;
    }
  const float top = *std::max_element(logits.begin(), logits.end());
  double vocabulary_sum = 0;
  for (float l : logits) vocabulary_sum += std::exp(static_cast<double>(l - top));
  const auto first = static_cast<std::size_t>(s.sot) + 1;
  const std::span<const float> languages = logits.subspan(first, s.num_languages);
  const float best = *std::max_element(languages.begin(), languages.end());
  double language_sum = 0;
  for (float l : languages) language_sum += std::exp(static_cast<double>(l - best));
  const double log_language_sum = std::log(language_sum) + best;

  std::vector<TokenLogprob> ranked(languages.size());
  for (std::size_t i = 0; i < languages.size(); ++i)
    ranked[i] = {static_cast<TokenId>(first + i), static_cast<float>(languages[i] - log_language_sum)};
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.logprob > b.logprob; });
  SequenceOutput out;
  out.id = seq.id;
  out.token = ranked.front().token;
  out.logprob = ranked.front().logprob;
  out.top_logprobs_begin = static_cast<std::uint32_t>(result.top_logprobs.size());
  const std::size_t shown = std::min<std::size_t>(ranked.size(), seq.sampling && seq.sampling->logprobs
                                                                      ? *seq.sampling->logprobs
                                                                      : SamplingParams::max_logprobs);
  result.top_logprobs.insert(result.top_logprobs.end(), ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(shown));
  const float no_speech = static_cast<float>(static_cast<double>(logits[static_cast<std::size_t>(s.no_speech)] - top) -
                                             std::log(vocabulary_sum));
  result.top_logprobs.push_back({s.no_speech, no_speech});
  out.top_logprobs_count = static_cast<std::uint32_t>(result.top_logprobs.size()) - out.top_logprobs_begin;
  result.outputs.push_back(out);
}

}  // namespace izwi
