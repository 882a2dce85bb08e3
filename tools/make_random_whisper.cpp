// izwi-make-random-whisper: writes a Whisper checkpoint with random weights
// and a real topology, from the same arrays, as
//   OUT/hf/        a Hugging Face directory (config.json, generation_config.json,
//                  vocab.json, model.safetensors; F32)
//   OUT/ggml-model.bin (F32), and for each --ggml-type, OUT/ggml-model-<type>.bin
//                  (whisper.cpp's layout: matrices in <type>, conv kernels F16
//                  for q8_0, biases, norms and positions F32)
// The mel filterbank and the vocabulary come from a ggml-whisper file given
// with --vocab-from (whisper.cpp's for-tests-ggml-tiny.bin carries both).
// Its vocabulary is lossy (1476 byte tokens stored as U+FFFD), so --tiktoken
// (openai-whisper's rank file) supplies the exact token bytes for both
// outputs and for vocab.json, which is only written when it is given.
//
// Tests and test/reference/whisper_cpp_goldens.sh use it to give izwi and
// whisper.cpp identical weights. The weights are random and the model is
// untrained; config.json says so.
//
// Plain N(0, 1/fan_in) weights decode degenerately (one token repeated, or an
// immediate end of text), which makes a greedy comparison worthless. The scales
// below (from ../shared/references, checked against whisper.cpp) give varied
// tokens with confident top-1 margins: query/key gain 2, decoder attention
// output 0.2, decoder MLP output 8, token and positional embeddings of std 0.5;
// biases are non-zero and layer-norm weights 1 ± 0.05 so that a loader that
// drops one shows up as a mismatch.
//
//   izwi-make-random-whisper --out DIR --vocab-from for-tests-ggml-tiny.bin
//       [--tiktoken multilingual.tiktoken] [--shape tiny] [--seed 1] [--ggml-type f16,q8_0]
//       [--eot-scale S]  (the end-of-text embedding row times S: shorter greedy decodes)
//   izwi-make-random-whisper --mel-of audio.wav --mel-out mel.f32 [--n-mels 80] [--offset SECONDS]
//       (Whisper's log-mel of the 30-s window from SECONDS, zero-padded, [n_mels][3000] f32,
//       for the reference driver)
//   izwi-make-random-whisper --help
//
// Exit status: 0; 1 when reading or writing fails; 2 for a mistake on the
// command line, or a --vocab-from that does not fit the --shape.

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "izwi/audio/decode.hpp"
#include "izwi/audio/mel.hpp"
#include "izwi/core/half.hpp"
#include "izwi/io/ggml_whisper.hpp"
#include "izwi/io/quantize.hpp"
#include "izwi/io/safetensors.hpp"
#include "izwi/models/whisper.hpp"
#include "izwi/tokenizer/detail/byte_level.hpp"

#include "command_line.hpp"

namespace fs = std::filesystem;
namespace po = boost::program_options;
namespace cli = izwi::command_line;
using namespace izwi;

namespace {

struct Options {
  fs::path out, vocab_from, tiktoken, mel_of, mel_out;
  std::string shape = "tiny";
  WhisperConfig config;  // the --shape preset (checkpoint mode)
  std::uint64_t seed = 1;
  std::vector<std::string> ggml_types;  // --ggml-type's list: each f16 or q8_0
  std::uint32_t n_mels = 80;
  double offset_seconds = 0;
  double eot_scale = 1.0;
};

constexpr cli::Program program{
    "izwi-make-random-whisper",
    "izwi-make-random-whisper --out DIR --vocab-from ggml-whisper.bin [options]\n"
    "       izwi-make-random-whisper --mel-of AUDIO --mel-out FILE [--n-mels 80] [--offset SECONDS]",
    "writes a random-weight Whisper checkpoint, or a log-mel for the reference driver"};

/// "f16,q8_0" -> {"f16", "q8_0"}, checked before anything is written.
std::vector<std::string> ggml_types_of(const std::string& list) {
  std::vector<std::string> types;
  for (std::size_t at = 0; at < list.size();) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    const std::string name = list.substr(at, comma - at);
    at = comma + 1;
    if (name != "f16" && name != "q8_0")
      cli::usage_error(program, "--ggml-type takes f16 and/or q8_0, not '" + name + "'");
    types.push_back(name);
  }
  return types;
}

