#pragma once
// Qwen3-TTS speech requests for the engine (Qwen3TtsCpuExecutor).
//
//   izwi::Qwen3TtsRequest r{.text_tokens = tokenizer.encode("Hello."), .speaker = "ryan"};
//   auto out = engine.generate(izwi::make_qwen3_tts_request(engine.executor().model(), r));
//   // out.audio: 24 kHz mono float; out.token_ids: each frame's first code
//
// A speech request is one talker sequence. Its prompt tokens are the prompt
// rows of qwen3_tts_prompt, each (text, codec) pair packed into one id above
// the codec vocabulary, so the scheduler, the token budget and the prefix
// cache see an ordinary token sequence; its generated tokens are each frame's
// first code (codebook 0), and the executor keeps the other 15 codes.
// SpeechConditioning carries the streaming-text rows, the code predictor's
// sampling and the audio windows.

#include <cstddef>
#include <cstdint>

#include "izwi/core/request.hpp"
#include "izwi/models/qwen3_tts.hpp"

namespace izwi {

/// How a request's audio is cut into streamed pieces (see SpeechConditioning).
struct Qwen3TtsStreaming {
  std::uint32_t first_window_frames = 2;
  std::uint32_t window_frames = 8;
};

/// Token ids of a Qwen3-TTS sequence: [0, codec vocab) are generated codes;
/// a prompt row (text, codec), either half -1 for absent, is
/// codec_vocab + (text + 1) · (codec_vocab + 1) + (codec + 1).
TokenId qwen3_tts_pack_row(const Qwen3TtsConfig& config, Qwen3TtsPromptRow row) noexcept;
Qwen3TtsPromptRow qwen3_tts_unpack_row(const Qwen3TtsConfig& config, TokenId id) noexcept;
/// Every valid id of a Qwen3-TTS sequence is below this.
std::size_t qwen3_tts_token_space(const Qwen3TtsConfig& config) noexcept;

/// The engine request for `r`: Task::tts, the packed prompt, SamplingParams
/// from r.sampling (temperature, top_k, top_p, repetition_penalty, seed;
/// max_tokens = max_frames, min_tokens = min_frames) and SpeechConditioning
/// (trailing text, the predictor's sampling, the windows). The voice is the
/// speaker's name; a stochastic request's seed salts its prefix-cache keys,
/// so only requests that would generate the same frames share blocks.
/// A cloned voice (r.speaker_embedding) becomes the request's AudioInput:
/// features = the x-vector, placeholder_offset = its prompt row
/// (Qwen3TtsPrompt::speaker_embedding_row), placeholder_length 1,
/// content_hash = the x-vector's hash (no samples); the packed token of that
/// row is (tts_pad, no codec half), and the executor adds `features` to it.
/// Throws izwi::invalid_argument naming the field for an unknown language or
/// speaker, text outside the vocabulary, max_frames 0, empty text, or a
/// speaker embedding that is not talker-hidden finite floats.
Request make_qwen3_tts_request(const Qwen3Tts& model, const Qwen3TtsRequest& r, Qwen3TtsStreaming streaming = {});

}  // namespace izwi

#if !defined(IZWI_SEPARATE_COMPILATION)
#include "izwi/models/impl/qwen3_tts_request.ipp"
#endif
