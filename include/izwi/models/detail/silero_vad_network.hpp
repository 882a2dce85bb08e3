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

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <numbers>
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
static_assert(silero_frames % 2 == 0, "the FFT path transforms frames in pairs");
inline constexpr std::size_t silero_hidden = 128;
inline constexpr std::size_t silero_gates = 4 * silero_hidden;               // i, f, g, o

struct SileroConv {
  std::size_t in = 0, out = 0, stride = 1;
  std::vector<float> weight;  ///< [out][tap][in]
  std::vector<float> bias;    ///< [out]
};

/// A 256-point FFT of windowed frames. The published STFT basis is a
/// windowed DFT (row k = w[n] cos(2 pi k n / 256), then -w[n] sin(...)); when
/// load() confirms that, the FFT gives the same spectrum with ~1/10 of the
/// arithmetic of the 258 x 256 product.
struct SileroFft {
  std::array<float, silero_fft> window{};
  std::array<std::complex<float>, silero_fft / 2> twiddle{};  ///< exp(-2 pi i k / 256)
  std::array<std::uint8_t, silero_fft> bit_reversed{};

  explicit SileroFft(const float* window_taps = nullptr) {
    for (std::size_t n = 0; n < silero_fft; ++n) {
      window[n] = window_taps ? window_taps[n] : 0.0f;
      std::uint32_t r = 0;
      for (std::uint32_t b = 0; b < 8; ++b) r |= ((static_cast<std::uint32_t>(n) >> b) & 1u) << (7 - b);
      bit_reversed[n] = static_cast<std::uint8_t>(r);
    }
    for (std::size_t k = 0; k < silero_fft / 2; ++k) {
      const double angle = -2.0 * std::numbers::pi * static_cast<double>(k) / silero_fft;
      twiddle[k] = {static_cast<float>(std::cos(angle)), static_cast<float>(std::sin(angle))};
    }
  }

  /// Magnitudes |X[k]|, k = 0..128, of two windowed 256-sample frames with
  /// one complex FFT: z = a + i b, then A[k] = (Z[k] + conj Z[N-k]) / 2 and
  /// B[k] = (Z[k] - conj Z[N-k]) / 2i. Complex products are written out:
  /// std::complex's operator* and abs go through NaN-careful library calls
  /// (__mulsc3, hypot) that cost more than the transform.
  void magnitudes(const float* frame_a, const float* frame_b, float* out_a, float* out_b) const noexcept {
    std::array<float, silero_fft> re, im;
    for (std::size_t n = 0; n < silero_fft; ++n) {
      re[bit_reversed[n]] = frame_a[n] * window[n];
      im[bit_reversed[n]] = frame_b[n] * window[n];
    }
    for (std::size_t half = 1, stride = silero_fft / 2; half < silero_fft; half *= 2, stride /= 2) {
      for (std::size_t start = 0; start < silero_fft; start += 2 * half) {
        for (std::size_t j = 0; j < half; ++j) {
          const float wr = twiddle[j * stride].real(), wi = twiddle[j * stride].imag();
          const std::size_t a = start + j, b = a + half;
          const float tr = wr * re[b] - wi * im[b];
          const float ti = wr * im[b] + wi * re[b];
          re[b] = re[a] - tr;
          im[b] = im[a] - ti;
          re[a] += tr;
          im[a] += ti;
        }
      }
    }
    for (std::size_t k = 0; k < silero_bins; ++k) {
      const std::size_t mirror = (silero_fft - k) % silero_fft;
      const float sum_re = re[k] + re[mirror], sum_im = im[k] - im[mirror];    // 2 A[k]
      const float diff_re = re[k] - re[mirror], diff_im = im[k] + im[mirror];  // 2i B[k]
      out_a[k] = 0.5f * std::sqrt(sum_re * sum_re + sum_im * sum_im);
      out_b[k] = 0.5f * std::sqrt(diff_re * diff_re + diff_im * diff_im);
    }
  }
};