Options parse(int argc, char** argv) {
  Options o;
  std::string out, vocab_from, tiktoken, ggml_types, mel_of, mel_out;
  po::options_description checkpoint("checkpoint options");
  checkpoint.add_options()
      ("out", po::value(&out)->value_name("DIR"), "directory to write (required)")
      ("vocab-from", po::value(&vocab_from)->value_name("FILE"),
       "a ggml-whisper file with the mel filters and vocabulary (required; for-tests-ggml-tiny.bin)")
      ("tiktoken", po::value(&tiktoken)->value_name("FILE"),
       "openai-whisper's rank file: exact token bytes, and OUT/hf/vocab.json")
      ("shape", po::value(&o.shape)->value_name("NAME")->default_value(o.shape), "tiny, base, ..., large-v3-turbo")
      ("seed", po::value(&o.seed)->value_name("N")->default_value(o.seed), "random seed")
      ("ggml-type", po::value(&ggml_types)->value_name("f16,q8_0"),
       "also write OUT/ggml-model-<type>.bin for each type in the list")
      ("eot-scale", po::value(&o.eot_scale)->value_name("S")->default_value(o.eot_scale),
       "the end-of-text embedding row times S (negative: shorter greedy decodes)");
  po::options_description mel("log-mel options (for the reference driver)");
  mel.add_options()
      ("mel-of", po::value(&mel_of)->value_name("AUDIO"), "write the log-mel of this audio file instead")
      ("mel-out", po::value(&mel_out)->value_name("FILE"), "where: [n_mels][3000] f32 (required with --mel-of)")
      ("n-mels", po::value(&o.n_mels)->value_name("N")->default_value(o.n_mels), "mel bins")
      ("offset", po::value(&o.offset_seconds)->value_name("SECONDS")->default_value(o.offset_seconds),
       "start of the 30-s window");
  po::options_description options;
  options.add(checkpoint).add(mel).add_options()("help,h", "show this help");
  cli::read_command_line(argc, argv, program, options);
  // Paths are read as strings: a path's operator>> would stop at a space.
  o.out = out;
  o.vocab_from = vocab_from;
  o.tiktoken = tiktoken;
  o.mel_of = mel_of;
  o.mel_out = mel_out;
  if (!o.mel_of.empty()) {  // --mel-of takes precedence: the checkpoint options are not looked at
    if (o.mel_out.empty()) cli::usage_error(program, "--mel-of needs --mel-out FILE");
    return o;
  }
  if (o.out.empty() || o.vocab_from.empty()) cli::usage_error(program, "--out and --vocab-from are required");
  try {
    o.config = WhisperConfig::preset(o.shape);
  } catch (const izwi::invalid_argument& e) {
    cli::usage_error(program, std::string("--shape: ") + e.what());
  }
  o.ggml_types = ggml_types_of(ggml_types);
  return o;
}

/// One tensor by its OpenAI name, row-major f32.
struct Tensor {
  std::vector<std::uint64_t> shape;
  std::vector<float> values;
};

class Generator {
 public:
  explicit Generator(std::uint64_t seed) : rng_(seed) {}
  std::vector<float> normal(std::size_t n, double std_dev, double mean = 0.0) {
    std::normal_distribution<double> dist(mean, std_dev);
    std::vector<float> v(n);
    for (float& x : v) x = static_cast<float>(dist(rng_));
    return v;
  }

 private:
  std::mt19937_64 rng_;
};

/// Whisper's encoder positions: sin of the first half, cos of the second.
std::vector<float> sinusoids(std::size_t length, std::size_t channels) {
  std::vector<float> out(length * channels);
  const double increment = std::log(10000.0) / static_cast<double>(channels / 2 - 1);
  for (std::size_t t = 0; t < length; ++t)
    for (std::size_t i = 0; i < channels / 2; ++i) {
      const double angle = static_cast<double>(t) * std::exp(-increment * static_cast<double>(i));
      out[t * channels + i] = static_cast<float>(std::sin(angle));
      out[t * channels + channels / 2 + i] = static_cast<float>(std::cos(angle));
    }
  return out;
}

