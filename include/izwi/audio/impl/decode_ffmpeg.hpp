#pragma once
// Bodies of izwi/audio/decode.hpp, second part: the containers libsndfile
// cannot open (MP4/M4A/MOV, Matroska/WebM, ADTS AAC, MPEG program and
// transport streams), demuxed by libavformat from memory and decoded by
// libavcodec, into the same pcm_collector as the libsndfile path, so the
// options and errors mean the same whichever library reads the bytes.
// Included by impl/decode.hpp after its detail helpers.

#include <cctype>
#include <cstdint>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "izwi/audio/detail/av_handles.hpp"
#include "izwi/audio/detail/av_memory_io.hpp"
#include "izwi/audio/detail/av_samples.hpp"
#include "izwi/audio/detail/container_sniff.hpp"

namespace izwi::audio::detail {

/// "MP4", "WEBM", "AAC" — the container as messages name it.
inline std::string av_container_label(const av_container& c) {
  std::string name = c.name;
  for (char& ch : name) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return name;
}

/// Before any decoding: a box, Segment or frame that declares more bytes
/// than the body holds is a cut-off upload, whatever the demuxer would make of it.
inline void check_container_whole(std::span<const std::byte> bytes, const av_container& c) {
  std::optional<container_shortfall> cut;
  switch (c.kind) {
    case av_container_kind::mp4: cut = find_iso_box_shortfall(bytes); break;
    case av_container_kind::matroska: cut = find_ebml_segment_shortfall(bytes); break;
    case av_container_kind::adts: cut = find_adts_shortfall(bytes); break;
    case av_container_kind::mpeg_ps: cut = find_mpeg_ps_shortfall(bytes); break;
    case av_container_kind::mpeg_ts: cut = find_mpeg_ts_shortfall(bytes); break;
  }
  if (!cut) return;
  if (cut->absent)
    throw DecodeError(DecodeProblem::truncated, "truncated " + av_container_label(c) + " file: " + cut->what +
                                                     " is missing (" + std::to_string(bytes.size()) +
                                                     " bytes of whole boxes; was the upload cut short?)");
  throw DecodeError(DecodeProblem::truncated, "truncated " + av_container_label(c) + " stream: " + cut->what +
                                                   " declares " + std::to_string(cut->declared) +
                                                   " bytes, the body holds " + std::to_string(cut->present));
}

/// Refuses every attempt of a demuxer to open another file or URL (MP4 data
/// references, playlists): an upload is decoded from its own bytes only.
inline int av_refuse_io_open(AVFormatContext*, AVIOContext**, const char*, int, AVDictionary**) {
  return AVERROR(EPERM);
}

/// State of one FFmpeg decode: the reader must outlive the demuxer.
struct av_decode_session {
  const av_container& container;
  av_memory_reader reader;
  av_input_handle input;
  av_codec_handle codec;
  int stream_index = -1;

  av_decode_session(std::span<const std::byte> bytes, const av_container& c) : container(c), reader(bytes) {}

  /// A demuxer or decoder error. Cut-off bodies were found before decoding
  /// (check_container_whole) or show as a short last packet (see the read
  /// loop); an error here is damage inside the stream.
  [[noreturn]] void fail(const std::string& where, int code, std::uint64_t frames) const {
    const std::string why = "FFmpeg's " + where + ": " + av_error_text(code);
    if (code == AVERROR_PATCHWELCOME || code == AVERROR(ENOSYS))
      throw DecodeError(DecodeProblem::unsupported_codec, "unsupported audio encoding: " + why);
    throw DecodeError(DecodeProblem::corrupt, "corrupt " + av_container_label(container) + " stream after " +
                                                   std::to_string(frames) + " frames: " + why);
  }

  /// A packet the demuxer could read only in part because the body ended.
  [[noreturn]] void fail_cut_packet(std::uint64_t frames) const {
    throw DecodeError(DecodeProblem::truncated, "truncated " + av_container_label(container) +
                                                     " stream: the data ends inside a packet after " +
                                                     std::to_string(frames) + " frames");
  }

