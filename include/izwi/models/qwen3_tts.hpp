#pragma once
// Qwen3-TTS 12 Hz: text to 16 codes per frame (12.5 frames/s) to 24 kHz audio.
//
//   talker      a Qwen3 decoder over codec tokens. A prompt row is the sum of
//               a text row and a codec row: text rows are
//               text_projection(text_embedding[id]) = fc2(SiLU(fc1(e) + b1)) + b2,
//               codec rows are codec_embedding[id]. Its last hidden state
//               (after the final norm) gives codebook 0 through codec_head.
//   predictor   a 5-layer Qwen3 that, per frame, reads
//               [talker hidden, codec_embedding[c₀]] and then its own
//               embeddings of c₁..c₁₄, and gives c₁..c₁₅ through 15 heads
//               (inputs pass small_to_mtp_projection when it is narrower).
//   next frame  the talker's next input is Σ of the 16 codes' embeddings
//               (talker's for c₀, the predictor's for c₁..c₁₅) + tts_pad's text row.
//   codec       Qwen3TtsCodecDecoder (qwen3_tts_codec.hpp): 1920 samples per frame.
//
//   speaker     Base models: Qwen3TtsSpeakerEncoder (qwen3_tts_speaker_encoder.hpp),
//               reference audio → an x-vector that fills the prompt row a
//               CustomVoice speaker's codec row would (voice cloning).
//
// Loads the Hugging Face layout: config.json, model.safetensors (talker.*, speaker_encoder.*),
// speech_tokenizer/{config.json, model.safetensors}, and tokenizer.json when
// present. The weights stay in the mapped file (views), the codec decoder's
// are widened to f32. Errors name the file, the tensor and the problem.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "izwi/core/random.hpp"
#include "izwi/executor/detail/cpu_ops.hpp"
#include "izwi/executor/sampler.hpp"
#include "izwi/io/file_memory.hpp"
#include "izwi/kernels/cpu/matmul.hpp"
#include "izwi/kv_cache/paged.hpp"
#include "izwi/models/qwen3.hpp"
#include "izwi/models/qwen3_tts_codec.hpp"
#include "izwi/models/qwen3_tts_config.hpp"
#include "izwi/models/detail/qwen3_tts_compute.hpp"
#include "izwi/models/qwen3_tts_speaker_encoder.hpp"
#include "izwi/models/qwen3_tts_speech_encoder.hpp"
#include "izwi/tokenizer/bpe_tokenizer.hpp"

namespace izwi {

struct Qwen3TtsTalkerWeights {
  /// From llama.cpp's GGUF: text_projection already applied to every text row
  /// ([text_vocab][hidden], its token_embd); the text_* fields below are then empty.
  std::optional<kernels::cpu::WeightMatrix> folded_text_embedding;
  kernels::cpu::WeightMatrix text_embedding;  ///< [text_vocab][text_hidden]
  kernels::cpu::WeightMatrix text_fc1;        ///< [text_hidden][text_hidden]
  kernels::cpu::WeightMatrix text_fc2;        ///< [hidden][text_hidden]
  std::vector<float> text_fc1_bias, text_fc2_bias;
  kernels::cpu::WeightMatrix codec_embedding;  ///< [codec vocab][hidden]
  kernels::cpu::WeightMatrix codec_head;       ///< [codec vocab][hidden]
  std::vector<float> final_norm;
  std::vector<Qwen3LayerWeights> layers;
};

struct Qwen3TtsPredictorWeights {
  /// Embeddings of codebooks 1..15 ([codebook][talker hidden] each).
  std::vector<kernels::cpu::WeightMatrix> codec_embeddings;
  /// Heads of codebooks 1..15 ([codebook][predictor hidden] each).
  std::vector<kernels::cpu::WeightMatrix> heads;
  /// small_to_mtp_projection ([predictor hidden][talker hidden]); absent when the widths agree.
  std::optional<kernels::cpu::WeightMatrix> projection;
  std::vector<float> projection_bias;
  std::vector<float> final_norm;
  std::vector<Qwen3LayerWeights> layers;
};

struct Qwen3TtsLoadOptions {
  /// Load tokenizer.json when the directory has one.
  bool load_tokenizer = true;
  /// The codec decoder's precision (Qwen3TtsCodecPrecision: bf16 where the CPU has AMX-BF16 or AVX512_BF16, else f32).
  Qwen3TtsCodecPrecision codec_precision = Qwen3TtsCodecPrecision::f32;
  /// The talker's and code predictor's checkpoint read into huge-page memory
  /// or mapped (Qwen3LoadOptions::weights_memory; the codec decoder copies
  /// its weights into its own layout either way).
  io::FileMemory weights_memory = io::FileMemory::read;
};

class Qwen3Tts {
 public:
  /// Loads a Hugging Face Qwen3-TTS directory (see the top of this file).
  static Qwen3Tts load(const std::filesystem::path& dir, Qwen3TtsLoadOptions options = {});
  /// Loads llama.cpp's GGUF pair (the talker and the mmproj its converter
  /// writes; tokenizer.json beside the talker when present). Its speaker
  /// encoder (projector qwen3tts_spkenc) is loaded when the mmproj has one;
  /// llama.cpp requires one in every mmproj, so a CustomVoice pair written by
  /// izwi-qwen3-tts-to-gguf carries a random one. spk_is_dialect is not in the pair.
  static Qwen3Tts load_gguf(const std::filesystem::path& talker_gguf, const std::filesystem::path& mmproj_gguf,
                            Qwen3TtsLoadOptions options = {});

