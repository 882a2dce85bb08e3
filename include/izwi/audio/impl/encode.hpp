#pragma once
// Bodies of izwi/audio/encode.hpp.

#include <sndfile.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>
#include <utility>

#include "izwi/audio/detail/mp3_frame.hpp"
#include "izwi/audio/detail/ogg_page.hpp"
#include "izwi/audio/detail/sndfile_virtual_io.hpp"
#include "izwi/audio/encode.hpp"
#include "izwi/audio/impl/encode_aac.hpp"

namespace izwi::audio {

inline std::string_view to_string(AudioFormat f) noexcept {
  switch (f) {
    case AudioFormat::wav: return "wav";
    case AudioFormat::pcm: return "pcm";
    case AudioFormat::flac: return "flac";
    case AudioFormat::opus: return "opus";
    case AudioFormat::mp3: return "mp3";
    case AudioFormat::aac: return "aac";
  }
  return "unknown";
}

inline std::optional<AudioFormat> parse_audio_format(std::string_view name) noexcept {
  for (AudioFormat f : {AudioFormat::wav, AudioFormat::pcm, AudioFormat::flac,
                         AudioFormat::opus, AudioFormat::mp3, AudioFormat::aac})
    if (name == to_string(f)) return f;
  return std::nullopt;
}

inline std::string_view content_type(AudioFormat f) noexcept {
  switch (f) {
    case AudioFormat::wav: return "audio/wav";
    case AudioFormat::pcm: return "audio/pcm";
    case AudioFormat::flac: return "audio/flac";
    case AudioFormat::opus: return "audio/ogg";
    case AudioFormat::mp3: return "audio/mpeg";
    case AudioFormat::aac: return "audio/aac";
  }
  return "application/octet-stream";
}

inline std::uint32_t encoded_sample_rate(AudioFormat format, std::uint32_t input_rate) {
  detail::check_sample_rate(input_rate);
  auto next_supported = [input_rate](std::initializer_list<std::uint32_t> rates) {
    for (std::uint32_t r : rates)
      if (r >= input_rate) return r;
    return *(rates.end() - 1);
  };
  switch (format) {
    case AudioFormat::opus: return next_supported({8000, 12000, 16000, 24000, 48000});
    case AudioFormat::mp3:
      return next_supported({8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000});
    case AudioFormat::aac:
      return next_supported({7350, 8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 64000,
                             88200, 96000});
    default: return input_rate;
  }
}

namespace detail {

struct sndfile_state {
  memory_sink sink;
  SNDFILE* file = nullptr;
  ~sndfile_state() {
    if (file) sf_close(file);
  }
};

inline void append_le(std::vector<std::byte>& out, std::uint32_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<std::byte>((value >> (8 * i)) & 0xFF));
}

/// A 44-byte RIFF/WAVE header for 16-bit PCM. data_bytes = 0xFFFFFFFF marks
/// a stream of unknown length (both size fields then say 0xFFFFFFFF).
inline void append_wav_header(std::vector<std::byte>& out, std::uint32_t rate,
                              std::uint32_t channels, std::uint32_t data_bytes) {
  auto tag = [&out](const char* t) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::byte>(t[i]));
  };
  const bool unknown = data_bytes == 0xFFFFFFFFu;
  tag("RIFF");
  append_le(out, unknown ? 0xFFFFFFFFu : 36u + data_bytes, 4);
  tag("WAVE");
  tag("fmt ");
  append_le(out, 16, 4);                  // fmt chunk size
  append_le(out, 1, 2);                   // WAVE_FORMAT_PCM
  append_le(out, channels, 2);
  append_le(out, rate, 4);
  append_le(out, rate * channels * 2, 4); // byte rate
  append_le(out, channels * 2, 2);        // block align
  append_le(out, 16, 2);                  // bits per sample
  tag("data");
  append_le(out, data_bytes, 4);
}

/// Float → s16, rounding to nearest; clipped, NaN → 0.
inline std::int16_t to_s16(float x) noexcept {
  if (!(x == x)) return 0;
  x = std::clamp(x, -1.0f, 1.0f);
  return static_cast<std::int16_t>(std::lrintf(x * 32767.0f));
}

/// LAME's constant bit rate is chosen through libsndfile's compression level,
/// which maps [0, 1] linearly onto a per-MPEG-version range; these levels
/// land on 128 kb/s (MPEG-1: 320 − c·288), 64 kb/s (MPEG-2: 160 − c·152) and
/// 32 kb/s (MPEG-2.5: 64 − c·56).
inline double mp3_compression_level(std::uint32_t rate) {
  if (rate >= 32000) return (320.0 - 128.0) / 288.0;
  if (rate >= 16000) return (160.0 - 64.0) / 152.0;
  return (64.0 - 32.0) / 56.0;
}

