#pragma once
// Encoding audio for /v1/audio/speech: wav, pcm, flac, opus, mp3, aac — whole
// files in memory, or a stream of chunks for a streaming response.
//
// What each format carries (input samples are float; values outside [-1, 1]
// are clipped and NaN becomes 0):
//   wav   RIFF/WAVE, 16-bit PCM, at the input rate.
//   pcm   raw signed 16-bit little-endian interleaved samples, no header, at
//         the input rate (what OpenAI's "pcm" is; the client must know rate and
//         channels, e.g. 24 kHz mono for OpenAI-compatible TTS).
//   flac  FLAC, 16-bit, at the input rate (libsndfile + libFLAC).
// (wav, pcm and flac carry the same 16-bit codes: round(clip(x) * 32767).)
//   opus  Ogg Opus (libsndfile + libopus), about 64 kb/s per 24 kHz mono
//         stream (libsndfile compression level 0.8). Opus takes 8/12/16/24/48 kHz
//         input only: other rates are resampled (soxr) to the next supported
//         rate above, 48 kHz at most.
//   mp3   MPEG layer III, constant bit rate (libsndfile + LAME): 128 kb/s at
//         32-48 kHz, 64 kb/s at 16-24 kHz, 32 kb/s at 8-12 kHz. LAME's rates
//         are 8/11.025/12/16/22.05/24/32/44.1/48 kHz; others are resampled to
//         the next one above. Mono or stereo only.
//   aac   AAC-LC in an ADTS stream (FFmpeg's native "aac" encoder; libsndfile
//         has no AAC): 64 kb/s per channel up to 24 kHz, 96 kb/s per channel
//         above. AAC's rates are 7.35/8/11.025/12/16/22.05/24/32/44.1/48/64/
//         88.2/96 kHz; others are resampled to the next one above. Mono or
//         stereo only. ADTS has no field for the encoder's 1024-sample start
//         delay or the last frame's padding, so a decoder returns up to about
//         2048 samples more than were encoded, the first 1024 near silence
//         (OpenAI's aac responses are ADTS too).
// encoded_sample_rate() says which rate a format will carry.
//
// Streaming (StreamingEncoder): the chunks, concatenated, always form a
// valid file that decodes to the audio pushed so far. Each format needs its
// own answer, because the usual encoders go back to patch a header at the end:
//   wav   the header goes first with its size fields at 0xFFFFFFFF ("until
//         the end of the stream"), as OpenAI and Kokoro-FastAPI do; decoders
//         (libsndfile, ffmpeg, browsers) read to the end.
//   pcm   nothing to patch.
//   flac  libFLAC writes STREAMINFO first with total samples = 0 and MD5 = 0,
//         both "unknown" per the FLAC spec, and at the end seeks back to fill
//         them in. izwi's sink hands bytes out as they are written and drops
//         the late patch, so the streamed file keeps the valid "unknown"
//         values (the one-shot encode() gets the real ones). Decoders then
//         read frames to the end of the stream.
//   opus  Ogg pages are self-delimiting and libsndfile's Opus writer never
//         seeks; pages leave as libogg completes them (about 4 KiB, i.e.
//         about 0.5 s at 64 kb/s). The two header pages are held back until
//         the first audio page exists, so every prefix a client holds decodes.
//   mp3   a sequence of self-contained frames. LAME reserves its first frame
//         for a Xing/Info tag it can only fill at the end; a stream cannot
//         wait for that, so the streaming encoder leaves the empty frame out
//         and uses constant bit rate, whose length decoders estimate exactly
//         from the stream size. (The one-shot encode() keeps the tag, which
//         also makes decoders trim LAME's start/end padding: exact length.)
//   aac   ADTS frames are self-delimiting: each packet leaves, with its own
//         7-byte header, as soon as the encoder produces it (about every
//         1024 samples once its two-frame lookahead is filled).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "izwi/audio/audio_buffer.hpp"
#include "izwi/audio/resample.hpp"

