#pragma once
// Test fixtures made at test time: mono PCM encoded and muxed by FFmpeg's own
// encoders and muxers (AAC, ALAC, Opus, Vorbis, MP2 into MP4/M4A, WebM, ADTS,
// MPEG-PS), so no binary file is committed and the files come from the same
// libraries real clients use (browsers' MediaRecorder writes WebM/Opus or
// fragmented MP4/AAC; iPhones M4A/AAC). This code shares nothing with izwi's
// decoder but the FFmpeg libraries themselves.

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <libavutil/opt.h>
}

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <utility>
#include <string>
#include <vector>

namespace izwi::audio::test {

struct mux_spec {
  const char* muxer;     ///< FFmpeg muxer: "ipod", "mp4", "webm", "adts", "mpeg", "matroska"
  const char* encoder;   ///< FFmpeg encoder: "aac", "alac", "libopus", "libvorbis", "mp2"
  bool seekable = true;  ///< false: written as to a pipe (live WebM: unknown sizes, no duration)
  const char* muxer_options = "";  ///< e.g. "movflags=frag_keyframe+empty_moov"
  std::int64_t bit_rate = 0;       ///< 0: the encoder's default
};

// FFmpeg 7 (libavformat 61) made the write callback's buffer const.
#if LIBAVFORMAT_VERSION_MAJOR >= 61
using av_write_buffer = const std::uint8_t*;
#else
using av_write_buffer = std::uint8_t*;
#endif

/// A growable in-memory file for the muxer (seekable or not).
struct av_memory_writer {
  std::vector<std::byte> bytes;
  std::size_t position = 0;