inline constexpr double opus_compression_level = 0.8;

}  // namespace detail

inline StreamingEncoder::StreamingEncoder(AudioFormat format, std::uint32_t sample_rate,
                                            std::uint32_t channels)
    : StreamingEncoder(format, sample_rate, channels, false) {}

inline StreamingEncoder::StreamingEncoder(AudioFormat format, std::uint32_t sample_rate,
                                            std::uint32_t channels, bool whole_file)
    : format_(format),
      input_rate_(sample_rate),
      output_rate_(encoded_sample_rate(format, sample_rate)),
      channels_(channels),
      whole_file_(whole_file) {
  if (channels == 0 || channels > 0xFFFF)
    throw izwi::invalid_argument("channels", "cannot encode " + std::to_string(channels) +
                                                 "-channel audio");
  if ((format == AudioFormat::mp3 || format == AudioFormat::aac) && channels > 2)
    throw EncodeError(std::string(to_string(format)) + " carries mono or stereo only, not " +
                       std::to_string(channels) + " channels");
  if (output_rate_ != input_rate_) resampler_.emplace(input_rate_, output_rate_, channels_);

  switch (format) {
    case AudioFormat::wav:
      detail::append_wav_header(out_, output_rate_, channels_, whole_file_ ? 0u : 0xFFFFFFFFu);
      return;
    case AudioFormat::pcm: return;
    case AudioFormat::aac:
      aac_ = std::make_unique<detail::aac_state>(output_rate_, channels_);
      return;
    default: break;
  }
  SF_INFO info{};
  info.samplerate = static_cast<int>(output_rate_);
  info.channels = static_cast<int>(channels_);
  info.format = format == AudioFormat::flac   ? SF_FORMAT_FLAC | SF_FORMAT_PCM_16
                : format == AudioFormat::opus ? SF_FORMAT_OGG | SF_FORMAT_OPUS
                                               : SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III;
  if (!sf_format_check(&info))
    throw EncodeError("libsndfile cannot write " + std::string(to_string(format)) + " at " +
                       std::to_string(output_rate_) + " Hz with " + std::to_string(channels_) +
                       " channels");
  sndfile_ = std::make_unique<detail::sndfile_state>();
  sndfile_->file = sf_open_virtual(detail::memory_sink::io(), SFM_WRITE, &info, &sndfile_->sink);
  if (!sndfile_->file)
    throw EncodeError("cannot start " + std::string(to_string(format)) + " encoder: libsndfile: " +
                       sf_strerror(nullptr));
  if (format == AudioFormat::opus) {
    // libsndfile maps the level linearly onto Opus bit rates; its default
    // (about 40 kb/s at 24 kHz mono) audibly smears a chirp (waveform
    // correlation 0.94); 0.8 gives about 64 kb/s, transparent for speech.
    double level = detail::opus_compression_level;
    sf_command(sndfile_->file, SFC_SET_COMPRESSION_LEVEL, &level, sizeof level);
  }
  if (format == AudioFormat::mp3) {
    // Mode first: libsndfile re-reads the compression level for the mode.
    int mode = SF_BITRATE_MODE_CONSTANT;
    sf_command(sndfile_->file, SFC_SET_BITRATE_MODE, &mode, sizeof mode);
    double level = detail::mp3_compression_level(output_rate_);
    if (!sf_command(sndfile_->file, SFC_SET_COMPRESSION_LEVEL, &level, sizeof level))
      throw EncodeError("cannot set the mp3 bit rate: libsndfile: " +
                         std::string(sf_strerror(sndfile_->file)));
  }
}

inline StreamingEncoder::~StreamingEncoder() = default;
inline StreamingEncoder::StreamingEncoder(StreamingEncoder&&) noexcept = default;
inline StreamingEncoder& StreamingEncoder::operator=(StreamingEncoder&&) noexcept = default;

inline void StreamingEncoder::write(std::span<const float> samples) {
  if (samples.empty()) return;
  const std::size_t frames = samples.size() / channels_;
  frames_written_ += frames;
  if (format_ == AudioFormat::wav || format_ == AudioFormat::pcm) {
    const std::size_t base = out_.size();
    out_.resize(base + samples.size() * 2);
    std::byte* p = out_.data() + base;
    for (float x : samples) {
      const auto v = static_cast<std::uint16_t>(detail::to_s16(x));
      *p++ = static_cast<std::byte>(v & 0xFF);
      *p++ = static_cast<std::byte>(v >> 8);
    }
    return;
  }
  if (aac_) {
    aac_->write(clipped(samples), out_);
    return;
  }
  sf_count_t wrote = 0;
  if (format_ == AudioFormat::flac) {
    // Quantise here, as for wav and pcm, so all three lossless outputs carry
    // the same 16-bit codes (libsndfile would scale by 32768, not 32767).
    scratch_s16_.resize(samples.size());
    for (std::size_t i = 0; i < samples.size(); ++i) scratch_s16_[i] = detail::to_s16(samples[i]);
    wrote = sf_writef_short(sndfile_->file, scratch_s16_.data(), static_cast<sf_count_t>(frames));
  } else {
    wrote = sf_writef_float(sndfile_->file, clipped(samples).data(), static_cast<sf_count_t>(frames));
  }
  if (wrote != static_cast<sf_count_t>(frames))
    throw EncodeError(std::string(to_string(format_)) + " encoder failed: libsndfile: " +
                       sf_strerror(sndfile_->file));
}