namespace izwi::audio {

/// The response formats of OpenAI's /v1/audio/speech that izwi produces.
enum class AudioFormat : std::uint8_t { wav, pcm, flac, opus, mp3, aac };

/// "wav", "pcm", "flac", "opus", "mp3", "aac" — as OpenAI's response_format spells it.
std::string_view to_string(AudioFormat) noexcept;
/// The inverse of to_string (exact, lower case); nullopt for anything else.
std::optional<AudioFormat> parse_audio_format(std::string_view name) noexcept;
/// HTTP Content-Type: audio/wav, audio/pcm, audio/flac, audio/ogg, audio/mpeg, audio/aac.
std::string_view content_type(AudioFormat) noexcept;
/// The sample rate the encoded output of `format` carries for input at
/// `input_rate` (equal, except opus, mp3 and aac for rates their codecs lack).
std::uint32_t encoded_sample_rate(AudioFormat format, std::uint32_t input_rate);

/// The audio could not be encoded (unsupported channel count for the format,
/// output too large for the container, or the codec library failed).
class EncodeError : public AudioError {
 public:
  using AudioError::AudioError;
};

/// Encodes a whole buffer into a file in memory. Throws
/// izwi::invalid_argument for a sample rate outside [1, max_sample_rate] or
/// zero channels, and EncodeError as above.
std::vector<std::byte> encode(const AudioBuffer& audio, AudioFormat format);
/// The same for interleaved samples.
std::vector<std::byte> encode(std::span<const float> samples, std::uint32_t sample_rate,
                              std::uint32_t channels, AudioFormat format);

namespace detail {
class memory_sink;
struct sndfile_state;
class aac_state;
}  // namespace detail

/// Encodes audio that arrives in pieces (TTS output, chunk by chunk) into
/// chunks of an encoded stream:
///
///   StreamingEncoder enc(AudioFormat::mp3, 24000);
///   for (auto& piece : model_output) send(enc.push(piece));  // may be empty
///   send(enc.finish());
///
/// The concatenation of all returned chunks is a valid file (see the top of
/// this page for how each format stays valid when sent in pieces). A chunk
/// may be empty when the codec is still filling a frame or page. Move-only;
/// one stream per encoder; not thread-safe.
class StreamingEncoder {
 public:
  /// Throws izwi::invalid_argument for a bad rate or channel count, and
  /// EncodeError when the format cannot carry the audio.
  StreamingEncoder(AudioFormat format, std::uint32_t sample_rate, std::uint32_t channels = 1);
  ~StreamingEncoder();
  StreamingEncoder(StreamingEncoder&&) noexcept;
  StreamingEncoder& operator=(StreamingEncoder&&) noexcept;
  StreamingEncoder(const StreamingEncoder&) = delete;
  StreamingEncoder& operator=(const StreamingEncoder&) = delete;

  /// Encodes interleaved samples (whole frames) and returns the bytes that are
  /// final now. Throws izwi::invalid_argument after finish().
  std::vector<std::byte> push(std::span<const float> samples);
  /// Ends the stream and returns its last bytes. Later calls return nothing.
  std::vector<std::byte> finish();

  AudioFormat format() const noexcept { return format_; }
  std::uint32_t input_sample_rate() const noexcept { return input_rate_; }
  /// The rate the encoded stream carries: encoded_sample_rate(format, input rate).
  std::uint32_t output_sample_rate() const noexcept { return output_rate_; }
  std::uint32_t channels() const noexcept { return channels_; }

 private:
  friend std::vector<std::byte> encode(std::span<const float>, std::uint32_t, std::uint32_t,
                                       AudioFormat);
  // whole_file: keep every byte until finish() so that the codec's closing
  // header patches land (the one-shot encode()).
  StreamingEncoder(AudioFormat format, std::uint32_t sample_rate, std::uint32_t channels,
                    bool whole_file);
  void write(std::span<const float> samples);
  // The samples clipped to [-1, 1], NaN as 0, in scratch_ (lossy codecs' input).
  std::span<const float> clipped(std::span<const float> samples);
  std::vector<std::byte> take_ready(bool at_end);

  AudioFormat format_;
  std::uint32_t input_rate_;
  std::uint32_t output_rate_;
  std::uint32_t channels_;
  bool whole_file_ = false;
  bool finished_ = false;
  bool mp3_first_frame_checked_ = false;
  bool ogg_audio_started_ = false;
  std::uint64_t frames_written_ = 0;           // frames sent to the codec (after resampling)
  std::vector<std::byte> out_;                 // wav/pcm bytes not yet returned
  std::vector<float> scratch_;                 // clipped samples on their way to the codec
  std::vector<std::int16_t> scratch_s16_;      // quantised samples on their way to FLAC
  std::optional<StreamingResampler> resampler_;
  std::unique_ptr<detail::sndfile_state> sndfile_;  // flac, opus, mp3
  std::unique_ptr<detail::aac_state> aac_;          // aac (FFmpeg)
};

}  // namespace izwi::audio

#include "izwi/audio/impl/encode.hpp"
