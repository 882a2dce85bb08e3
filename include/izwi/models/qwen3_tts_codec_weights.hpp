#pragma once
// The codec decoder's weights as Qwen3TtsCodecDecoder holds them (see
// qwen3_tts_codec.hpp): f32, views into memory the decoder owns. Every
// matrix the decoder multiplies with the GEMM is held as the panels it reads,
// packed once at load (kernels::cpu::GemmPanels beside the view, whose data
// is then null: only its shape is kept); the 1-channel final convolution,
// which takes the dot-product path, stays a row-major view.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "izwi/kernels/cpu/conv1d.hpp"
#include "izwi/kernels/cpu/matmul.hpp"

namespace izwi {

/// A 1-D convolution as a matmul over im2col rows: weight [out][kernel × in]
/// (tap-major: torch's [out][in][kernel] with the last two axes swapped, so an
/// im2col row is the kernel's input rows back to back), causal left padding
/// (kernel-1)·dilation.
struct Qwen3TtsConv {
  kernels::cpu::WeightMatrix weight;
  kernels::cpu::GemmPanels panels;
  std::vector<float> bias;
  std::uint32_t in = 0, out = 0, kernel = 1, dilation = 1;
  std::size_t context_rows() const noexcept { return std::size_t{kernel - 1} * dilation; }
};

/// ConvTranspose1d as y[t·stride + j][o] += Σᵢ x[t][i]·W[i][o][j]; weight
/// holds Wᵀ tap-major as [kernel × out][in] so one matmul gives every (j, o),
/// each tap's output row contiguous.
struct Qwen3TtsTransposedConv {
  kernels::cpu::WeightMatrix weight;
  kernels::cpu::GemmPanels panels;
  std::vector<float> bias;
  std::uint32_t in = 0, out = 0, kernel = 1, stride = 1;
  /// Output rows an input row reaches beyond its own stride (carried to the next call).
  std::size_t overlap_rows() const noexcept { return kernel > stride ? kernel - stride : 0; }
};

/// SnakeBeta with its parameters folded once: e^α and 1 / (e^β + 1e-9).
struct Qwen3TtsSnake {
  std::vector<float> alpha_exp, inv_beta;
};

struct Qwen3TtsCodecLayerWeights {
  std::vector<float> attn_norm, mlp_norm, attn_scale, mlp_scale;
  kernels::cpu::WeightMatrix q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj;
  kernels::cpu::GemmPanels q_panels, k_panels, v_panels, o_panels, gate_panels, up_panels, down_panels;
};

struct Qwen3TtsUpsampleStage {
  Qwen3TtsTransposedConv upsample;
  std::vector<float> dwconv_weight;  ///< [7][channels] (tap-major)
  std::vector<float> dwconv_bias, norm_weight, norm_bias, gamma;
  kernels::cpu::WeightMatrix pwconv1, pwconv2;
  kernels::cpu::GemmPanels pwconv1_panels, pwconv2_panels;
  std::vector<float> pwconv1_bias, pwconv2_bias;
};

struct Qwen3TtsResidualUnit {
  Qwen3TtsSnake act1, act2;
  Qwen3TtsConv conv1, conv2;
};

struct Qwen3TtsDecoderBlock {
  Qwen3TtsSnake snake;
  Qwen3TtsTransposedConv upsample;
  Qwen3TtsResidualUnit residual[3];
};

struct Qwen3TtsCodecWeights {
  /// Dequantised codebooks (embedding_sum / max(cluster_usage, 1e-5)):
  /// [num_quantizers][codebook_size][codebook_dim / 2], codebook 0 first.
  std::vector<float> codebooks;
  kernels::cpu::WeightMatrix first_output_proj, rest_output_proj;  ///< [codebook_dim][codebook_dim / 2]
  kernels::cpu::GemmPanels first_output_proj_panels, rest_output_proj_panels;
  Qwen3TtsConv pre_conv;
  kernels::cpu::WeightMatrix input_proj, output_proj;
  kernels::cpu::GemmPanels input_proj_panels, output_proj_panels;
  std::vector<float> input_proj_bias, output_proj_bias, final_norm;
  std::vector<Qwen3TtsCodecLayerWeights> layers;
  std::vector<Qwen3TtsUpsampleStage> upsample;
  Qwen3TtsConv decoder_entry;
  std::vector<Qwen3TtsDecoderBlock> blocks;
  Qwen3TtsSnake final_snake;
  Qwen3TtsConv final_conv;
};

}  // namespace izwi