  const Qwen3TtsConfig& config() const noexcept { return config_; }
  const Qwen3TtsTalkerWeights& talker() const noexcept { return talker_; }
  const Qwen3TtsPredictorWeights& predictor() const noexcept { return predictor_; }
  const Qwen3TtsCodecDecoder& codec() const noexcept { return *codec_; }
  /// The speaker encoder (Base models), or null.
  const Qwen3TtsSpeakerEncoder* speaker_encoder() const noexcept { return speaker_encoder_.get(); }
  /// The x-vector of mono reference audio `pcm` at `sample_rate` (resampled to
  /// the encoder's 24 kHz with soxr): talker-hidden floats, for
  /// Qwen3TtsRequest::speaker_embedding. Throws izwi::invalid_argument
  /// ("reference_audio") when the model has no speaker encoder (only Base
  /// checkpoints have one) or the audio is too short or not finite.
  std::vector<float> speaker_embedding(std::span<const float> pcm, std::uint32_t sample_rate) const;
  /// The same on the caller's thread pool.
  std::vector<float> speaker_embedding(std::span<const float> pcm, std::uint32_t sample_rate,
                                       detail::ThreadPool& pool) const;
  /// The speech tokenizer's encoder (Base models whose speech_tokenizer/config.json
  /// has encoder_config), or null.
  const Qwen3TtsSpeechEncoder* speech_encoder() const noexcept { return speech_encoder_.get(); }
  /// The reference codes ([frames][num_code_groups]) of mono reference audio
  /// `pcm` at `sample_rate`, for Qwen3TtsRequest::reference_codes (in-context
  /// cloning). Throws izwi::invalid_argument ("reference_audio") when the model
  /// has no speech encoder, or the audio is empty or not finite.
  std::vector<std::int32_t> reference_codes(std::span<const float> pcm, std::uint32_t sample_rate,
                                            detail::ThreadPool& pool) const;
  std::vector<std::int32_t> reference_codes(std::span<const float> pcm, std::uint32_t sample_rate) const;
  /// The checkpoint's tokenizer, when it has one.
  const tokenizer::BpeTokenizer* tokenizer() const noexcept { return tokenizer_.get(); }
  /// Where the weights came from, for logs.
  const std::string& description() const noexcept { return description_; }

