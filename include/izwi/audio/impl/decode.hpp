#pragma once
// Bodies of izwi/audio/decode.hpp.

#include <sndfile.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <vector>

#include "izwi/audio/decode.hpp"
#include "izwi/audio/detail/container_sniff.hpp"
#include "izwi/audio/detail/riff_check.hpp"
#include "izwi/audio/detail/sndfile_virtual_io.hpp"
#include "izwi/audio/resample.hpp"

namespace izwi::audio {

inline std::string_view to_string(DecodeProblem p) noexcept {
  switch (p) {
    case DecodeProblem::empty_input: return "empty_input";
    case DecodeProblem::not_audio: return "not_audio";
    case DecodeProblem::unsupported_codec: return "unsupported_codec";
    case DecodeProblem::truncated: return "truncated";
    case DecodeProblem::corrupt: return "corrupt";
    case DecodeProblem::invalid_format: return "invalid_format";
    case DecodeProblem::no_samples: return "no_samples";
    case DecodeProblem::too_long: return "too_long";
  }
  return "unknown";
}

namespace detail {

/// Most channels accepted: as many as real recordings carry (7.1.4 = 12,
/// third-order ambisonics = 16); bounds the memory a crafted header can ask
/// for when channels are kept (mono = false).
inline constexpr std::uint32_t max_decode_channels = 16;

struct sndfile_closer {
  void operator()(SNDFILE* f) const noexcept { sf_close(f); }
};
using sndfile_handle = std::unique_ptr<SNDFILE, sndfile_closer>;

inline std::string format_seconds(double s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f", s);
  return buf;
}

/// "12 bytes starting 7b 22 61 75" — enough for a user to see what they sent.
inline std::string describe_bytes(std::span<const std::byte> bytes) {
  std::string out = std::to_string(bytes.size()) + " bytes starting";
  char hex[4];
  for (std::size_t i = 0; i < bytes.size() && i < 8; ++i) {
    std::snprintf(hex, sizeof hex, " %02x", static_cast<unsigned>(bytes[i]));
    out += hex;
  }
  return out;
}

inline std::string container_name(int format) {
  switch (format & SF_FORMAT_TYPEMASK) {
    case SF_FORMAT_WAV: case SF_FORMAT_WAVEX: case SF_FORMAT_RF64: case SF_FORMAT_W64: return "wav";
    case SF_FORMAT_FLAC: return "flac";
    case SF_FORMAT_OGG:
      switch (format & SF_FORMAT_SUBMASK) {
        case SF_FORMAT_VORBIS: return "ogg/vorbis";
        case SF_FORMAT_OPUS: return "ogg/opus";
        default: return "ogg";
      }
    case SF_FORMAT_MPEG:
      return (format & SF_FORMAT_SUBMASK) == SF_FORMAT_MPEG_LAYER_III ? "mp3" : "mpeg";
    case SF_FORMAT_AIFF: return "aiff";
    case SF_FORMAT_AU: return "au";
    case SF_FORMAT_CAF: return "caf";
    default: break;
  }
  SF_FORMAT_INFO info{};
  info.format = format & SF_FORMAT_TYPEMASK;
  if (sf_command(nullptr, SFC_GET_FORMAT_MAJOR, &info, sizeof info) == 0 && info.extension)
    return info.extension;
  return "other";
}

inline std::string encoding_name(int format) {
  switch (format & SF_FORMAT_SUBMASK) {
    case SF_FORMAT_PCM_S8: return "pcm_s8";
    case SF_FORMAT_PCM_U8: return "pcm_u8";
    case SF_FORMAT_PCM_16: return "pcm_16";
    case SF_FORMAT_PCM_24: return "pcm_24";
    case SF_FORMAT_PCM_32: return "pcm_32";
    case SF_FORMAT_FLOAT: return "float";
    case SF_FORMAT_DOUBLE: return "double";
    case SF_FORMAT_ULAW: return "ulaw";
    case SF_FORMAT_ALAW: return "alaw";
    case SF_FORMAT_VORBIS: return "vorbis";
    case SF_FORMAT_OPUS: return "opus";
    case SF_FORMAT_MPEG_LAYER_I: return "mpeg_layer_i";
    case SF_FORMAT_MPEG_LAYER_II: return "mpeg_layer_ii";
    case SF_FORMAT_MPEG_LAYER_III: return "mpeg_layer_iii";
    default: return "other";
  }
}

/// Formats whose header states the exact frame count, so that fewer decoded
/// frames means the stream was cut. MP3 counts are estimates (from a Xing tag
/// or the file size) and Ogg counts come from the last page actually present.
inline bool header_frames_are_exact(int format) {
  switch (format & SF_FORMAT_TYPEMASK) {
    case SF_FORMAT_OGG: case SF_FORMAT_MPEG: return false;
    default: return true;
  }
}

inline std::string container_label(int format) {
  std::string name = container_name(format);
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

[[noreturn]] inline void throw_open_error(std::span<const std::byte> bytes) {
  const int code = sf_error(nullptr);
  const std::string why = sf_strerror(nullptr);
  if (code == SF_ERR_UNRECOGNISED_FORMAT)
    throw DecodeError(DecodeProblem::not_audio,
                       "not an audio file (" + describe_bytes(bytes) + "): libsndfile: " + why);
  if (code == SF_ERR_UNSUPPORTED_ENCODING || why.find("nimplemented") != std::string::npos ||
      why.find("not supported") != std::string::npos ||
      why.find("nsupported") != std::string::npos)
    throw DecodeError(DecodeProblem::unsupported_codec, "unsupported audio encoding: " + why);
  throw DecodeError(DecodeProblem::corrupt, "corrupt audio stream: libsndfile: " + why);
}

/// Refuses channel counts and rates izwi does not accept (a crafted header
/// can claim anything; these bound what it can make izwi allocate).
inline void check_channels_and_rate(long long channels, long long rate) {
  if (channels <= 0 || channels > static_cast<long long>(max_decode_channels))
    throw DecodeError(DecodeProblem::invalid_format,
                       "audio has " + std::to_string(channels) + " channels; izwi accepts 1 to " +
                           std::to_string(max_decode_channels));
  if (rate <= 0 || rate > static_cast<long long>(max_sample_rate))
    throw DecodeError(DecodeProblem::invalid_format,
                       "audio declares a sample rate of " + std::to_string(rate) +
                           " Hz; izwi accepts 1 to " + std::to_string(max_sample_rate));
}

/// The too_long error for a length known before decoding (from a header).
inline void check_declared_seconds(double seconds, const DecodeOptions& options) {
  if (seconds > options.max_duration_seconds)
    throw DecodeError(DecodeProblem::too_long,
                       "audio is " + format_seconds(seconds) + " s long, over the " +
                           format_seconds(options.max_duration_seconds) + " s limit");
}

/// The stream's container, encoding, rate and channels, refusing counts izwi
/// does not accept.
inline DecodeInfo stream_info(const SF_INFO& sf) {
  DecodeInfo info;
  info.format = container_name(sf.format);
  info.encoding = encoding_name(sf.format);
  check_channels_and_rate(sf.channels, sf.samplerate);
  info.sample_rate = static_cast<std::uint32_t>(sf.samplerate);
  info.channels = static_cast<std::uint32_t>(sf.channels);
  return info;
}

/// The frame count the header declares, or 0 when libsndfile cannot know it
/// (SF_COUNT_MAX); refuses an empty or too long stream before reading it.
inline std::uint64_t declared_frames(const SF_INFO& sf, double rate, const DecodeOptions& options) {
  const bool frames_known = sf.frames >= 0 && sf.frames < SF_COUNT_MAX;
  if (!frames_known) return 0;
  if (sf.frames == 0) throw DecodeError(DecodeProblem::no_samples, "the audio stream holds no samples (0 frames)");
  check_declared_seconds(static_cast<double>(sf.frames) / rate, options);
  return static_cast<std::uint64_t>(sf.frames);
}

/// Refuses a block holding NaN or infinity.
inline void check_finite(std::span<const float> block) {
  for (std::size_t i = 0; i < block.size(); ++i)
    if (!std::isfinite(block[i]))
      throw DecodeError(DecodeProblem::corrupt, "corrupt audio stream: the samples contain NaN or infinity");
}

/// After the last block: a read error, no samples at all, or fewer frames
/// than a header that states an exact count.
inline void check_stream_end(SNDFILE* file, const SF_INFO& sf, std::uint64_t total, std::uint64_t expected) {
  const int err = sf_error(file);
  if (err != SF_ERR_NO_ERROR)
    throw DecodeError(DecodeProblem::corrupt, "corrupt " + container_label(sf.format) +
                                                    " stream after " + std::to_string(total) +
                                                    " frames: libsndfile: " + sf_strerror(file));
  if (total == 0)
    throw DecodeError(DecodeProblem::no_samples, "the audio stream holds no samples");
  if (expected != 0 && total < expected && header_frames_are_exact(sf.format))
    throw DecodeError(DecodeProblem::truncated,
                       "truncated " + container_label(sf.format) + " stream: the header declares " +
                           std::to_string(expected) + " frames, only " + std::to_string(total) +
                           " decode");
}

/// Gathers decoded blocks (interleaved float at the source rate) into a
/// DecodedAudio under the options' limits: the duration limit as frames
/// arrive, NaN refused, mono mix and resampling block by block, so memory
/// follows the output (an hour at 16 kHz mono is 230 MB however the upload
/// was recorded). Both decoding paths (libsndfile, FFmpeg) feed one.
class pcm_collector {
 public:
  /// `result.info` must hold the source's sample rate and channels;
  /// `expected_frames` (0 if unknown) only sizes an initial reservation.
  pcm_collector(DecodedAudio& result, const DecodeOptions& options, std::uint64_t expected_frames)
      : result_(result),
        options_(options),
        channels_(result.info.channels),
        out_channels_(options.mono ? 1 : result.info.channels),
        max_frames_(static_cast<std::uint64_t>(std::floor(options.max_duration_seconds * result.info.sample_rate))) {
    const DecodeInfo& info = result.info;
    if (options.target_sample_rate && options.target_sample_rate != info.sample_rate)
      resampler_.emplace(info.sample_rate, options.target_sample_rate, out_channels_);
    if (expected_frames != 0) {
      // A header's count is only a hint: cap what it can make us allocate up
      // front (16 M samples, 64 MB); the vector grows past that as data arrives.
      const std::uint64_t out_frames =
          resampler_ ? resampled_frames(static_cast<std::size_t>(expected_frames), info.sample_rate,
                                        options.target_sample_rate)
                     : expected_frames;
      result.audio.samples.reserve(
          static_cast<std::size_t>(std::min<std::uint64_t>(out_frames * out_channels_, 1u << 24)));
    }
  }

  /// Adds whole frames; throws too_long past the limit, corrupt on NaN.
  void add(std::span<const float> block) {
    const std::uint64_t got = block.size() / channels_;
    if (total_ + got > max_frames_)
      throw DecodeError(DecodeProblem::too_long,
                         "audio is longer than the " + format_seconds(options_.max_duration_seconds) +
                             " s limit (stopped reading at " +
                             format_seconds(static_cast<double>(total_ + got) / result_.info.sample_rate) + " s)");
    total_ += got;
    check_finite(block);
    if (out_channels_ == 1 && channels_ > 1) {
      mixed_.resize(static_cast<std::size_t>(got));
      const float scale = 1.0f / static_cast<float>(channels_);
      for (std::size_t f = 0; f < got; ++f) {
        float sum = 0.0f;
        for (std::uint32_t c = 0; c < channels_; ++c) sum += block[f * channels_ + c];
        mixed_[f] = sum * scale;
      }
      block = mixed_;
    }
    std::vector<float>& out = result_.audio.samples;
    if (resampler_)
      resampler_->push(block, out);
    else
      out.insert(out.end(), block.begin(), block.end());
  }

  /// Frames added so far (at the source rate).
  std::uint64_t frames() const noexcept { return total_; }

  /// Completes the result: frame count, duration, output rate and channels.
  void finish() {
    DecodeInfo& info = result_.info;
    info.frames = total_;
    info.duration_seconds = static_cast<double>(total_) / info.sample_rate;
    result_.audio.channels = out_channels_;
    result_.audio.sample_rate = info.sample_rate;
    if (resampler_) {
      const std::vector<float> tail = resampler_->flush();
      result_.audio.samples.insert(result_.audio.samples.end(), tail.begin(), tail.end());
      result_.audio.sample_rate = options_.target_sample_rate;
    }
  }

 private:
  DecodedAudio& result_;
  const DecodeOptions& options_;
  std::uint32_t channels_;
  std::uint32_t out_channels_;
  std::uint64_t max_frames_;  // the limit; one frame more shows "longer than"
  std::uint64_t total_ = 0;
  std::vector<float> mixed_;
  std::optional<StreamingResampler> resampler_;
};

/// Reads an opened stream into a buffer, enforcing the options' limits.
inline DecodedAudio read_stream(SNDFILE* file, const SF_INFO& sf, const DecodeOptions& options) {
  DecodedAudio result;
  result.info = stream_info(sf);
  const std::uint32_t channels = result.info.channels;
  const std::uint64_t expected = declared_frames(sf, result.info.sample_rate, options);
  pcm_collector collector(result, options, expected);
  constexpr sf_count_t block_frames = 8192;
  std::vector<float> block(static_cast<std::size_t>(block_frames) * channels);
  for (;;) {
    const sf_count_t got = sf_readf_float(file, block.data(), block_frames);
    if (got <= 0) break;
    collector.add(std::span<const float>(block.data(), static_cast<std::size_t>(got) * channels));
  }
  check_stream_end(file, sf, collector.frames(), expected);
  collector.finish();
  return result;
}

/// The FFmpeg path (impl/decode_ffmpeg.hpp) for the containers libsndfile lacks.
inline DecodedAudio decode_with_ffmpeg(std::span<const std::byte> bytes, const av_container& container,
                                const DecodeOptions& options);

inline void check_options(const DecodeOptions& options) {
  if (!(options.max_duration_seconds > 0) || !std::isfinite(options.max_duration_seconds))
    throw izwi::invalid_argument("max_duration_seconds",
                                 "max_duration_seconds must be a positive number of seconds");
  if (options.target_sample_rate > max_sample_rate)
    throw izwi::invalid_argument("target_sample_rate",
                                 "target sample rate " + std::to_string(options.target_sample_rate) +
                                     " Hz is above " + std::to_string(max_sample_rate));
}

}  // namespace detail

inline DecodedAudio decode(std::span<const std::byte> bytes, const DecodeOptions& options) {
  detail::check_options(options);
  if (bytes.empty()) throw DecodeError(DecodeProblem::empty_input, "empty audio body: 0 bytes");
  if (auto shortfall = detail::find_riff_data_shortfall(bytes))
    throw DecodeError(DecodeProblem::truncated,
                       "truncated WAV stream: the data chunk declares " +
                           std::to_string(shortfall->declared) + " bytes, the body holds " +
                           std::to_string(shortfall->present));
  if (auto tag = detail::find_riff_format_tag(bytes); tag && !detail::is_decodable_wav_format_tag(*tag)) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%04x", static_cast<unsigned>(*tag));
    throw DecodeError(DecodeProblem::unsupported_codec,
                       std::string("unsupported audio encoding: WAV format tag ") + hex +
                           " (izwi reads PCM, float, A-law, mu-law, ADPCM, GSM 6.10 and MPEG in WAV)");
  }
  // MP4/M4A, WebM/Matroska, ADTS AAC, MPEG-PS/TS: libsndfile has no reader for them.
  if (auto container = detail::sniff_av_container(bytes))
    return detail::decode_with_ffmpeg(bytes, *container, options);
  detail::memory_source source{bytes};
  SF_INFO sf{};
  detail::sndfile_handle file(sf_open_virtual(detail::memory_source::io(), SFM_READ, &sf, &source));
  if (!file) detail::throw_open_error(bytes);
  return detail::read_stream(file.get(), sf, options);
}

inline DecodedAudio decode(std::string_view bytes, const DecodeOptions& options) {
  return decode(std::as_bytes(std::span<const char>(bytes.data(), bytes.size())), options);
}

inline DecodedAudio decode_file(const std::filesystem::path& path, const DecodeOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw AudioError("cannot open audio file '" + path.string() + "'");
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw AudioError("cannot read audio file '" + path.string() + "'");
  try {
    return decode(std::string_view(bytes.data(), bytes.size()), options);
  } catch (const DecodeError& e) {
    throw DecodeError(e.problem(), path.string() + ": " + e.what());
  }
}

}  // namespace izwi::audio

#include "izwi/audio/impl/decode_ffmpeg.hpp"
