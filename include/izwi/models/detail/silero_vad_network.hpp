#pragma once
// Silero VAD's layers over plain float buffers: the weight layout chosen at
// load time, the per-stream buffers, and one window's forward pass.
//
// Activations are stored time-major ([frame][channel]) with one zero frame
// before and after, so the three taps of a k=3 convolution at output frame t
// are one contiguous run of 3 x channels floats: every layer (STFT included)
// becomes rows of weights dotted with contiguous input runs, with no im2col
// copy. Conv weights are re-laid out to match: [out][tap][in].

#include <xsimd/xsimd.hpp>

#include <array>
#include <cmath>
#include <cstddef>
#include <vector>

namespace izwi::models::detail {

inline constexpr std::size_t silero_window = 512;
inline constexpr std::size_t silero_context = 64;
inline constexpr std::size_t silero_input = silero_window + silero_context;  // 576
inline constexpr std::size_t silero_reflect = 64;                            // right reflect padding
inline constexpr std::size_t silero_padded = silero_input + silero_reflect;  // 640
inline constexpr std::size_t silero_fft = 256;                               // STFT taps
inline constexpr std::size_t silero_hop = 128;
inline constexpr std::size_t silero_bins = silero_fft / 2 + 1;               // 129
inline constexpr std::size_t silero_frames = (silero_padded - silero_fft) / silero_hop + 1;  // 4
inline constexpr std::size_t silero_hidden = 128;
inline constexpr std::size_t silero_gates = 4 * silero_hidden;               // i, f, g, o

struct SileroConv {
  std::size_t in = 0, out = 0, stride = 1;
  std::vector<float> weight;  ///< [out][tap][in]
  std::vector<float> bias;    ///< [out]
};

struct SileroVadWeights {
  std::vector<float> stft_basis;       ///< [2 * bins][256]: real rows, then imaginary rows
  std::array<SileroConv, 4> encoder;   ///< 129->128 s1, 128->64 s2, 64->64 s2, 64->128 s1
  std::vector<float> lstm_weight;      ///< [512][256]: row g is [W_ih[g] | W_hh[g]]
  std::vector<float> lstm_bias;        ///< [512]: b_ih + b_hh
  std::vector<float> head_weight;      ///< [128]
  float head_bias = 0.0f;
};

/// Per-stream state and buffers. Padding frames are zero and stay zero.
struct SileroVadState {
  std::array<float, silero_padded> input{};                         ///< context | window | reflection
  std::array<float, silero_frames * 2 * silero_bins> spectrum{};    ///< [4][258]
  std::array<float, (silero_frames + 2) * silero_bins> magnitude{}; ///< [1+4+1][129]
  std::array<float, (4 + 2) * 128> enc0{};                          ///< [1+4+1][128]
  std::array<float, (2 + 2) * 64> enc1{};                           ///< [1+2+1][64]
  std::array<float, (1 + 2) * 64> enc2{};                           ///< [1+1+1][64]
  std::array<float, 2 * silero_hidden> lstm_input{};                ///< encoder output x | h
  std::array<float, silero_hidden> cell{};                          ///< c
  std::array<float, silero_gates> gates{};
};

/// out[c * out_stride + r] = act(bias[r] + dot(weights[r], columns[c])) for
/// every row r < rows and column c < N; `R` rows are processed together so
/// the FMA chains of one row hide the latency of another's.
template <std::size_t R, std::size_t N, bool Relu>
inline void dot_rows(const float* weights, std::size_t rows, std::size_t length, const std::array<const float*, N>& columns,
                     const float* bias, float* out, std::size_t out_stride) noexcept {
  using batch = xsimd::batch<float>;
  constexpr std::size_t lanes = batch::size;
  const std::size_t vector_end = length - length % lanes;
  for (std::size_t r0 = 0; r0 < rows; r0 += R) {
    batch acc[R][N];
    for (std::size_t r = 0; r < R; ++r)
      for (std::size_t c = 0; c < N; ++c) acc[r][c] = batch(0.0f);
    for (std::size_t k = 0; k < vector_end; k += lanes) {
      batch x[N];
      for (std::size_t c = 0; c < N; ++c) x[c] = batch::load_unaligned(columns[c] + k);
      for (std::size_t r = 0; r < R; ++r) {
        const batch w = batch::load_unaligned(weights + (r0 + r) * length + k);
        for (std::size_t c = 0; c < N; ++c) acc[r][c] = xsimd::fma(w, x[c], acc[r][c]);
      }
    }
    for (std::size_t r = 0; r < R; ++r) {
      const float* w = weights + (r0 + r) * length;
      for (std::size_t c = 0; c < N; ++c) {
        float sum = xsimd::hadd(acc[r][c]);
        for (std::size_t k = vector_end; k < length; ++k) sum += w[k] * columns[c][k];
        sum += bias ? bias[r0 + r] : 0.0f;
        out[c * out_stride + r0 + r] = Relu && sum < 0.0f ? 0.0f : sum;
      }
    }
  }
}

/// One k=3, pad-1 convolution + ReLU from a padded time-major buffer into the
/// interior frames of the next one (`out` points at its frame 0).
template <std::size_t OutFrames>
inline void silero_conv_relu(const SileroConv& conv, const float* padded_in, float* out) noexcept {
  std::array<const float*, OutFrames> columns;
  for (std::size_t t = 0; t < OutFrames; ++t) columns[t] = padded_in + t * conv.stride * conv.in;
  constexpr std::size_t rows_together = OutFrames >= 4 ? 1 : 4 / OutFrames;
  dot_rows<rows_together, OutFrames, true>(conv.weight.data(), conv.out, 3 * conv.in, columns, conv.bias.data(), out, conv.out);
}

inline float silero_sigmoid(float x) noexcept { return 1.0f / (1.0f + std::exp(-x)); }

/// Runs one window: state.input holds context | window; returns the speech
/// probability and updates h, c and the context.
inline float silero_forward(const SileroVadWeights& w, SileroVadState& s) noexcept {
  // Reflection padding on the right, edge sample not repeated (torch 'reflect').
  for (std::size_t j = 1; j <= silero_reflect; ++j) s.input[silero_input - 1 + j] = s.input[silero_input - 1 - j];

  // STFT as a convolution: 258 basis rows x 4 frames at hop 128.
  std::array<const float*, silero_frames> frames;
  for (std::size_t t = 0; t < silero_frames; ++t) frames[t] = s.input.data() + t * silero_hop;
  dot_rows<1, silero_frames, false>(w.stft_basis.data(), 2 * silero_bins, silero_fft, frames, nullptr, s.spectrum.data(),
                                    2 * silero_bins);
  for (std::size_t t = 0; t < silero_frames; ++t) {
    const float* spectrum = s.spectrum.data() + t * 2 * silero_bins;
    float* magnitude = s.magnitude.data() + (t + 1) * silero_bins;
    for (std::size_t f = 0; f < silero_bins; ++f) {
      const float re = spectrum[f], im = spectrum[f + silero_bins];
      magnitude[f] = std::sqrt(re * re + im * im);
    }
  }

  silero_conv_relu<4>(w.encoder[0], s.magnitude.data(), s.enc0.data() + 128);
  silero_conv_relu<2>(w.encoder[1], s.enc0.data(), s.enc1.data() + 64);
  silero_conv_relu<1>(w.encoder[2], s.enc1.data(), s.enc2.data() + 64);
  silero_conv_relu<1>(w.encoder[3], s.enc2.data(), s.lstm_input.data());

  // LSTM cell: gates = [W_ih | W_hh] . [x | h] + b, PyTorch order i, f, g, o.
  const std::array<const float*, 1> xh = {s.lstm_input.data()};
  dot_rows<4, 1, false>(w.lstm_weight.data(), silero_gates, 2 * silero_hidden, xh, w.lstm_bias.data(), s.gates.data(), 0);
  float* h = s.lstm_input.data() + silero_hidden;
  float logit = w.head_bias;
  for (std::size_t j = 0; j < silero_hidden; ++j) {
    const float input_gate = silero_sigmoid(s.gates[j]);
    const float forget_gate = silero_sigmoid(s.gates[silero_hidden + j]);
    const float candidate = std::tanh(s.gates[2 * silero_hidden + j]);
    const float output_gate = silero_sigmoid(s.gates[3 * silero_hidden + j]);
    s.cell[j] = forget_gate * s.cell[j] + input_gate * candidate;
    h[j] = output_gate * std::tanh(s.cell[j]);
    logit += w.head_weight[j] * (h[j] > 0.0f ? h[j] : 0.0f);  // ReLU, then the 1x1 conv
  }

  // The last 64 samples of this window are the next window's context.
  for (std::size_t j = 0; j < silero_context; ++j) s.input[j] = s.input[silero_input - silero_context + j];
  return silero_sigmoid(logit);
}

}  // namespace izwi::models::detail