 private:
  Qwen3Tts() = default;
  Qwen3TtsConfig config_;
  Qwen3TtsTalkerWeights talker_;
  Qwen3TtsPredictorWeights predictor_;
  std::shared_ptr<const Qwen3TtsCodecDecoder> codec_;
  std::shared_ptr<const Qwen3TtsSpeakerEncoder> speaker_encoder_;
  std::shared_ptr<const Qwen3TtsSpeechEncoder> speech_encoder_;
  std::shared_ptr<const void> weights_owner_;  // the mapped model.safetensors the views point into
  std::shared_ptr<const tokenizer::BpeTokenizer> tokenizer_;
  std::string description_;
};


/// One talker prompt row: text_projection(text_embedding[text]) +
/// codec_embedding[codec]; -1 leaves that half out.
struct Qwen3TtsPromptRow {
  TokenId text = -1;
  TokenId codec = -1;
  friend bool operator==(const Qwen3TtsPromptRow&, const Qwen3TtsPromptRow&) = default;
};

/// How the text enters the talker (upstream's non_streaming_mode).
enum class Qwen3TtsTextMode {
  /// All text in the prompt; every frame adds tts_pad (CustomVoice and
  /// VoiceDesign default to it; llama.cpp implements only this).
  non_streaming,
  /// Only the first text token in the prompt; frame k adds text token k + 1,
  /// then tts_eos, then tts_pad (upstream's default for voice cloning).
  streaming,
};

/// A talker prompt: its rows, and the text rows the generated frames add in order.
struct Qwen3TtsPrompt {
  std::vector<Qwen3TtsPromptRow> rows;
  /// The row a cloned voice's x-vector is added to (its codec half is absent
  /// in `rows`); empty without one.
  std::optional<std::size_t> speaker_embedding_row;
  /// Text ids frame k adds (its text_projection row) while k < size(); tts_pad after.
  std::vector<TokenId> trailing_text;
  /// In-context cloning: the row of the reference's frame 0; frame f is at
  /// row reference_frame_row + f (codec half absent in `rows`: the caller adds
  /// the frame's 16 code embeddings there, as for a generated frame).
  std::optional<std::size_t> reference_frame_row;
  std::size_t reference_frames = 0;
};

/// The talker prompt of upstream's generate():
///
///   [<|im_start|> user \n instruction <|im_end|> \n]     (text rows; VoiceDesign / instruct)
///   <|im_start|> assistant \n                          (text rows)
///   tts_pad + think, tts_pad + think_bos, tts_pad + language, tts_pad + think_eos
///       (language "auto": nothink, think_bos, think_eos)
///   [tts_pad + speaker]                                (CustomVoice speaker, or a
///                                                       cloned voice's x-vector)
///   tts_bos + codec_pad
///   non-streaming: text[i] + codec_pad for every text token, tts_eos + codec_pad,
///                  tts_pad + codec_bos (the last prefill row); frames add tts_pad
///   streaming:     text[0] + codec_bos; frames add text[1..], tts_eos, then tts_pad
///
/// `text` and `instruction` are tokenised text alone (no chat markers). A
/// speaker with a dialect speaks it when the language is "chinese" or "auto".
/// With `speaker_embedding` the speaker row is (tts_pad, no codec) and its
/// index is speaker_embedding_row: the caller adds the x-vector there, as
/// upstream's x-vector-only cloning does. Unknown languages or speakers, a
/// speaker together with an embedding, or empty text in streaming mode throw
/// izwi::invalid_argument (unknown names list the known ones).
Qwen3TtsPrompt qwen3_tts_prompt(const Qwen3TtsConfig& config, std::span<const TokenId> text,
                                std::string_view language = "auto", std::string_view speaker = "",
                                std::span<const TokenId> instruction = {},
                                Qwen3TtsTextMode mode = Qwen3TtsTextMode::non_streaming,
                                bool speaker_embedding = false);

/// The talker prompt of upstream's in-context cloning (generate() with
/// icl_mode, generate_icl_prompt): the head of qwen3_tts_prompt with the
/// x-vector row (always present: upstream clones in context with the
/// x-vector too) up to tts_bos + codec_pad, then, with
///   T = reference_text ++ text ++ [tts_eos]     (text rows)
///   C = [codec_bos, reference frame 0 .. F-1]   (codec rows; a frame row is Σ of its 16 code embeddings)
///   non-streaming: T[i] + codec_pad for each i, then tts_pad + C[j] for each j;
///                  frames add tts_pad
///   streaming:     T[j] + C[j] for j < |C| (tts_pad where T has run out);
///                  frames add T[|C|..] (ending with tts_eos), then tts_pad
/// The last prompt row is the last reference frame's, so the talker goes on
/// from the reference's audio. `reference_text` is the transcript of the
/// reference audio, tokenised alone; `reference_frames` its frames of codes.
/// Throws izwi::invalid_argument for empty text ("input"), empty reference
/// text ("reference_text"), no reference frames ("reference_audio") and what
/// qwen3_tts_prompt refuses.
Qwen3TtsPrompt qwen3_tts_icl_prompt(const Qwen3TtsConfig& config, std::span<const TokenId> text,
                                    std::span<const TokenId> reference_text, std::size_t reference_frames,
                                    std::string_view language = "auto", std::span<const TokenId> instruction = {},
                                    Qwen3TtsTextMode mode = Qwen3TtsTextMode::streaming);

/// Sampling as upstream's generate() defaults it. temperature 0 is greedy.
struct Qwen3TtsSampling {
  float temperature = 0.9f;
  std::int32_t top_k = 50;
  float top_p = 1.0f;
  /// Over the codebook-0 codes generated so far (HF's RepetitionPenaltyLogitsProcessor).
  float repetition_penalty = 1.05f;
  /// Codec EOS is masked until this many frames exist.
  std::uint32_t min_frames = 2;
  std::uint32_t max_frames = 4096;
  float predictor_temperature = 0.9f;
  std::int32_t predictor_top_k = 50;
  float predictor_top_p = 1.0f;
  /// Seeds the request's own generator: the same seed gives the same codes
  /// whatever else is generated alongside.
  std::uint64_t seed = 0;

