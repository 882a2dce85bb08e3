#pragma once
// Qwen3TtsSpeakerEncoder: loading (safetensors and GGUF) and the forward pass.
// Inline in header-only builds; compiled once, in <izwi/src.hpp>, under
// IZWI_SEPARATE_COMPILATION (see izwi/config.hpp).

#include "izwi/config.hpp"
#include "izwi/models/qwen3_tts_speaker_encoder.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "izwi/audio/resample.hpp"
#include "izwi/audio/window.hpp"
#include "izwi/core/error.hpp"
#include "izwi/kernels/cpu/matmul.hpp"

namespace izwi {

namespace detail {

/// The x-vector's front end, fixed by upstream's extract_speaker_embedding.
inline constexpr std::size_t speaker_n_fft = 1024, speaker_hop = 256;
inline constexpr double speaker_f_max = 12000.0;
/// The convolutions reflect-pad by up to (kernel - 1) · dilation / 2 frames,
/// and reflection needs more frames than that.
inline constexpr std::size_t speaker_min_frames = 5;

/// Index of frame t of a reflect-padded sequence of n frames (no edge repeat).
IZWI_DECL std::size_t reflect_index(std::ptrdiff_t t, std::size_t n) noexcept {
  if (t < 0) t = -t;
  const auto last = static_cast<std::ptrdiff_t>(n) - 1;
  if (t > last) t = 2 * last - t;
  return static_cast<std::size_t>(t);
}

/// y[frames][out] = conv(x[frames][in]) + bias, "same"-padded by reflection,
/// then ReLU when asked. Each output frame's receptive field is unfolded into
/// a row ([in][kernel], torch's weight order), so the convolution is one matmul.
IZWI_DECL void speaker_conv(const Qwen3TtsConv1d& c, const float* x, std::size_t frames, float* y, bool relu,
                         ThreadPool& pool, std::vector<float>& unfolded) {
  const kernels::cpu::WeightMatrix w{DType::f32, c.out, std::size_t{c.in} * c.kernel, c.weight.data()};
  const float* input = x;
  if (c.kernel > 1) {
    const std::size_t k = c.kernel, row = std::size_t{c.in} * k;
    const auto pad = static_cast<std::ptrdiff_t>((k - 1) * c.dilation / 2);
    unfolded.resize(frames * row);
    for (std::size_t t = 0; t < frames; ++t)
      for (std::size_t j = 0; j < k; ++j) {
        const std::ptrdiff_t at = static_cast<std::ptrdiff_t>(t + j * c.dilation) - pad;
        const float* src = x + reflect_index(at, frames) * c.in;
        float* dst = unfolded.data() + t * row + j;
        for (std::size_t ch = 0; ch < c.in; ++ch) dst[ch * k] = src[ch];
      }
    input = unfolded.data();
  }
  kernels::cpu::matmul(input, frames, w.cols, w, y, pool);
  for (std::size_t t = 0; t < frames; ++t) {
    float* out = y + t * c.out;
    for (std::size_t o = 0; o < c.out; ++o) {
      const float v = out[o] + c.bias[o];
      out[o] = relu ? std::max(v, 0.0f) : v;
    }
  }
}

/// Per-channel mean and standard deviation over time with weights
/// w[frames][channels] (1 / frames for plain statistics), std floored at
/// sqrt(1e-12) as upstream clamps the variance.
IZWI_DECL void speaker_statistics(const float* x, const float* w, std::size_t frames, std::size_t channels,
                               float* mean, float* std_dev) {
  for (std::size_t c = 0; c < channels; ++c) {
    double m = 0.0;
    for (std::size_t t = 0; t < frames; ++t)
      m += double(w ? w[t * channels + c] : 1.0 / frames) * x[t * channels + c];
    double v = 0.0;
    for (std::size_t t = 0; t < frames; ++t) {
      const double d = x[t * channels + c] - m;
      v += double(w ? w[t * channels + c] : 1.0 / frames) * d * d;
    }
    mean[c] = static_cast<float>(m);
    std_dev[c] = static_cast<float>(std::sqrt(std::max(v, 1e-12)));
  }
}

}  // namespace detail

template <class Fetch>
Qwen3TtsSpeakerEncoder Qwen3TtsSpeakerEncoder::load_with(const Qwen3TtsSpeakerEncoderConfig& config, Fetch&& fetch) {
  config.validate();
  const auto& ch = config.enc_channels;
  const std::size_t n = ch.size();
  Qwen3TtsSpeakerEncoder e;
  e.config_ = config;
  // fetch(hf name, gguf name, in, out, kernel, dilation) → a loaded convolution.
  e.stem_ = fetch("blocks.0.conv", "a.conv1d.0", config.mel_dim, ch[0], config.enc_kernel_sizes[0], config.enc_dilations[0]);
  for (std::size_t b = 1; b + 1 < n; ++b) {
    const std::string hf = "blocks." + std::to_string(b) + ".", gg = "a.blk." + std::to_string(b) + ".";
    const std::uint32_t c = ch[b], sub = c / config.enc_res2net_scale;
    Qwen3TtsSpeakerBlock block;
    block.tdnn1 = fetch(hf + "tdnn1.conv", gg + "conv_pw1", ch[b - 1], c, 1, 1);
    for (std::uint32_t i = 0; i + 1 < config.enc_res2net_scale; ++i)
      block.res2net.push_back(fetch(hf + "res2net_block.blocks." + std::to_string(i) + ".conv",
                                    gg + "res2." + std::to_string(i), sub, sub, config.enc_kernel_sizes[b],
                                    config.enc_dilations[b]));
    block.tdnn2 = fetch(hf + "tdnn2.conv", gg + "conv_pw2", c, c, 1, 1);
    block.se1 = fetch(hf + "se_block.conv1", gg + "se_conv1", c, config.enc_se_channels, 1, 1);
    block.se2 = fetch(hf + "se_block.conv2", gg + "se_conv2", config.enc_se_channels, c, 1, 1);
    e.blocks_.push_back(std::move(block));
  }
  e.mfa_ = fetch("mfa.conv", "a.conv_out", ch[n - 1], ch[n - 1], config.enc_kernel_sizes[n - 1], config.enc_dilations[n - 1]);
  e.asp_tdnn_ = fetch("asp.tdnn.conv", "a.asp_tdnn", 3 * ch[n - 1], config.enc_attention_channels, 1, 1);
  e.asp_conv_ = fetch("asp.conv", "a.asp_attn", config.enc_attention_channels, ch[n - 1], 1, 1);
  e.fc_ = fetch("fc", "mm.a.fc", 2 * ch[n - 1], config.enc_dim, 1, 1);
  e.window_ = audio::hann_window<float>(detail::speaker_n_fft, audio::WindowSymmetry::periodic);
  audio::MelFilterbankOptions mel;
  mel.n_mels = config.mel_dim;
  mel.n_fft = detail::speaker_n_fft;
  mel.sample_rate = config.sample_rate;
  mel.f_min = 0.0;
  mel.f_max = std::min(detail::speaker_f_max, config.sample_rate / 2.0);
  e.filterbank_ = std::make_shared<const audio::MelFilterbank>(mel);
  return e;
}

IZWI_DECL Qwen3TtsSpeakerEncoder Qwen3TtsSpeakerEncoder::load(const io::ModelDirectory& dir,
                                                           const Qwen3TtsSpeakerEncoderConfig& config) {
  return load_with(config, [&](const std::string& hf, const std::string&, std::uint32_t in, std::uint32_t out,
                               std::uint32_t kernel, std::uint32_t dilation) {
    const std::string name = "speaker_encoder." + hf;
    Qwen3TtsConv1d c{in, out, kernel, dilation, dir.to_f32(name + ".weight", {out, in, kernel}),
                     dir.to_f32(name + ".bias", {out})};
    for (const auto* values : {&c.weight, &c.bias})
      for (float v : *values)
        if (!std::isfinite(v))
          throw error(dir.path().string() + ": tensor '" + name + "' holds a non-finite value; the checkpoint is corrupt");
    return c;
  });
}

IZWI_DECL Qwen3TtsSpeakerEncoder Qwen3TtsSpeakerEncoder::load_gguf(const io::GgufFile& m) {
  if (m.get<std::string>("clip.audio.projector_type", "") != "qwen3tts_spkenc")
    throw io::format_error(m.name(), "", "metadata 'clip.audio.projector_type': not qwen3tts_spkenc (no speaker encoder)");
  // llama.cpp's graph fixes the ECAPA layout (qwen3tts-spkenc.cpp): three
  // blocks at dilations 2, 3, 4, Res2Net scale 8; the widths are the tensors'.
  const auto stem = m.tensor("a.conv1d.0.weight").shape();  // [C][mel][5]
  if (stem.size() != 3)
    throw io::format_error(m.name(), "a.conv1d.0.weight", "expected a 3-D convolution kernel");
  Qwen3TtsSpeakerEncoderConfig c;
  const auto channels = static_cast<std::uint32_t>(stem[0]);
  c.mel_dim = static_cast<std::uint32_t>(stem[1]);
  c.enc_channels = {channels, channels, channels, channels, 3 * channels};
  c.enc_kernel_sizes = {static_cast<std::uint32_t>(stem[2]), 3, 3, 3, 1};
  c.enc_dim = static_cast<std::uint32_t>(m.tensor("mm.a.fc.weight").shape().at(0));
  c.enc_attention_channels = static_cast<std::uint32_t>(m.tensor("a.asp_tdnn.weight").shape().at(0));
  c.enc_se_channels = static_cast<std::uint32_t>(m.tensor("a.blk.1.se_conv1.weight").shape().at(0));
  try {
    c.validate();
  } catch (const invalid_argument& e) {
    throw io::format_error(m.name(), "", e.what());
  }
  return load_with(c, [&](const std::string&, const std::string& gg, std::uint32_t in, std::uint32_t out,
                          std::uint32_t kernel, std::uint32_t dilation) {
    return Qwen3TtsConv1d{in, out, kernel, dilation, m.to_f32(gg + ".weight", {out, in, kernel}),
                          m.to_f32(gg + ".bias", {out})};
  });
}

IZWI_DECL std::size_t Qwen3TtsSpeakerEncoder::mel_frames(std::size_t n) const noexcept {
  constexpr std::size_t pad = (detail::speaker_n_fft - detail::speaker_hop) / 2;
  if (n <= pad) return 0;
  return 1 + (n + 2 * pad - detail::speaker_n_fft) / detail::speaker_hop;
}

IZWI_DECL std::vector<float> Qwen3TtsSpeakerEncoder::log_mel(std::span<const float> pcm) const {
  constexpr std::size_t pad = (detail::speaker_n_fft - detail::speaker_hop) / 2;
  const std::size_t frames = mel_frames(pcm.size()), n = pcm.size();
  if (frames == 0) return {};
  // Upstream pads by reflection itself, then runs an uncentred STFT.
  std::vector<float> padded(n + 2 * pad);
  for (std::size_t i = 0; i < pad; ++i) padded[i] = pcm[pad - i], padded[n + pad + i] = pcm[n - 2 - i];
  std::copy(pcm.begin(), pcm.end(), padded.begin() + pad);
  const audio::Stft stft({detail::speaker_n_fft, detail::speaker_hop, audio::StftPadding::none}, window_);
  const std::size_t mels = config_.mel_dim, bins = stft.n_bins();
  std::vector<float> out(frames * mels), magnitude(bins), energy(mels);
  stft.for_each_frame(padded, frames, [&](std::size_t t, std::span<const std::complex<float>> x) {
    for (std::size_t k = 0; k < bins; ++k) magnitude[k] = std::sqrt(std::norm(x[k]) + 1e-9f);
    filterbank_->apply(std::span<const float>(magnitude), std::span<float>(energy));
    for (std::size_t m = 0; m < mels; ++m) out[t * mels + m] = std::log(std::max(energy[m], 1e-5f));
  });
  return out;
}

IZWI_DECL std::vector<float> Qwen3TtsSpeakerEncoder::embed_mel(std::span<const float> mel, std::size_t frames,
                                                            detail::ThreadPool& pool) const {
  const auto& ch = config_.enc_channels;
  const std::size_t wide = ch.back(), T = frames;
  if (T < detail::speaker_min_frames || mel.size() != T * config_.mel_dim)
    throw invalid_argument("reference_audio", "the speaker encoder needs a [frames][" +
                                                  std::to_string(config_.mel_dim) + "] log-mel of at least " +
                                                  std::to_string(detail::speaker_min_frames) + " frames");
  std::vector<float> unfolded, x(T * ch[0]), tmp, chunk, branch, concat(T * wide);
  detail::speaker_conv(stem_, mel.data(), T, x.data(), true, pool, unfolded);
  std::size_t concat_at = 0;
  for (const Qwen3TtsSpeakerBlock& b : blocks_) {
    const std::size_t C = b.tdnn1.out, scale = b.res2net.size() + 1, sub = C / scale;
    std::vector<float> h(T * C), r(T * C);
    detail::speaker_conv(b.tdnn1, x.data(), T, h.data(), true, pool, unfolded);
    // Res2Net: group 0 passes; group i reads its own channels plus group i-1's output.
    chunk.resize(T * sub), branch.resize(T * sub);
    for (std::size_t t = 0; t < T; ++t) std::copy_n(h.data() + t * C, sub, r.data() + t * C);
    for (std::size_t g = 1; g < scale; ++g) {
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t i = 0; i < sub; ++i)
          chunk[t * sub + i] = h[t * C + g * sub + i] + (g >= 2 ? branch[t * sub + i] : 0.0f);
      detail::speaker_conv(b.res2net[g - 1], chunk.data(), T, branch.data(), true, pool, unfolded);
      for (std::size_t t = 0; t < T; ++t) std::copy_n(branch.data() + t * sub, sub, r.data() + t * C + g * sub);
    }
    detail::speaker_conv(b.tdnn2, r.data(), T, h.data(), true, pool, unfolded);
    // Squeeze-excitation: a per-channel gate from the time mean.
    std::vector<float> mean(C, 0.0f), squeezed(b.se1.out), gate(C);
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t c = 0; c < C; ++c) mean[c] += h[t * C + c];
    for (float& m : mean) m /= static_cast<float>(T);
    detail::speaker_conv(b.se1, mean.data(), 1, squeezed.data(), true, pool, unfolded);
    detail::speaker_conv(b.se2, squeezed.data(), 1, gate.data(), false, pool, unfolded);
    for (float& g : gate) g = 1.0f / (1.0f + std::exp(-g));
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t c = 0; c < C; ++c) {
        x[t * C + c] += h[t * C + c] * gate[c];
        concat[t * wide + concat_at + c] = x[t * C + c];
      }
    concat_at += C;
  }
  std::vector<float> mfa(T * wide);
  detail::speaker_conv(mfa_, concat.data(), T, mfa.data(), true, pool, unfolded);

  // Attentive statistics pooling.
  std::vector<float> stats(2 * wide), attention_in(T * 3 * wide), hidden(T * asp_tdnn_.out), score(T * wide);
  detail::speaker_statistics(mfa.data(), nullptr, T, wide, stats.data(), stats.data() + wide);
  for (std::size_t t = 0; t < T; ++t) {
    std::copy_n(mfa.data() + t * wide, wide, attention_in.data() + t * 3 * wide);
    std::copy_n(stats.data(), 2 * wide, attention_in.data() + t * 3 * wide + wide);
  }
  detail::speaker_conv(asp_tdnn_, attention_in.data(), T, hidden.data(), true, pool, unfolded);
  for (float& v : hidden) v = std::tanh(v);
  detail::speaker_conv(asp_conv_, hidden.data(), T, score.data(), false, pool, unfolded);
  for (std::size_t c = 0; c < wide; ++c) {  // softmax over time, per channel
    float top = -std::numeric_limits<float>::infinity();
    for (std::size_t t = 0; t < T; ++t) top = std::max(top, score[t * wide + c]);
    double sum = 0.0;
    for (std::size_t t = 0; t < T; ++t) sum += score[t * wide + c] = std::exp(score[t * wide + c] - top);
    for (std::size_t t = 0; t < T; ++t) score[t * wide + c] = static_cast<float>(score[t * wide + c] / sum);
  }
  detail::speaker_statistics(mfa.data(), score.data(), T, wide, stats.data(), stats.data() + wide);
  std::vector<float> xvector(config_.enc_dim);
  detail::speaker_conv(fc_, stats.data(), 1, xvector.data(), false, pool, unfolded);
  return xvector;
}

IZWI_DECL std::vector<float> Qwen3TtsSpeakerEncoder::embed(std::span<const float> pcm, std::uint32_t sample_rate,
                                                        detail::ThreadPool& pool) const {
  for (std::size_t i = 0; i < pcm.size(); ++i)
    if (!std::isfinite(pcm[i]))
      throw invalid_argument("reference_audio", "sample " + std::to_string(i) + " of the reference audio is not finite");
  std::vector<float> resampled;
  if (sample_rate != config_.sample_rate) {
    resampled = audio::resample(pcm, sample_rate, config_.sample_rate);
    pcm = resampled;
  }
  const std::size_t frames = mel_frames(pcm.size());
  if (frames < detail::speaker_min_frames)
    throw invalid_argument("reference_audio",
                           "the reference audio is too short for the speaker encoder: " + std::to_string(pcm.size()) +
                               " samples at " + std::to_string(config_.sample_rate) + " Hz give " +
                               std::to_string(frames) + " frames, it needs at least " +
                               std::to_string(detail::speaker_min_frames) + " (about 60 ms)");
  return embed_mel(log_mel(pcm), frames, pool);
}

}  // namespace izwi
