#pragma once
// Qwen3-TTS behind izwi-server's /v1/audio/speech: what EngineModel<E> calls
// (by argument-dependent lookup) when E's model is a Qwen3Tts. Include it
// wherever such an EngineModel is instantiated (the stock loader does).
//
//   describe_speech    the model's speakers, languages and kind, for voice
//                      names, /v1/audio/voices and the errors that list them
//   qwen3_tts_speech_request
//                      SpeechSynthesis → Qwen3TtsRequest → make_qwen3_tts_request:
//                      the input and instructions tokenised as plain text
//                      (special tokens in them are not parsed, so a client
//                      cannot forge the prompt's structure), upstream's
//                      sampling with the request's seed, temperature, top_k
//                      and frame limit; reference audio (Base models) becomes
//                      the x-vector of Qwen3Tts::speaker_embedding, computed
//                      here, on the caller's (preparation) thread, and with
//                      reference_text also the reference codes of
//                      Qwen3Tts::reference_codes: in-context cloning.

#include <string>

#include "izwi/models/qwen3_tts_request.hpp"
#include "izwi/server/any_engine.hpp"

namespace izwi::server {

/// Fills `out` from the model's config.
void describe_speech(const Qwen3Tts& model, SpeechVoices& out);

/// The engine request for `synthesis`; throws izwi::invalid_argument naming
/// the field (an unknown speaker or language, a model without tokenizer,
/// cloning on a model without speaker encoder, reference audio too short).
Request qwen3_tts_speech_request(const Qwen3Tts& model, const SpeechSynthesis& synthesis);

inline void describe_speech(const Qwen3Tts& model, SpeechVoices& out) {
  const Qwen3TtsConfig& c = model.config();
  // llama.cpp's GGUF pair does not say the kind: named speakers make it a CustomVoice.
  out.kind = !c.model_type.empty() ? c.model_type : c.speakers.empty() ? "unknown" : "custom_voice";
  out.speakers.clear();
  for (const auto& [name, id] : c.speakers) out.speakers.push_back(name);
  out.languages.clear();
  for (const auto& [name, id] : c.languages) out.languages.push_back(name);
  out.sample_rate = model.codec().config().output_sample_rate;
  // Cloning runs the speaker encoder (an x-vector), which only Base
  // checkpoints carry.
  if (model.speaker_encoder())
    out.cloning_unavailable.clear();
  else
    out.cloning_unavailable = "voice cloning needs a Base model with its speaker encoder; this one is '" + out.kind + "'";
}

inline Request qwen3_tts_speech_request(const Qwen3Tts& model, const SpeechSynthesis& s) {
  const tokenizer::BpeTokenizer* tokenizer = model.tokenizer();
  if (!tokenizer)
    throw invalid_argument("model", "the model has no tokenizer.json; the server needs one to read the input");
  if (s.reference_audio && !model.speaker_encoder()) {
    SpeechVoices voices;
    describe_speech(model, voices);
    throw invalid_argument("reference_audio", voices.cloning_unavailable);
  }
  if (!s.reference_audio && model.config().speakers.empty() && model.config().model_type == "base")
    throw invalid_argument("voice", "a Base model has no named speakers: it speaks in a voice cloned from "
                                    "reference_audio or a saved voice {\"id\"}");
  tokenizer::EncodeOptions plain;
  plain.parse_special_tokens = false;
  Qwen3TtsRequest r;
  r.text_tokens = tokenizer->encode(s.text, plain);
  if (!s.instructions.empty()) r.instruction_tokens = tokenizer->encode(s.instructions, plain);
  r.language = s.language;
  r.speaker = s.speaker;
  // x-vector cloning, in the non-streaming text mode llama.cpp implements
  // too (the one compared against it); with the reference's transcript,
  // in-context cloning (the x-vector, the reference codes and the transcript),
  // in the streaming text mode upstream's generate_voice_clone defaults to.
  if (s.reference_audio) {
    r.speaker_embedding = model.speaker_embedding(*s.reference_audio, s.reference_sample_rate);
    r.speaker.clear();
    if (!s.reference_text.empty()) {
      if (!model.speech_encoder())
        throw invalid_argument("reference_text",
                               "in-context cloning (reference_text) needs the speech tokenizer's encoder, which this "
                               "model (" + model.description() + ") does not have; leave reference_text out to "
                               "clone by x-vector only");
      r.reference_codes = model.reference_codes(*s.reference_audio, s.reference_sample_rate);
      r.reference_text_tokens = tokenizer->encode(s.reference_text, plain);
      if (r.reference_text_tokens.empty())
        throw invalid_argument("reference_text", "the reference transcript has no tokens");
      r.text_mode = Qwen3TtsTextMode::streaming;
    }
  }
  r.sampling.seed = s.seed;
  if (s.temperature) r.sampling.temperature = r.sampling.predictor_temperature = *s.temperature;
  if (s.top_k) r.sampling.top_k = r.sampling.predictor_top_k = *s.top_k;
  if (s.max_frames) r.sampling.max_frames = *s.max_frames;
  return make_qwen3_tts_request(model, r);
}

}  // namespace izwi::server