inline std::span<const float> StreamingEncoder::clipped(std::span<const float> samples) {
  scratch_.resize(samples.size());
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const float x = samples[i];
    scratch_[i] = x == x ? std::clamp(x, -1.0f, 1.0f) : 0.0f;
  }
  return scratch_;
}

inline std::vector<std::byte> StreamingEncoder::take_ready(bool at_end) {
  if (whole_file_ && !at_end) return {};
  if (!sndfile_) {
    std::vector<std::byte> out;
    out.swap(out_);
    return out;
  }
  std::vector<std::byte>& pending = sndfile_->sink.pending();
  if (format_ == AudioFormat::mp3 && !mp3_first_frame_checked_ && !whole_file_) {
    // LAME's first frame is a placeholder for the Xing/Info tag that it fills
    // in at close, by seeking back; a stream has sent it by then. Hold bytes
    // until that frame is complete, then leave it out if it is still empty.
    const std::size_t length = detail::mp3_frame_length(pending);
    if (length == 0 && pending.size() < 4 && !at_end) return {};
    if (length != 0 && pending.size() < length && !at_end) return {};
    mp3_first_frame_checked_ = true;
    std::vector<std::byte> out = sndfile_->sink.take();
    if (length != 0 && out.size() >= length) {
      // The header's 4 bytes, then zeros (side info included) if unfilled.
      const bool empty = std::all_of(out.begin() + 4, out.begin() + static_cast<std::ptrdiff_t>(length),
                                     [](std::byte b) { return b == std::byte{0}; });
      if (empty) out.erase(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(length));
    }
    return out;
  }
  if (format_ == AudioFormat::opus && !ogg_audio_started_ && !whole_file_ && !at_end) {
    // The first two pages are headers (OpusHead, OpusTags); a client holding
    // only those holds no decodable audio, so they leave with the first audio page.
    if (detail::count_ogg_pages(pending) < 3) return {};
    ogg_audio_started_ = true;
  }
  return sndfile_->sink.take();
}

inline std::vector<std::byte> StreamingEncoder::push(std::span<const float> samples) {
  if (finished_)
    throw izwi::invalid_argument("samples", "push() after finish() on a streaming encoder");
  detail::check_whole_frames(samples.size(), channels_);
  if (resampler_) {
    std::vector<float> converted = resampler_->push(samples);
    write(converted);
  } else {
    write(samples);
  }
  return take_ready(false);
}

inline std::vector<std::byte> StreamingEncoder::finish() {
  if (finished_) return {};
  finished_ = true;
  if (resampler_) write(resampler_->flush());
  if (format_ == AudioFormat::wav && whole_file_) {
    const std::uint64_t data_bytes = frames_written_ * channels_ * 2;
    if (data_bytes > 0xFFFFFFFFull - 36)
      throw EncodeError("audio is too long for a WAV file (" + std::to_string(data_bytes) +
                         " bytes of samples; WAV holds 4 GiB)");
    std::vector<std::byte> header;
    detail::append_wav_header(header, output_rate_, channels_, static_cast<std::uint32_t>(data_bytes));
    std::copy(header.begin(), header.end(), out_.begin());
  }
  if (aac_) aac_->finish(out_);
  if (sndfile_) {
    // Closing flushes the codec (and, for a whole file, patches headers).
    const int err = sf_close(sndfile_->file);
    sndfile_->file = nullptr;
    if (err)
      throw EncodeError(std::string(to_string(format_)) + " encoder failed at close: libsndfile: " +
                         sf_error_number(err));
  }
  return take_ready(true);
}

inline std::vector<std::byte> encode(std::span<const float> samples, std::uint32_t sample_rate,
                                     std::uint32_t channels, AudioFormat format) {
  detail::check_sample_rate(sample_rate);
  detail::check_whole_frames(samples.size(), channels);
  StreamingEncoder encoder(format, sample_rate, channels, true);
  encoder.push(samples);
  return encoder.finish();
}

inline std::vector<std::byte> encode(const AudioBuffer& audio, AudioFormat format) {
  return encode(audio.samples, audio.sample_rate, audio.channels, format);
}

}  // namespace izwi::audio