  void open_container() {
    AVFormatContext* raw = avformat_alloc_context();
    if (!raw) throw std::bad_alloc();
    raw->pb = reader.context();
    raw->flags |= AVFMT_FLAG_CUSTOM_IO;
    raw->io_open = &av_refuse_io_open;
    const AVInputFormat* format = av_find_input_format(container.demuxer);
    if (!format)
      throw DecodeError(DecodeProblem::unsupported_codec,
                         "unsupported audio container: this FFmpeg has no '" + std::string(container.demuxer) +
                             "' demuxer for " + av_container_label(container));
    // On failure avformat_open_input frees the context (not our reader).
    const int opened = avformat_open_input(&raw, nullptr, format, nullptr);
    if (opened < 0) fail(std::string(container.demuxer) + " demuxer", opened, 0);
    input.reset(raw);
    const int found = avformat_find_stream_info(raw, nullptr);
    if (found < 0) fail(std::string(container.demuxer) + " demuxer", found, 0);
  }

  /// Picks the audio stream and opens its decoder.
  void open_decoder() {
    const AVCodec* decoder = nullptr;
    stream_index = av_find_best_stream(input.get(), AVMEDIA_TYPE_AUDIO, -1, -1, &decoder, 0);
    if (stream_index == AVERROR_STREAM_NOT_FOUND)
      throw DecodeError(DecodeProblem::not_audio,
                         "not an audio file: the " + av_container_label(container) + " container holds no audio stream");
    const AVCodecParameters* par = stream_index >= 0 ? input->streams[stream_index]->codecpar : nullptr;
    if (stream_index == AVERROR_DECODER_NOT_FOUND || !decoder) {
      // av_find_best_stream does not say which stream; name the first audio codec.
      std::string codec = "an unknown codec";
      for (unsigned i = 0; i < input->nb_streams; ++i)
        if (input->streams[i]->codecpar->codec_type == AVMEDIA_TYPE_AUDIO)
          codec = avcodec_get_name(input->streams[i]->codecpar->codec_id);
      throw DecodeError(DecodeProblem::unsupported_codec, "unsupported audio encoding: no decoder for " + codec +
                                                              " in " + av_container_label(container));
    }
    if (stream_index < 0) fail("stream selection", stream_index, 0);
    // Refuse what the header claims before the decoder allocates for it; a
    // count still unknown (0) is checked on the first decoded frame.
    if (par->ch_layout.nb_channels > static_cast<int>(max_decode_channels) ||
        par->sample_rate > static_cast<int>(max_sample_rate))
      check_channels_and_rate(par->ch_layout.nb_channels, par->sample_rate);
    for (unsigned i = 0; i < input->nb_streams; ++i)
      if (static_cast<int>(i) != stream_index) input->streams[i]->discard = AVDISCARD_ALL;
    codec.reset(avcodec_alloc_context3(decoder));
    if (!codec) throw std::bad_alloc();
    int ret = avcodec_parameters_to_context(codec.get(), par);
    if (ret >= 0) {
      codec->thread_count = 1;  // one request, one thread: the server runs requests in parallel
      ret = avcodec_open2(codec.get(), decoder, nullptr);
    }
    if (ret < 0) fail(std::string(decoder->name) + " decoder", ret, 0);
  }