std::map<std::string, Tensor> make_weights(const WhisperConfig& c, Generator& g) {
  std::map<std::string, Tensor> w;
  const std::uint64_t d = c.d_model, f = c.ffn_dim;
  auto put = [&](const std::string& name, std::vector<std::uint64_t> shape, std::vector<float> v) {
    w[name] = Tensor{std::move(shape), std::move(v)};
  };
  auto linear = [&](const std::string& p, std::uint64_t out, std::uint64_t in, double gain, bool bias = true) {
    put(p + ".weight", {out, in}, g.normal(out * in, gain / std::sqrt(static_cast<double>(in))));
    if (bias) put(p + ".bias", {out}, g.normal(out, 0.02));
  };
  auto norm = [&](const std::string& p) {
    put(p + ".weight", {d}, g.normal(d, 0.05, 1.0));
    put(p + ".bias", {d}, g.normal(d, 0.02));
  };
  auto block = [&](const std::string& p, bool decoder) {
    const double out_gain = decoder ? 0.2 : 1.0;
    for (const char* attn : {"attn", "cross_attn"}) {
      if (!decoder && std::string(attn) == "cross_attn") continue;
      const std::string a = p + "." + attn;
      linear(a + ".query", d, d, 2.0);
      linear(a + ".key", d, d, 2.0, false);
      linear(a + ".value", d, d, 1.0);
      linear(a + ".out", d, d, out_gain);
      norm(p + "." + attn + "_ln");
    }
    linear(p + ".mlp.0", f, d, 1.0);
    linear(p + ".mlp.2", d, f, decoder ? 8.0 : 1.0);
    norm(p + ".mlp_ln");
  };
  put("encoder.conv1.weight", {d, c.n_mels, 3}, g.normal(d * c.n_mels * 3, 1.0 / std::sqrt(3.0 * c.n_mels)));
  put("encoder.conv1.bias", {d}, g.normal(d, 0.02));
  put("encoder.conv2.weight", {d, d, 3}, g.normal(d * d * 3, 1.0 / std::sqrt(3.0 * static_cast<double>(d))));
  put("encoder.conv2.bias", {d}, g.normal(d, 0.02));
  put("encoder.positional_embedding", {c.n_audio_ctx, d}, sinusoids(c.n_audio_ctx, d));
  for (std::uint32_t l = 0; l < c.encoder_layers; ++l) block("encoder.blocks." + std::to_string(l), false);
  norm("encoder.ln_post");
  put("decoder.token_embedding.weight", {c.vocab_size, d}, g.normal(c.vocab_size * d, 0.5));
  put("decoder.positional_embedding", {c.n_text_ctx, d}, g.normal(c.n_text_ctx * d, 0.5));
  for (std::uint32_t l = 0; l < c.decoder_layers; ++l) block("decoder.blocks." + std::to_string(l), true);
  norm("decoder.ln");
  return w;
}

/// --eot-scale: the end-of-text row of the (tied) token embedding times
/// `scale`, after every weight is drawn (the other weights are the same draws;
/// the default 1, what the goldens are made from, writes identical files). The
/// row stays a N(0, (0.5 scale)^2) draw; a negative scale flips the sign of the
/// end of text's logit, which for these weights is otherwise far below the top
/// one, so that greedy decoding ends after a few varied tokens instead of
/// running to the 224-token limit: the end-to-end tests' model (seed 1, -1.5)
/// decodes a window in tens of tokens rather than hundreds.
void scale_eot_row(std::map<std::string, Tensor>& weights, const WhisperConfig& c, double scale) {
  const auto eot = static_cast<std::size_t>(tokenizer::WhisperSpecialTokens::for_vocab_size(c.vocab_size).eot);
  auto& embedding = weights.at("decoder.token_embedding.weight").values;
  for (std::size_t i = 0; i < c.d_model; ++i) embedding[eot * c.d_model + i] *= static_cast<float>(scale);
}

std::span<const std::byte> as_bytes(const std::vector<float>& v) { return std::as_bytes(std::span(v)); }