  static int write(void* opaque, av_write_buffer data, int size) {
    auto& self = *static_cast<av_memory_writer*>(opaque);
    if (self.position + static_cast<std::size_t>(size) > self.bytes.size())
      self.bytes.resize(self.position + static_cast<std::size_t>(size));
    std::memcpy(self.bytes.data() + self.position, data, static_cast<std::size_t>(size));
    self.position += static_cast<std::size_t>(size);
    return size;
  }
  static std::int64_t seek(void* opaque, std::int64_t offset, int whence) {
    auto& self = *static_cast<av_memory_writer*>(opaque);
    whence &= ~AVSEEK_FORCE;
    if (whence == AVSEEK_SIZE) return static_cast<std::int64_t>(self.bytes.size());
    const std::int64_t base = whence == SEEK_SET ? 0
                              : whence == SEEK_CUR ? static_cast<std::int64_t>(self.position)
                                                   : static_cast<std::int64_t>(self.bytes.size());
    if (base + offset < 0) return -1;
    self.position = static_cast<std::size_t>(base + offset);
    return base + offset;
  }
};

inline void av_check(int code, const char* what) {
  if (code < 0) {
    char text[AV_ERROR_MAX_STRING_SIZE] = {};
    av_strerror(code, text, sizeof text);
    throw std::runtime_error(std::string("FFmpeg fixture: ") + what + ": " + text);
  }
}

/// The first of the formats this helper writes that `codec` accepts.
inline AVSampleFormat pick_sample_format(const AVCodec* codec) {
  for (AVSampleFormat want : {AV_SAMPLE_FMT_FLTP, AV_SAMPLE_FMT_FLT, AV_SAMPLE_FMT_S16P, AV_SAMPLE_FMT_S16})
    for (const AVSampleFormat* f = codec->sample_fmts; f && *f != AV_SAMPLE_FMT_NONE; ++f)
      if (*f == want) return want;
  throw std::runtime_error(std::string("FFmpeg fixture: no usable sample format for ") + codec->name);
}

/// Copies `frames` mono samples into `frame` (sample format as picked above).
inline void fill_frame(AVFrame* frame, const float* x, int frames) {
  const auto format = static_cast<AVSampleFormat>(frame->format);
  for (int i = 0; i < frames; ++i) {
    if (format == AV_SAMPLE_FMT_FLTP || format == AV_SAMPLE_FMT_FLT) {
      reinterpret_cast<float*>(frame->data[0])[i] = x[i];
    } else {
      const long v = std::lrint(std::clamp(x[i], -1.0f, 32767.0f / 32768.0f) * 32768.0f);
      reinterpret_cast<std::int16_t*>(frame->data[0])[i] = static_cast<std::int16_t>(v);
    }
  }
}

/// Encodes mono `samples` at `rate` with spec.encoder and muxes them with spec.muxer.
inline std::vector<std::byte> mux_audio(const mux_spec& spec, std::span<const float> samples, int rate) {
  const AVCodec* codec = avcodec_find_encoder_by_name(spec.encoder);
  if (!codec) throw std::runtime_error(std::string("FFmpeg fixture: no encoder ") + spec.encoder);
  av_memory_writer sink;
  constexpr int buffer_size = 4096;
  auto* buffer = static_cast<unsigned char*>(av_malloc(buffer_size));
  AVIOContext* io = avio_alloc_context(buffer, buffer_size, 1, &sink, nullptr, &av_memory_writer::write,
                                       spec.seekable ? &av_memory_writer::seek : nullptr);
  AVFormatContext* out = nullptr;
  av_check(avformat_alloc_output_context2(&out, nullptr, spec.muxer, nullptr), "muxer");
  out->pb = io;
  // Bit-exact: no random Matroska UIDs, no MP4 creation times, so every run
  // makes the same bytes (and the seeded bit flips below land on the same content).
  out->flags |= AVFMT_FLAG_CUSTOM_IO | AVFMT_FLAG_BITEXACT;
  AVCodecContext* enc = avcodec_alloc_context3(codec);
  enc->sample_rate = rate;
  enc->sample_fmt = pick_sample_format(codec);
  av_channel_layout_default(&enc->ch_layout, 1);
  enc->time_base = AVRational{1, rate};
  if (spec.bit_rate) enc->bit_rate = spec.bit_rate;
  if (out->oformat->flags & AVFMT_GLOBALHEADER) enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  enc->flags |= AV_CODEC_FLAG_BITEXACT;
  av_check(avcodec_open2(enc, codec, nullptr), "encoder");
  AVStream* stream = avformat_new_stream(out, nullptr);
  av_check(avcodec_parameters_from_context(stream->codecpar, enc), "stream parameters");
  stream->time_base = enc->time_base;
  AVDictionary* options = nullptr;
  if (*spec.muxer_options) av_dict_parse_string(&options, spec.muxer_options, "=", ":", 0);
  const int header = avformat_write_header(out, &options);
  av_dict_free(&options);
  av_check(header, "header");

  AVFrame* frame = av_frame_alloc();
  AVPacket* packet = av_packet_alloc();
  auto drain = [&] {
    for (;;) {
      const int got = avcodec_receive_packet(enc, packet);
      if (got == AVERROR(EAGAIN) || got == AVERROR_EOF) return;
      av_check(got, "encode");
      av_packet_rescale_ts(packet, enc->time_base, stream->time_base);
      packet->stream_index = stream->index;
      av_check(av_interleaved_write_frame(out, packet), "write");
    }
  };
  const int frame_size = enc->frame_size > 0 ? enc->frame_size : 1024;
  for (std::size_t at = 0; at < samples.size(); at += static_cast<std::size_t>(frame_size)) {
    const int n = static_cast<int>(std::min<std::size_t>(frame_size, samples.size() - at));
    // Encoders without a small-last-frame capability get the last frame padded with silence.
    const bool pad = n < frame_size && !(codec->capabilities & AV_CODEC_CAP_SMALL_LAST_FRAME) &&
                     !(codec->capabilities & AV_CODEC_CAP_VARIABLE_FRAME_SIZE);
    av_frame_unref(frame);
    frame->nb_samples = pad ? frame_size : n;
    frame->format = enc->sample_fmt;
    frame->sample_rate = rate;
    av_channel_layout_copy(&frame->ch_layout, &enc->ch_layout);
    av_check(av_frame_get_buffer(frame, 0), "frame");
    std::vector<float> chunk(samples.begin() + static_cast<std::ptrdiff_t>(at),
                             samples.begin() + static_cast<std::ptrdiff_t>(at + static_cast<std::size_t>(n)));
    chunk.resize(static_cast<std::size_t>(frame->nb_samples), 0.0f);
    fill_frame(frame, chunk.data(), frame->nb_samples);
    frame->pts = static_cast<std::int64_t>(at);
    av_check(avcodec_send_frame(enc, frame), "send");
    drain();
  }
  av_check(avcodec_send_frame(enc, nullptr), "flush");
  drain();
  av_check(av_write_trailer(out), "trailer");

  av_frame_free(&frame);
  av_packet_free(&packet);
  avcodec_free_context(&enc);
  avio_flush(io);
  avformat_free_context(out);
  av_freep(&io->buffer);
  avio_context_free(&io);
  return std::move(sink.bytes);
}

}  // namespace izwi::audio::test