  /// Seconds the container declares (an exact figure, not an estimate from
  /// the bit rate), or a negative number when it declares none.
  double declared_seconds() const {
    const AVStream* stream = input->streams[stream_index];
    if (input->duration_estimation_method == AVFMT_DURATION_FROM_BITRATE) return -1;
    if (stream->duration > 0 && stream->time_base.den > 0)
      return static_cast<double>(stream->duration) * av_q2d(stream->time_base);
    if (input->duration > 0) return static_cast<double>(input->duration) / AV_TIME_BASE;
    return -1;
  }
};

/// Feeds one decoded frame to the collector; the first frame fixes the
/// stream's rate and channels (a stream that changes them is refused).
inline void collect_av_frame(const AVFrame& frame, DecodedAudio& result, const DecodeOptions& options,
                             std::optional<pcm_collector>& collector, std::uint64_t expected_frames,
                             std::vector<float>& scratch) {
  const int channels = frame.ch_layout.nb_channels;
  if (!collector) {
    check_channels_and_rate(channels, frame.sample_rate);
    result.info.sample_rate = static_cast<std::uint32_t>(frame.sample_rate);
    result.info.channels = static_cast<std::uint32_t>(channels);
    collector.emplace(result, options, expected_frames);
  } else if (static_cast<std::uint32_t>(frame.sample_rate) != result.info.sample_rate ||
             static_cast<std::uint32_t>(channels) != result.info.channels) {
    throw DecodeError(DecodeProblem::invalid_format,
                       "audio changes from " + std::to_string(result.info.sample_rate) + " Hz, " +
                           std::to_string(result.info.channels) + " channels to " + std::to_string(frame.sample_rate) +
                           " Hz, " + std::to_string(channels) + " channels mid-stream; izwi decodes one format per upload");
  }
  if (!av_frame_to_interleaved_float(frame, result.info.channels, scratch)) {
    const char* name = av_get_sample_fmt_name(static_cast<AVSampleFormat>(frame.format));
    throw DecodeError(DecodeProblem::unsupported_codec,
                       std::string("unsupported audio encoding: FFmpeg sample format ") + (name ? name : "unknown"));
  }
  collector->add(scratch);
}

inline DecodedAudio decode_with_ffmpeg(std::span<const std::byte> bytes, const av_container& container,
                                       const DecodeOptions& options) {
  check_container_whole(bytes, container);
  av_decode_session session(bytes, container);
  session.open_container();
  session.open_decoder();

  DecodedAudio result;
  result.info.format = container.name;
  result.info.encoding = avcodec_get_name(session.codec->codec_id);
  const double seconds = session.declared_seconds();
  if (seconds >= 0) check_declared_seconds(seconds, options);
  const int rate_hint = session.codec->sample_rate;
  const std::uint64_t expected = seconds > 0 && rate_hint > 0 ? static_cast<std::uint64_t>(seconds * rate_hint) : 0;

  av_packet_handle packet(av_packet_alloc());
  av_frame_handle frame(av_frame_alloc());
  if (!packet || !frame) throw std::bad_alloc();
  std::optional<pcm_collector> collector;
  std::vector<float> scratch;
  const std::string decoder_name = std::string(session.codec->codec->name) + " decoder";
  auto frames = [&collector] { return collector ? collector->frames() : std::uint64_t{0}; };
  // Takes every frame the decoder has ready (until it wants input, or has ended).
  auto drain = [&]() {
    for (;;) {
      const int got = avcodec_receive_frame(session.codec.get(), frame.get());
      if (got == AVERROR(EAGAIN) || got == AVERROR_EOF) return;
      if (got < 0) session.fail(decoder_name, got, frames());
      collect_av_frame(*frame, result, options, collector, expected, scratch);
      av_frame_unref(frame.get());
    }
  };
  for (;;) {
    const int read = av_read_frame(session.input.get(), packet.get());
    if (read == AVERROR_EOF) break;
    if (read < 0) session.fail(std::string(container.demuxer) + " demuxer", read, frames());
    if (packet->stream_index != session.stream_index) {
      av_packet_unref(packet.get());
      continue;
    }
    // A packet the demuxer could only read in part, at the end of the body.
    if ((packet->flags & AV_PKT_FLAG_CORRUPT) && session.reader.reached_end()) session.fail_cut_packet(frames());
    int sent = avcodec_send_packet(session.codec.get(), packet.get());
    if (sent == AVERROR(EAGAIN)) {  // output not taken yet (we drain after each packet, so rare)
      drain();
      sent = avcodec_send_packet(session.codec.get(), packet.get());
    }
    av_packet_unref(packet.get());
    if (sent < 0) session.fail(decoder_name, sent, frames());
    drain();
  }
  // End of input: the decoder hands out what it still holds (codec delay).
  const int flushed = avcodec_send_packet(session.codec.get(), nullptr);
  if (flushed < 0 && flushed != AVERROR_EOF) session.fail(decoder_name, flushed, frames());
  drain();
  if (!collector || collector->frames() == 0)
    throw DecodeError(DecodeProblem::no_samples, "the audio stream holds no samples");
  collector->finish();
  return result;
}

}  // namespace izwi::audio::detail
