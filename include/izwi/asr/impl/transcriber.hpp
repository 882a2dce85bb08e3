#pragma once
// Bodies of include/izwi/asr/transcriber.hpp. Link zlib (izwi::asr does).

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <utility>

#include "izwi/core/error.hpp"
#include "izwi/engine/beam_search.hpp"

namespace izwi::asr {

inline double compression_ratio(std::string_view text) {
  if (text.empty()) return 0.0;
  uLongf size = compressBound(static_cast<uLong>(text.size()));
  std::vector<Bytef> out(size);
  if (compress2(out.data(), &size, reinterpret_cast<const Bytef*>(text.data()), static_cast<uLong>(text.size()),
                Z_DEFAULT_COMPRESSION) != Z_OK)
    return 0.0;
  return static_cast<double>(text.size()) / static_cast<double>(size);
}

inline std::vector<float> TranscriptionOptions::temperatures() const {
  std::vector<float> out{temperature};
  if (temperature_increment > 0.0f)
    for (int step = 1;; ++step) {
      const float t = temperature + static_cast<float>(step) * temperature_increment;
      if (t > 1.0f + 1e-6f) break;
      out.push_back(std::round(t * 1000.0f) / 1000.0f);
    }
  return out;
}

namespace detail {

inline std::string_view trim_left(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  return s;
}

inline std::string_view trim(std::string_view s) {
  s = trim_left(s);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace detail

/// One decode of a window: its tokens (up to <|endoftext|>, included when
/// it ended there) and each one's log-probability.
struct Transcriber::DecodedWindow {
  std::vector<TokenId> tokens;
  std::vector<float> logprobs;
  float temperature = 0.0f;
};

struct Transcriber::Region {
  std::size_t index = 0;
  std::size_t begin = 0, end = 0;  // samples of the audio
  std::size_t content_frames = 0;
  std::size_t seek = 0;            // mel frames from `begin`
  std::vector<TokenId> all_tokens; // the initial prompt, then every accepted token
  std::size_t prompt_reset_since = 0;
  std::vector<Segment> segments;
  bool complete = false;
  // The window being decoded.
  std::size_t temperature_index = 0;
  double no_speech_prob = 0;
  bool waiting_for_language = false;
  std::size_t windows = 0;
  // The attempt at one temperature: its jobs still out, and a beam search's
  // state or the best_of samples back so far.
  std::size_t outstanding = 0;
  WindowJob attempt;  // the fields every job of the attempt shares
  std::unique_ptr<BeamSearcher> beam;
  std::vector<std::vector<::izwi::TokenLogprob>> round_tops;
  std::vector<DecodedWindow> samples;

  std::size_t window_frames() const noexcept { return std::min(frames_per_window, content_frames - seek); }
};

struct Transcriber::PendingJob {
  WindowJob job;
  Region* region = nullptr;
  std::size_t slot = 0;  // its beam (a beam round) or its sample (best_of)
  std::vector<TokenId> tokens;
  std::vector<float> logprobs;
  std::optional<TokenLogprobs> first;  // the first position's log-probabilities (a probe's, a beam round's)
};

inline Transcriber::Transcriber(const tokenizer::WhisperTokenizer& tokenizer,
                                std::shared_ptr<const std::vector<float>> samples_16k, TranscriptionOptions options,
                                RegionsToCome)
    : tokenizer_(&tokenizer), samples_(std::move(samples_16k)), options_(std::move(options)) {
  if (!samples_) throw invalid_argument("file", "no audio samples");
  const auto& special = tokenizer.special();
  options_.multilingual = options_.multilingual && special.multilingual;
  if (options_.language && special.multilingual && !special.language_token(*options_.language))
    throw invalid_argument("language", "unknown language '" + *options_.language +
                                           "'; valid codes: " + special.language_list());
  if (options_.language || !options_.multilingual) language_ = options_.language.value_or("en");
  if (!language_ && !options_.probe_windows)
    throw invalid_argument("language", "a language must be given when windows are not probed");
  if (options_.beam_size == 0 || options_.beam_size + 1 > SamplingParams::max_logprobs)
    throw invalid_argument("beam_size", "beam_size must be in [1, " + std::to_string(SamplingParams::max_logprobs - 1) +
                                            "], got " + std::to_string(options_.beam_size));
  if (options_.best_of == 0) throw invalid_argument("best_of", "best_of must be at least 1");
  temperatures_ = options_.temperatures();
}

inline Transcriber::Transcriber(const tokenizer::WhisperTokenizer& tokenizer,
                                std::shared_ptr<const std::vector<float>> samples_16k, TranscriptionOptions options,
                                std::vector<audio::AudioChunk> regions)
    : Transcriber(tokenizer, std::move(samples_16k), std::move(options), regions_to_come) {
  if (regions.empty()) regions.push_back({0, samples_->size()});
  add_regions(regions);
  close_regions();
}

inline void Transcriber::add_regions(std::span<const audio::AudioChunk> regions) {
  if (regions_closed_) throw invalid_argument("regions", "no region can be added after close_regions()");
  std::size_t previous_end = regions_.empty() ? 0 : regions_.back()->end;
  for (const audio::AudioChunk& c : regions) {
    if (c.start > c.end || c.end > samples_->size())
      throw invalid_argument("regions", "a region lies outside the audio");
    if (c.start < previous_end) throw invalid_argument("regions", "regions must come in order and not overlap");
    previous_end = c.end;
  }
  for (const audio::AudioChunk& c : regions) {
    auto r = std::make_unique<Region>();
    r->index = regions_.size();
    r->begin = c.start;
    r->end = c.end;
    r->content_frames = c.length() / samples_per_frame;
    r->all_tokens = options_.initial_prompt;
    regions_.push_back(std::move(r));
    start_window(*regions_.back());
  }
}

inline void Transcriber::close_regions() noexcept { regions_closed_ = true; }

inline Transcriber::~Transcriber() = default;

inline std::vector<WindowJob> Transcriber::take_jobs() { return std::exchange(ready_, {}); }

inline std::size_t Transcriber::jobs_in_flight() const noexcept { return in_flight_.size(); }

inline bool Transcriber::done() const noexcept {
  if (failed()) return true;
  return regions_closed_ && std::all_of(regions_.begin(), regions_.end(), [](const auto& r) { return r->complete; });
}

inline void Transcriber::fail(std::string why, FinishReason reason) {
  if (failed()) return;
  error_ = std::move(why);
  failure_reason_ = reason;
  ready_.clear();
}

// A new window at the region's seek: probe it first (probe_windows),
// or decode at once.
inline void Transcriber::start_window(Region& region) {
  if (failed()) return;
  if (region.seek >= region.content_frames) {
    region.complete = true;
    return;
  }
  region.temperature_index = 0;
  region.no_speech_prob = 0;
  if (!options_.probe_windows) {
    submit_decode(region);
    return;
  }
  push_job(region, WindowJob::Kind::language_probe, 0);
  ready_.push_back(in_flight_.back()->job);
}

// A job over the region's current window, in flight from now on; the caller
// fills in the decode fields and hands it out (ready_).
inline WindowJob& Transcriber::push_job(Region& region, WindowJob::Kind kind, std::size_t slot) {
  auto pending = std::make_unique<PendingJob>();
  pending->region = &region;
  pending->slot = slot;
  WindowJob& job = pending->job;
  job.id = next_job_id_++;
  job.kind = kind;
  job.begin = region.begin + region.seek * samples_per_frame;
  job.end = std::min(region.end, job.begin + region.window_frames() * samples_per_frame);
  in_flight_.push_back(std::move(pending));
  return job;
}

// The attempt at the region's current temperature: a beam search at 0
// (beam_size > 1), best_of samples above it, else one decode.
inline void Transcriber::submit_decode(Region& region) {
  if (failed()) return;
  if (!language_) {
    region.waiting_for_language = true;
    return;
  }
  region.waiting_for_language = false;
  WindowJob& shared = region.attempt;
  shared = WindowJob{};
  shared.kind = WindowJob::Kind::decode;
  shared.language = language_;
  shared.translate = options_.translate;
  shared.timestamps = options_.timestamps;
  const auto from = region.all_tokens.begin() + static_cast<std::ptrdiff_t>(region.prompt_reset_since);
  const std::size_t available = static_cast<std::size_t>(region.all_tokens.end() - from);
  const std::size_t keep = std::min(available, max_prompt_tokens);
  shared.previous_tokens.assign(region.all_tokens.end() - static_cast<std::ptrdiff_t>(keep), region.all_tokens.end());
  shared.temperature = temperatures_[region.temperature_index];
  shared.max_tokens = options_.max_tokens_per_window;
  shared.seed = options_.seed;
  if (shared.temperature == 0.0f && options_.beam_size > 1) {
    // The decoder prompt (as whisper_decoder_prompt builds it) plus a beam
    // stay inside the context, as a greedy decode's tokens do.
    const std::size_t previous = std::min(keep, options_.text_context / 2 - 1);
    const std::size_t prompt = (previous ? previous + 1 : 0) + (tokenizer_->special().multilingual ? 3 : 1) +
                               (options_.timestamps ? 0 : 1);
    BeamSearchOptions beam;
    beam.beam_width = options_.beam_size;
    beam.patience = options_.patience;
    beam.length_penalty = options_.length_penalty;
    beam.max_tokens = std::min<std::size_t>(shared.max_tokens, options_.text_context - std::min(prompt, options_.text_context));
    const TokenId eot = tokenizer_->special().eot;
    region.beam = std::make_unique<BeamSearcher>(std::span(&eot, 1), beam);
    submit_beam_round(region);
    return;
  }
  const std::size_t samples = shared.temperature > 0.0f ? options_.best_of : 1;
  region.samples.assign(samples, {});
  region.outstanding = samples;
  for (std::size_t i = 0; i < samples; ++i) {
    WindowJob& job = push_job(region, WindowJob::Kind::decode, i);
    WindowJob shaped = shared;
    shaped.id = job.id;
    shaped.begin = job.begin;
    shaped.end = job.end;
    if (options_.seed) shaped.seed = *options_.seed + i;  // distinct samples, still reproducible
    job = std::move(shaped);
    ready_.push_back(job);
  }
}

// One single-token job per live beam, handed out together.
inline void Transcriber::submit_beam_round(Region& region) {
  const std::vector<BeamHypothesis>& beams = region.beam->beams();
  region.round_tops.assign(beams.size(), {});
  region.outstanding = beams.size();
  for (std::size_t i = 0; i < beams.size(); ++i) {
    WindowJob& job = push_job(region, WindowJob::Kind::decode, i);
    WindowJob shaped = region.attempt;
    shaped.id = job.id;
    shaped.begin = job.begin;
    shaped.end = job.end;
    shaped.continuation = beams[i].tokens;
    shaped.max_tokens = 1;
    shaped.top_logprobs = region.beam->candidates_per_beam();
    job = std::move(shaped);
    ready_.push_back(job);
  }
}

inline void Transcriber::on_chunk(std::uint64_t job_id, const StreamChunk& chunk) {
  auto it = std::find_if(in_flight_.begin(), in_flight_.end(), [&](const auto& p) { return p->job.id == job_id; });
  if (it == in_flight_.end()) return;
  PendingJob& pending = **it;
  if (!pending.first && !chunk.logprobs.empty()) pending.first = chunk.logprobs.front();
  if (pending.job.kind == WindowJob::Kind::decode) {
    pending.tokens.insert(pending.tokens.end(), chunk.token_ids.begin(), chunk.token_ids.end());
    for (const TokenLogprobs& lp : chunk.logprobs) pending.logprobs.push_back(lp.logprob);
  }
  if (!chunk.finished()) return;
  std::unique_ptr<PendingJob> owned = std::move(*it);
  in_flight_.erase(it);
  if (failed()) return;
  const FinishReason reason = *chunk.finish_reason;
  if (reason == FinishReason::abort || reason == FinishReason::error) {
    fail(reason == FinishReason::abort ? std::string("the engine aborted a window of the audio")
                                       : "the engine failed on a window of the audio" +
                                             (chunk.error.empty() ? std::string() : ": " + chunk.error),
         reason);
    return;
  }
  if (owned->job.kind == WindowJob::Kind::language_probe)
    finish_probe(*owned, chunk);
  else
    finish_decode(*owned);
}

inline void Transcriber::finish_probe(PendingJob& job, const StreamChunk&) {
  Region& region = *job.region;
  if (!job.first) {
    fail("the language probe returned no log-probabilities", FinishReason::error);
    return;
  }
  const TokenLogprobs& lp = *job.first;
  const auto& special = tokenizer_->special();
  if (!lp.top.empty() && lp.top.back().token == special.no_speech)
    region.no_speech_prob = std::exp(static_cast<double>(lp.top.back().logprob));
  // The first region's first window decides the language of the whole file.
  if (!language_ && region.index == 0 && region.windows == 0) {
    const std::string_view code = special.language_code(lp.token);
    if (code.empty()) {
      fail("the language probe returned token " + std::to_string(lp.token) + ", not a language", FinishReason::error);
      return;
    }
    language_ = std::string(code);
    language_probability_ = std::exp(static_cast<double>(lp.logprob));
    language_known();
  }
  submit_decode(region);
}

inline void Transcriber::language_known() {
  for (auto& r : regions_)
    if (r->waiting_for_language) submit_decode(*r);
}

inline void Transcriber::finish_decode(PendingJob& job) {
  Region& region = *job.region;
  const TokenId eot = tokenizer_->special().eot;
  if (region.beam) {
    if (job.first) region.round_tops[job.slot] = job.first->top;  // none: the beam cannot grow
    if (--region.outstanding > 0) return;
    region.beam->advance(region.round_tops);
    if (!region.beam->done()) return submit_beam_round(region);
    const BeamSearchResult searched = region.beam->finish();
    region.beam.reset();
    DecodedWindow best{searched.best().tokens, searched.best().logprobs, 0.0f};
    if (searched.best().finished) best.tokens.push_back(eot);
    return judge_window(region, std::move(best));
  }
  region.samples[job.slot] = {std::move(job.tokens), std::move(job.logprobs), job.job.temperature};
  if (--region.outstanding > 0) return;
  // best_of: openai-whisper's MaximumLikelihoodRanker picks among the samples.
  std::size_t chosen = 0;
  double best_score = 0;
  for (std::size_t i = 0; i < region.samples.size(); ++i) {
    const DecodedWindow& d = region.samples[i];
    const std::size_t n = static_cast<std::size_t>(std::find(d.tokens.begin(), d.tokens.end(), eot) - d.tokens.begin());
    const std::size_t counted = std::min(d.logprobs.size(), n + (n < d.tokens.size() ? 1 : 0));
    double sum = 0;
    for (std::size_t k = 0; k < counted; ++k) sum += d.logprobs[k];
    const double score = beam_score(sum, n, options_.length_penalty);
    if (i == 0 || score > best_score) chosen = i, best_score = score;
  }
  DecodedWindow decoded = std::move(region.samples[chosen]);
  region.samples.clear();
  judge_window(region, std::move(decoded));
}

// openai-whisper's decode_with_fallback: the decode stands, or the next temperature is tried.
inline void Transcriber::judge_window(Region& region, DecodedWindow job) {
  ++windows_decoded_;
  const TokenId eot = tokenizer_->special().eot;
  const auto end = std::find(job.tokens.begin(), job.tokens.end(), eot);
  const bool ended = end != job.tokens.end();
  const std::size_t n = static_cast<std::size_t>(end - job.tokens.begin());
  job.tokens.resize(n);
  // openai-whisper: the sum over generated tokens (the end of text included)
  // over the text length + 1.
  double sum = 0;
  const std::size_t counted = std::min(job.logprobs.size(), n + (ended ? 1 : 0));
  for (std::size_t i = 0; i < counted; ++i) sum += job.logprobs[i];
  const double avg_logprob = sum / static_cast<double>(n + 1);
  const std::string text = tokenizer_->decode(job.tokens);
  const double ratio = compression_ratio(detail::trim(text));

  bool needs_fallback = ratio > options_.compression_ratio_threshold || avg_logprob < options_.logprob_threshold;
  if (region.no_speech_prob > options_.no_speech_threshold && avg_logprob < options_.logprob_threshold)
    needs_fallback = false;  // silence: no temperature will make text of it
  if (needs_fallback && region.temperature_index + 1 < temperatures_.size()) {
    ++region.temperature_index;
    submit_decode(region);
    return;
  }
  accept_window(region, job, avg_logprob, ratio);
}

inline void Transcriber::accept_window(Region& region, const DecodedWindow& job, double avg_logprob, double ratio) {
  const auto& special = tokenizer_->special();
  const std::size_t window_frames = region.window_frames();
  const std::size_t seek_before = region.seek;
  const double time_offset =
      static_cast<double>(region.begin + seek_before * samples_per_frame) / static_cast<double>(sample_rate);
  ++region.windows;
  const bool skip = region.no_speech_prob > options_.no_speech_threshold && !(avg_logprob > options_.logprob_threshold);
  if (skip) {
    region.seek += window_frames;
    start_window(region);
    return;
  }
  const std::vector<TokenId>& tokens = job.tokens;
  auto is_ts = [&](std::size_t i) { return special.is_timestamp(tokens[i]); };
  // Timestamps past the window's audio (a model may write up to 30 s into a
  // short last window) are clamped to its end: times outside the file mean nothing.
  const double window_end = time_offset + static_cast<double>(window_frames) / 100.0;
  auto make_segment = [&](std::size_t from, std::size_t to, double start, double end) {
    Segment s;
    s.seek = region.begin / samples_per_frame + seek_before;
    s.start = std::min(start, window_end);
    s.end = std::min(end, window_end);
    s.tokens.assign(tokens.begin() + static_cast<std::ptrdiff_t>(from), tokens.begin() + static_cast<std::ptrdiff_t>(to));
    s.text = tokenizer_->decode(s.tokens);
    s.temperature = job.temperature;
    s.avg_logprob = avg_logprob;
    s.compression_ratio = ratio;
    s.no_speech_prob = region.no_speech_prob;
    for (std::size_t i = from; i < to; ++i)
      if (tokens[i] < special.eot)
        s.text_logprobs.push_back({tokens[i], i < job.logprobs.size() ? job.logprobs[i] : 0.0f});
    return s;
  };
  std::vector<Segment> current;
  std::vector<std::size_t> slices;  // ends of segments: after each pair of consecutive timestamps
  for (std::size_t i = 1; i < tokens.size(); ++i)
    if (is_ts(i - 1) && is_ts(i)) slices.push_back(i);
  const bool single_timestamp_ending = tokens.size() >= 2 && !is_ts(tokens.size() - 2) && is_ts(tokens.size() - 1);
  std::size_t advance = window_frames;
  if (!slices.empty()) {
    if (single_timestamp_ending) slices.push_back(tokens.size());
    std::size_t last = 0;
    for (std::size_t cut : slices) {
      const double start = time_offset + special.timestamp_seconds(tokens[last]);
      const double end = time_offset + special.timestamp_seconds(tokens[cut - 1]);
      current.push_back(make_segment(last, cut, start, end));
      last = cut;
    }
    if (!single_timestamp_ending) {
      // Timestamps are 0.02 s, two mel frames each.
      advance = static_cast<std::size_t>(tokens[last - 1] - special.timestamp_begin) * 2;
    }
  } else {
    double duration = static_cast<double>(window_frames) / 100.0;
    for (std::size_t i = tokens.size(); i-- > 0;)
      if (is_ts(i)) {
        if (tokens[i] != special.timestamp_begin) duration = special.timestamp_seconds(tokens[i]);
        break;
      }
    current.push_back(make_segment(0, tokens.size(), time_offset, time_offset + duration));
  }
  // A window that does not move would be decoded again forever.
  if (advance == 0 || advance > window_frames) advance = window_frames;
  region.seek += advance;
  for (Segment& s : current) {
    if (s.start == s.end || detail::trim(s.text).empty()) {
      s.text.clear();
      s.tokens.clear();
      s.text_logprobs.clear();
    }
    region.all_tokens.insert(region.all_tokens.end(), s.tokens.begin(), s.tokens.end());
    region.segments.push_back(std::move(s));
  }
  if (!options_.condition_on_previous_text || job.temperature > 0.5f)
    region.prompt_reset_since = region.all_tokens.size();
  start_window(region);
}

inline std::optional<TextDelta> Transcriber::take_delta() {
  TextDelta delta;
  while (emitted_region_ < regions_.size()) {
    const Region& r = *regions_[emitted_region_];
    for (; emitted_segment_ < r.segments.size(); ++emitted_segment_) {
      const Segment& s = r.segments[emitted_segment_];
      delta.text += s.text;
      delta.logprobs.insert(delta.logprobs.end(), s.text_logprobs.begin(), s.text_logprobs.end());
    }
    if (!r.complete) break;
    ++emitted_region_;
    emitted_segment_ = 0;
  }
  if (!emitted_any_text_) {
    delta.text = std::string(detail::trim_left(delta.text));
    if (!delta.text.empty()) emitted_any_text_ = true;
  }
  if (delta.text.empty() && delta.logprobs.empty()) return std::nullopt;
  return delta;
}

inline Transcription Transcriber::result() const {
  Transcription out;
  out.language = language_.value_or(options_.language.value_or(""));
  out.language_probability = language_probability_;
  out.duration = static_cast<double>(samples_->size()) / static_cast<double>(sample_rate);
  out.windows_decoded = windows_decoded_;
  std::string text;
  for (const auto& r : regions_)
    for (const Segment& s : r->segments) {
      out.segments.push_back(s);
      out.segments.back().id = out.segments.size() - 1;
      text += s.text;
    }
  out.text = std::string(detail::trim_left(text));
  return out;
}

}  // namespace izwi::asr
