#pragma once
// Bodies of izwi/audio/encode.hpp, AAC part: FFmpeg's native AAC-LC encoder
// (libavcodec "aac"; Debian's FFmpeg has no libfdk-aac), its raw frames put
// in ADTS frames one by one. Included by impl/encode.hpp.

#include <algorithm>
#include <cstdint>
#include <new>
#include <span>
#include <string>
#include <vector>

#include "izwi/audio/detail/adts_header.hpp"
#include "izwi/audio/detail/av_handles.hpp"

namespace izwi::audio::detail {

/// AAC-LC bit rate: 64 kb/s per channel up to 24 kHz (transparent for speech
/// at TTS rates), 96 kb/s per channel above; never above what one frame can
/// carry (6144 bits per channel per 1024 samples, i.e. 6 × rate).
inline std::int64_t aac_bit_rate(std::uint32_t rate, std::uint32_t channels) {
  const std::int64_t per_channel = std::min<std::int64_t>(rate > 24000 ? 96000 : 64000, 6ll * rate);
  return per_channel * channels;
}

/// One AAC encoder: interleaved float in, ADTS frames out.
class aac_state {
 public:
  aac_state(std::uint32_t rate, std::uint32_t channels)
      : channels_(channels), sampling_index_(adts_sampling_index(rate)) {
    const AVCodec* encoder = avcodec_find_encoder(AV_CODEC_ID_AAC);
    if (!encoder || sampling_index_ < 0)
      throw EncodeError("cannot start aac encoder: FFmpeg has no AAC encoder for " + std::to_string(rate) + " Hz");
    codec_.reset(avcodec_alloc_context3(encoder));
    frame_.reset(av_frame_alloc());
    packet_.reset(av_packet_alloc());
    if (!codec_ || !frame_ || !packet_) throw std::bad_alloc();
    codec_->sample_fmt = AV_SAMPLE_FMT_FLTP;  // the native encoder's only input format; its profile is AAC-LC
    codec_->sample_rate = static_cast<int>(rate);
    av_channel_layout_default(&codec_->ch_layout, static_cast<int>(channels));
    codec_->bit_rate = aac_bit_rate(rate, channels);
    codec_->time_base = AVRational{1, static_cast<int>(rate)};
    codec_->thread_count = 1;
    if (const int err = avcodec_open2(codec_.get(), encoder, nullptr); err < 0)
      throw EncodeError("cannot start aac encoder: FFmpeg: " + av_error_text(err));
    frame_size_ = codec_->frame_size > 0 ? static_cast<std::size_t>(codec_->frame_size) : 1024;
  }

  /// Encodes every whole frame of samples held; keeps the remainder.
  void write(std::span<const float> interleaved, std::vector<std::byte>& out) {
    pending_.insert(pending_.end(), interleaved.begin(), interleaved.end());
    const std::size_t whole = pending_.size() / (frame_size_ * channels_);
    for (std::size_t i = 0; i < whole; ++i) encode(pending_.data() + i * frame_size_ * channels_, frame_size_, out);
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(whole * frame_size_ * channels_));
  }

  /// Encodes the remainder (a short last frame) and drains the encoder's delay.
  void finish(std::vector<std::byte>& out) {
    if (!pending_.empty()) encode(pending_.data(), pending_.size() / channels_, out);
    pending_.clear();
    if (const int err = avcodec_send_frame(codec_.get(), nullptr); err < 0 && err != AVERROR_EOF)
      throw EncodeError("aac encoder failed at the end: FFmpeg: " + av_error_text(err));
    receive(out);
  }

 private:
  void encode(const float* interleaved, std::size_t frames, std::vector<std::byte>& out) {
    AVFrame* f = frame_.get();
    av_frame_unref(f);
    f->nb_samples = static_cast<int>(frames);
    f->format = AV_SAMPLE_FMT_FLTP;
    f->sample_rate = codec_->sample_rate;
    if (av_channel_layout_copy(&f->ch_layout, &codec_->ch_layout) < 0 || av_frame_get_buffer(f, 0) < 0)
      throw std::bad_alloc();
    for (std::uint32_t c = 0; c < channels_; ++c) {
      auto* plane = reinterpret_cast<float*>(f->extended_data[c]);
      for (std::size_t i = 0; i < frames; ++i) plane[i] = interleaved[i * channels_ + c];
    }
    f->pts = next_pts_;
    next_pts_ += static_cast<std::int64_t>(frames);
    if (const int err = avcodec_send_frame(codec_.get(), f); err < 0)
      throw EncodeError("aac encoder failed: FFmpeg: " + av_error_text(err));
    receive(out);
  }

  /// Moves every finished packet to `out` as one ADTS frame each.
  void receive(std::vector<std::byte>& out) {
    for (;;) {
      const int got = avcodec_receive_packet(codec_.get(), packet_.get());
      if (got == AVERROR(EAGAIN) || got == AVERROR_EOF) return;
      if (got < 0) throw EncodeError("aac encoder failed: FFmpeg: " + av_error_text(got));
      const auto size = static_cast<std::size_t>(packet_->size);
      if (size > adts_max_payload) {
        av_packet_unref(packet_.get());
        throw EncodeError("aac encoder produced a " + std::to_string(size) + "-byte frame, more than ADTS carries");
      }
      append_adts_header(out, sampling_index_, channels_, size);
      const auto* data = reinterpret_cast<const std::byte*>(packet_->data);
      out.insert(out.end(), data, data + size);
      av_packet_unref(packet_.get());
    }
  }

  std::uint32_t channels_;
  int sampling_index_;
  std::size_t frame_size_ = 1024;
  std::int64_t next_pts_ = 0;
  std::vector<float> pending_;  // interleaved samples short of a whole frame
  av_codec_handle codec_;
  av_frame_handle frame_;
  av_packet_handle packet_;
};

}  // namespace izwi::audio::detail