struct SileroVadWeights {
  std::vector<float> stft_basis;       ///< [2 * bins][256]: real rows, then imaginary rows
  bool stft_is_windowed_dft = false;   ///< use `fft` instead of stft_basis
  SileroFft fft;
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
    // The small R x N loops are unrolled by hand (pragma) so the
    // accumulators live in registers at -O2 too.
    batch acc[R][N];
#pragma GCC unroll 8
    for (std::size_t r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (std::size_t c = 0; c < N; ++c) acc[r][c] = batch(0.0f);
    for (std::size_t k = 0; k < vector_end; k += lanes) {
      batch x[N];
#pragma GCC unroll 8
      for (std::size_t c = 0; c < N; ++c) x[c] = batch::load_unaligned(columns[c] + k);
#pragma GCC unroll 8
      for (std::size_t r = 0; r < R; ++r) {
        const batch w = batch::load_unaligned(weights + (r0 + r) * length + k);
#pragma GCC unroll 8
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

/// tanh through one exp: libm's tanhf (expm1-based) was a seventh of the
/// window's time. Absolute error stays ~1e-7; the form saturates cleanly
/// (exp overflow gives 1, underflow -1).
inline float silero_tanh(float x) noexcept { return 1.0f - 2.0f / (std::exp(2.0f * x) + 1.0f); }

/// The STFT as the graph computes it: 258 basis rows x 4 frames at hop 128,
/// then the magnitude.
inline void silero_stft_by_basis(const SileroVadWeights& w, SileroVadState& s) noexcept {
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
}

/// Whether basis rows are window x DFT (within float rounding); the window is
/// read from row 0 (cos 0 = 1).
inline bool silero_basis_is_windowed_dft(const std::vector<float>& basis) {
  double largest = 0, worst = 0;
  for (std::size_t k = 0; k < silero_bins; ++k) {
    for (std::size_t n = 0; n < silero_fft; ++n) {
      const double angle = 2.0 * std::numbers::pi * static_cast<double>((k * n) % silero_fft) / silero_fft;
      const double window = basis[n];
      const double re = basis[k * silero_fft + n], im = basis[(silero_bins + k) * silero_fft + n];
      worst = std::max({worst, std::abs(re - window * std::cos(angle)), std::abs(im + window * std::sin(angle))});
      largest = std::max(largest, std::abs(window));
    }
  }
  return largest > 0 && worst <= 1e-6 * largest;
}

/// Runs one window: state.input holds context | window; returns the speech
/// probability and updates h, c and the context.
inline float silero_forward(const SileroVadWeights& w, SileroVadState& s) noexcept {
  // Reflection padding on the right, edge sample not repeated (torch 'reflect').
  for (std::size_t j = 1; j <= silero_reflect; ++j) s.input[silero_input - 1 + j] = s.input[silero_input - 1 - j];

  if (w.stft_is_windowed_dft) {
    for (std::size_t t = 0; t < silero_frames; t += 2)
      w.fft.magnitudes(s.input.data() + t * silero_hop, s.input.data() + (t + 1) * silero_hop,
                       s.magnitude.data() + (t + 1) * silero_bins, s.magnitude.data() + (t + 2) * silero_bins);
  } else {
    silero_stft_by_basis(w, s);
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
    const float candidate = silero_tanh(s.gates[2 * silero_hidden + j]);
    const float output_gate = silero_sigmoid(s.gates[3 * silero_hidden + j]);
    s.cell[j] = forget_gate * s.cell[j] + input_gate * candidate;
    h[j] = output_gate * silero_tanh(s.cell[j]);
    logit += w.head_weight[j] * (h[j] > 0.0f ? h[j] : 0.0f);  // ReLU, then the 1x1 conv
  }

  // The last 64 samples of this window are the next window's context.
  for (std::size_t j = 0; j < silero_context; ++j) s.input[j] = s.input[silero_input - silero_context + j];
  return silero_sigmoid(logit);
}

}  // namespace izwi::models::detail