  /// Argmax everywhere, no repetition penalty (llama-tts --top-k 1 --temp 0 --repeat-penalty 1).
  static Qwen3TtsSampling greedy() {
    Qwen3TtsSampling s;
    s.temperature = s.predictor_temperature = 0.0f;
    s.repetition_penalty = 1.0f;
    return s;
  }
};

struct Qwen3TtsRequest {
  std::vector<TokenId> text_tokens;
  std::string language = "auto";
  std::string speaker;
  /// VoiceDesign's voice description or CustomVoice's style instruction, tokenised (empty: none).
  std::vector<TokenId> instruction_tokens;
  Qwen3TtsTextMode text_mode = Qwen3TtsTextMode::non_streaming;
  Qwen3TtsSampling sampling;
  /// A cloned voice: the x-vector of Qwen3Tts::speaker_embedding (talker
  /// hidden floats), spoken instead of a named speaker. Empty: none.
  std::vector<float> speaker_embedding;
  /// In-context cloning (with speaker_embedding, as upstream): the reference
  /// audio's codes ([frames][num_code_groups], Qwen3Tts::reference_codes) and
  /// its transcript, tokenised. Empty codes: x-vector cloning or none. The
  /// generated codes continue the reference; they do not include it.
  std::vector<std::int32_t> reference_codes;
  std::vector<TokenId> reference_text_tokens;
};

struct Qwen3TtsCodes {
  /// [frames][num_code_groups] codes, codebook 0 first in each frame.
  std::vector<std::int32_t> codes;
  std::size_t frames = 0;
  /// The talker chose codec EOS (false: max_frames ran out).
  bool finished_by_eos = false;
};

/// Runs the talker and the code predictor on the CPU (CpuOps, paged KV
/// caches of its own) for a batch of requests: each step one talker forward
/// pass for every request still speaking, then the 15 predictor steps batched
/// across them. The model side's own loop, outside the engine (which runs
/// the same arithmetic through Qwen3TtsCpuExecutor): tests and tools.
class Qwen3TtsGenerator {
 public:
  Qwen3TtsGenerator(const Qwen3Tts& model, detail::ThreadPool& pool) : compute_(model, pool) {}

  /// Generates every request to its end (EOS or max_frames). Bad requests
  /// (unknown language or speaker, a text id outside the vocabulary, a
  /// speaker_embedding of the wrong width) throw izwi::invalid_argument
  /// before anything runs.
  std::vector<Qwen3TtsCodes> generate(std::span<const Qwen3TtsRequest> requests);

  /// Codebook 0 from a row of the talker's logits (modified in place):
  /// control ids other than EOS suppressed, then the sampler with the
  /// repetition penalty over `previous`, EOS masked below min_frames.
  static TokenId sample_first_code(const Qwen3TtsConfig& config, std::span<float> logits,
                                   std::span<const TokenId> previous, const Qwen3TtsSampling& sampling,
                                   SequenceRng& rng, Sampler& sampler);

 private:
  struct Active;
  void embed_prompts(std::span<Active* const> active, std::vector<float>& x);
  void talker_forward(std::span<Active* const> active, const std::vector<float>& x, PagedKVCache<>& kv,
                      std::vector<float>& logits);
  void predict_codes(std::span<Active* const> active);
  void next_inputs(std::span<Active* const> active, std::vector<float>& x);

  detail::Qwen3TtsCompute compute_;
  Sampler sampler_;
  std::vector<TokenId> placeholder_;   // token ids the KV cache's bookkeeping asks for (prefix caching is off)
};

}  // namespace izwi

#include "izwi/models/impl/qwen3_tts_compute.hpp"
#if !defined(IZWI_SEPARATE_COMPILATION)
#include "izwi/models/impl/qwen3_tts_load.ipp"
#include "izwi/models/impl/qwen3_tts_gguf.ipp"
#include "izwi/models/impl/qwen3_tts_compute.ipp"
#include "izwi/models/impl/qwen3_tts.ipp"
#endif