void write_hf(const fs::path& dir, const WhisperConfig& c, const std::map<std::string, Tensor>& weights,
              const std::vector<std::string>* exact_vocabulary) {
  fs::create_directories(dir);
  std::vector<io::TensorToWrite> tensors;
  for (const auto& [name, t] : weights)
    tensors.push_back({detail::whisper::hf_tensor_name(name), DType::f32, t.shape, as_bytes(t.values)});
  io::write_safetensors(dir / "model.safetensors", tensors, {{"format", "pt"}});
  const auto special = tokenizer::WhisperSpecialTokens::for_vocab_size(c.vocab_size);
  std::ofstream(dir / "config.json")
      << "{\n  \"_comment\": \"random weights written by izwi-make-random-whisper: an untrained model\",\n"
      << "  \"architectures\": [\"WhisperForConditionalGeneration\"],\n  \"model_type\": \"whisper\",\n"
      << "  \"d_model\": " << c.d_model << ",\n  \"encoder_layers\": " << c.encoder_layers
      << ",\n  \"encoder_attention_heads\": " << c.encoder_heads << ",\n  \"decoder_layers\": " << c.decoder_layers
      << ",\n  \"decoder_attention_heads\": " << c.decoder_heads << ",\n  \"encoder_ffn_dim\": " << c.ffn_dim
      << ",\n  \"decoder_ffn_dim\": " << c.ffn_dim << ",\n  \"num_mel_bins\": " << c.n_mels
      << ",\n  \"max_source_positions\": " << c.n_audio_ctx << ",\n  \"max_target_positions\": " << c.n_text_ctx
      << ",\n  \"vocab_size\": " << c.vocab_size
      << ",\n  \"activation_function\": \"gelu\",\n  \"scale_embedding\": false,\n  \"torch_dtype\": \"float32\",\n"
      << "  \"bos_token_id\": " << special.eot << ",\n  \"eos_token_id\": " << special.eot
      << ",\n  \"pad_token_id\": " << special.eot << ",\n  \"decoder_start_token_id\": " << special.sot << "\n}\n";
  std::ofstream gen(dir / "generation_config.json");
  gen << "{\n  \"decoder_start_token_id\": " << special.sot << ",\n  \"eos_token_id\": " << special.eot
      << ",\n  \"pad_token_id\": " << special.eot << ",\n  \"max_length\": " << c.n_text_ctx
      << ",\n  \"no_timestamps_token_id\": " << special.no_timestamps
      << ",\n  \"is_multilingual\": " << (special.multilingual ? "true" : "false")
      << ",\n  \"begin_suppress_tokens\": [220, " << special.eot << "]"
      // The first entries of openai/whisper-*'s list (non-speech symbols).
      << ",\n  \"suppress_tokens\": [1, 2, 7, 8, 9, 10, 14, 25, 26, 27, 28, 29, 31, 58, 59, 60, 61, 62, 63, 90, 91, 92, 93]"
      << ",\n  \"alignment_heads\": [[" << c.decoder_layers - 1 << ", 0], [" << c.decoder_layers / 2 << ", "
      << c.decoder_heads - 1 << "]]"
      << ",\n  \"lang_to_id\": {";
  for (std::size_t i = 0; i < special.num_languages; ++i)
    gen << (i ? ", " : "") << "\"<|" << tokenizer::whisper_languages[i] << "|>\": " << special.sot + 1 + static_cast<TokenId>(i);
  gen << "}\n}\n";
  // vocab.json in the byte-level spelling transformers uses.
  if (exact_vocabulary == nullptr) return;
  const auto& alphabet = tokenizer::detail::byte_level_alphabet();
  std::ofstream vocab(dir / "vocab.json");
  vocab << "{";
  for (std::size_t id = 0; id < exact_vocabulary->size() && id < special.num_text_tokens(); ++id) {
    std::string spelling;
    for (unsigned char b : (*exact_vocabulary)[id]) spelling += alphabet.utf8_of_byte[b];
    vocab << (id ? ",\n" : "\n") << io::json_quote(spelling) << ": " << id;
  }
  vocab << "\n}\n";
}

/// The ggml element type whisper.cpp gives a tensor in a file of `type`.
DType ggml_tensor_type(const std::string& name, const Tensor& t, DType type) {
  const bool is_f32_tensor = t.shape.size() < 2 || name == "encoder.positional_embedding" ||
                             name == "decoder.positional_embedding";
  if (is_f32_tensor) return DType::f32;
  if (type == DType::q8_0 && (t.shape.size() != 2 || t.shape.back() % 32 != 0)) return DType::f16;
  return type;
}

