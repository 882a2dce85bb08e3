#pragma once
// FFmpeg (libavformat, libavcodec, libavutil) for izwi's audio I/O: the C
// headers, included once with C linkage (they carry no extern "C" of their
// own), owners for the objects izwi allocates from them, and readable error
// text. FFmpeg decodes the uploads libsndfile cannot open (MP4/M4A, WebM,
// AAC) and encodes AAC for /v1/audio/speech; see decode.hpp and encode.hpp.

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libavutil/channel_layout.h>
#include <libavutil/error.h>
#include <libavutil/mem.h>
}

#include <memory>
#include <string>

namespace izwi::audio::detail {

struct av_input_closer {
  void operator()(AVFormatContext* c) const noexcept { avformat_close_input(&c); }
};
/// An opened demuxer (avformat_open_input).
using av_input_handle = std::unique_ptr<AVFormatContext, av_input_closer>;

struct av_codec_closer {
  void operator()(AVCodecContext* c) const noexcept { avcodec_free_context(&c); }
};
using av_codec_handle = std::unique_ptr<AVCodecContext, av_codec_closer>;

struct av_frame_closer {
  void operator()(AVFrame* f) const noexcept { av_frame_free(&f); }
};
using av_frame_handle = std::unique_ptr<AVFrame, av_frame_closer>;

struct av_packet_closer {
  void operator()(AVPacket* p) const noexcept { av_packet_free(&p); }
};
using av_packet_handle = std::unique_ptr<AVPacket, av_packet_closer>;

/// FFmpeg's text for an AVERROR code ("Invalid data found when processing input").
inline std::string av_error_text(int code) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {};
  if (av_strerror(code, text, sizeof text) < 0) return "error " + std::to_string(code);
  return text;
}

}  // namespace izwi::audio::detail
