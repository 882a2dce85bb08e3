#pragma once
// Decoding uploaded audio: a request body (or a file) in any common format →
// float PCM, mixed to mono on request, optionally resampled.
//
// Formats, through libsndfile (Debian 12 ships 1.2.0, built with libFLAC,
// libvorbis, libopus, mpg123 and LAME):
//   WAV (PCM 8/16/24/32-bit, 32/64-bit float, A-law, µ-law; also WAVEX, RF64),
//   FLAC, Ogg Vorbis, Ogg Opus, MP3 (MPEG-1/2/2.5 layer III; also I/II),
//   and libsndfile's other containers (AIFF, AU, CAF, W64, ...).
// and, through FFmpeg's libavformat/libavcodec (Debian 12: 5.1), the
// containers libsndfile has no reader for:
//   MP4/M4A/MOV (AAC, ALAC, MP3, ...; fragmented MP4 too), WebM/Matroska
//   (Opus, Vorbis, ...), ADTS AAC streams (.aac), MPEG program and transport
//   streams (.mpeg/.mpg/.ts: MP2, MP3, AAC).
// Together: every upload format OpenAI's transcription API accepts (flac,
// mp3, mp4, mpeg, mpga, m4a, ogg, wav, webm). The container is detected from
// the bytes, never from a file name; FFmpeg reads the body in memory and may
// not open any other file or URL (MP4 data references are refused).
//
// Bad input never crashes, hangs or allocates without bound; it throws
// DecodeError, whose problem() says which of these it was:
//   empty_input       "empty audio body: 0 bytes"
//   not_audio         "not an audio file (12 bytes starting 7b 22 61 ...): ..."
//   unsupported_codec "unsupported audio encoding: ..."
//   truncated         "truncated WAV stream: the data chunk declares ... bytes"
//                     "truncated FLAC stream: the header declares N frames, M decode"
//                     "truncated MP4 stream: the 'mdat' box declares N bytes, the body holds M"
//                     "truncated M4A file: the 'moov' box (the index) is missing (...)"
//                     "truncated WEBM stream: the Segment declares N bytes, ..."
//                     "truncated AAC stream: an ADTS frame declares N bytes, ..."
//   corrupt           "corrupt audio stream: ..." (decoder error, NaN samples, ...)
//   invalid_format    "audio has 0 channels" / "sample rate 0 Hz ..."
//   no_samples        "the audio stream holds no samples"
//   too_long          "audio is 7200.0 s long, over the 3600 s limit"
// The duration limit is checked against the header's frame count (or the
// MP4/WebM container's stated duration) before any sample buffer is
// allocated, and, for streams whose length is unknown (FLAC without a frame
// count, as streamed FLAC has; ADTS; live-recorded WebM), enforced while
// reading: decoding stops at the first block past the limit. Memory is thus
// bounded by max_duration_seconds × rate × channels × 4 bytes, where rate is
// target_sample_rate when set (resampling happens block by block as the
// stream is read) and channels is 1 when mono (the default); sources are
// limited to 16 channels and 768 kHz.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

#include "izwi/audio/audio_buffer.hpp"

namespace izwi::audio {

/// What was wrong with an input that could not be decoded.
enum class DecodeProblem : std::uint8_t {
  empty_input,
  not_audio,
  unsupported_codec,
  truncated,
  corrupt,
  invalid_format,
  no_samples,
  too_long,
};

/// "empty_input", "not_audio", ... (the enumerator's name).
std::string_view to_string(DecodeProblem) noexcept;

/// The input could not be decoded. The message names the problem; problem()
/// classifies it (a server answers 400 for all of them, 413 for too_long).
class DecodeError : public AudioError {
 public:
  DecodeError(DecodeProblem problem, const std::string& message)
      : AudioError(message), problem_(problem) {}
  DecodeProblem problem() const noexcept { return problem_; }

 private:
  DecodeProblem problem_;
};

struct DecodeOptions {
  /// Mix all channels to one (their average). Speech models want mono.
  bool mono = true;
  /// Longest audio accepted, in seconds of source audio; longer input throws
  /// DecodeError(too_long). Must be > 0. The default is one hour.
  double max_duration_seconds = 3600.0;
  /// Resample to this rate (Hz) after decoding; 0 keeps the source rate.
  std::uint32_t target_sample_rate = 0;
};

/// What the source was, as found in its header and stream.
struct DecodeInfo {
  std::string format;            ///< "wav", "flac", "ogg/vorbis", "ogg/opus", "mp3", ...; through
                                 ///< FFmpeg "mp4", "m4a", "mov", "webm", "matroska", "aac", "mpeg", "mpegts"
  std::string encoding;          ///< "pcm_16", "pcm_24", "float", "vorbis", "opus", "mpeg_layer_iii", ...;
                                 ///< through FFmpeg its codec name: "aac", "alac", "opus", "vorbis", "mp2", ...
  std::uint32_t sample_rate = 0; ///< source rate, Hz
  std::uint32_t channels = 0;    ///< source channels
  std::uint64_t frames = 0;      ///< frames decoded (per channel)
  double duration_seconds = 0;   ///< frames / sample_rate
};

struct DecodedAudio {
  AudioBuffer audio;  ///< mono when options.mono; at target_sample_rate when set
  DecodeInfo info;    ///< the source's properties
};

/// Decodes a whole file held in memory (an upload's body).
DecodedAudio decode(std::span<const std::byte> bytes, const DecodeOptions& options = {});
/// The same for a body held as characters (e.g. a multipart field).
DecodedAudio decode(std::string_view bytes, const DecodeOptions& options = {});
/// Reads a whole file into memory and decodes it; DecodeError messages are
/// prefixed with the path. Throws AudioError when the file cannot be read.
DecodedAudio decode_file(const std::filesystem::path& path, const DecodeOptions& options = {});

}  // namespace izwi::audio

#include "izwi/audio/impl/decode.hpp"