void write_ggml(const fs::path& file, const WhisperConfig& c, const std::map<std::string, Tensor>& weights,
                const io::GgmlWhisperFile& vocab_file, std::span<const std::string> vocabulary, DType type) {
  io::GgmlWhisperHparams h;
  h.n_vocab = static_cast<std::int32_t>(c.vocab_size);
  h.n_audio_ctx = static_cast<std::int32_t>(c.n_audio_ctx);
  h.n_audio_state = h.n_text_state = static_cast<std::int32_t>(c.d_model);
  h.n_audio_head = h.n_text_head = static_cast<std::int32_t>(c.encoder_heads);
  h.n_audio_layer = static_cast<std::int32_t>(c.encoder_layers);
  h.n_text_layer = static_cast<std::int32_t>(c.decoder_layers);
  h.n_text_ctx = static_cast<std::int32_t>(c.n_text_ctx);
  h.n_mels = static_cast<std::int32_t>(c.n_mels);
  h.ftype = type == DType::f32 ? 0 : type == DType::f16 ? 1 : 1007;  // whisper.cpp: GGML_FTYPE_MOSTLY_Q8_0 = 7, qnt version 1
  std::vector<std::vector<std::byte>> storage;
  std::vector<io::GgmlTensorToWrite> tensors;
  for (const auto& [name, t] : weights) {
    const DType dt = ggml_tensor_type(name, t, type);
    std::vector<std::byte> bytes;
    if (dt == DType::f32) {
      bytes.assign(as_bytes(t.values).begin(), as_bytes(t.values).end());
    } else if (dt == DType::f16) {
      bytes.resize(t.values.size() * 2);
      f32_to_f16(t.values.data(), reinterpret_cast<std::uint16_t*>(bytes.data()), t.values.size());
    } else {
      bytes = io::quantize_q8_0(t.values);
    }
    storage.push_back(std::move(bytes));
    // Conv biases are [n, 1] in whisper.cpp's files.
    auto shape = t.shape;
    if (name == "encoder.conv1.bias" || name == "encoder.conv2.bias") shape = {t.shape[0], 1};
    tensors.push_back({name, dt, shape, storage.back()});
  }
  io::write_ggml_whisper(file, h, vocab_file.mel_filters(), vocab_file.mel_bins(), vocab_file.mel_fft_bins(),
                         vocabulary, tensors);
}

int write_mel(const Options& o) {
  audio::DecodeOptions decode;
  decode.target_sample_rate = audio::whisper_sample_rate;
  const auto decoded = audio::decode_file(o.mel_of, decode);
  const auto skip = std::min(decoded.audio.samples.size(),
                             static_cast<std::size_t>(o.offset_seconds * audio::whisper_sample_rate));
  const std::span<const float> window = std::span(decoded.audio.samples).subspan(skip);
  const audio::LogMelSpectrogram mel = audio::WhisperLogMel(o.n_mels)(window);
  std::ofstream out(o.mel_out, std::ios::binary);
  out.write(reinterpret_cast<const char*>(mel.values.data()), static_cast<std::streamsize>(mel.values.size() * 4));
  std::cout << "wrote " << o.mel_out.string() << ": " << mel.n_mels << " x " << mel.n_frames << " f32\n";
  return out ? 0 : 1;
}

/// The checkpoint: OUT/hf/ and OUT/ggml-model[-<type>].bin from one draw of the weights.
int write_checkpoint(const Options& o) {
  const WhisperConfig& config = o.config;
  const io::GgmlWhisperFile vocab_file = io::GgmlWhisperFile::open(o.vocab_from);
  if (vocab_file.mel_bins() != config.n_mels)
    cli::usage_error(program, o.vocab_from.string() + " has " + std::to_string(vocab_file.mel_bins()) +
                                  " mel filters; the " + o.shape + " shape needs " + std::to_string(config.n_mels));
  if (vocab_file.hparams().n_vocab != static_cast<std::int32_t>(config.vocab_size))
    cli::usage_error(program, o.vocab_from.string() + " is for n_vocab " +
                                  std::to_string(vocab_file.hparams().n_vocab) + ", the " + o.shape + " shape has " +
                                  std::to_string(config.vocab_size));
  std::vector<std::string> vocabulary(vocab_file.vocabulary().begin(), vocab_file.vocabulary().end());
  if (!o.tiktoken.empty()) {
    const auto exact = tokenizer::WhisperTokenizer::from_tiktoken(o.tiktoken, config.vocab_size);
    for (std::size_t id = 0; id < vocabulary.size(); ++id) vocabulary[id] = exact.token_text(static_cast<TokenId>(id));
  }
  Generator g(o.seed);
  auto weights = make_weights(config, g);
  if (o.eot_scale != 1.0) scale_eot_row(weights, config, o.eot_scale);
  fs::create_directories(o.out);
  write_hf(o.out / "hf", config, weights, o.tiktoken.empty() ? nullptr : &vocabulary);
  write_ggml(o.out / "ggml-model.bin", config, weights, vocab_file, vocabulary, DType::f32);
  for (const std::string& name : o.ggml_types)
    write_ggml(o.out / ("ggml-model-" + name + ".bin"), config, weights, vocab_file, vocabulary,
               name == "f16" ? DType::f16 : DType::q8_0);
  std::cout << "wrote " << o.out.string() << " (Whisper " << o.shape << " shape, random weights)\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  return o.mel_of.empty() ? write_checkpoint(o) : write_mel(o);
} catch (const std::exception& e) {
  std::cerr << "izwi-make-random-whisper: " << e.what() << "\n";
  return 1;
}
