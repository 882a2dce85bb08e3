// izwi-make-random-qwen3: writes a Qwen3 checkpoint with random weights and the
// real topology, as a Hugging Face model directory (config.json,
// generation_config.json, tokenizer.json, tokenizer_config.json,
// model.safetensors) and, beside it, the same weights as GGUF (model.gguf, with
// the tokenizer's vocabulary in its metadata, as llama.cpp expects).
//
// Tests use it to give izwi and llama.cpp identical weights; izwi-server's main
// job uses it to have something to serve on a machine without downloads. The
// weights are random: the model is untrained, and says so in config.json.
//
//   izwi-make-random-qwen3 --out DIR --tokenizer tokenizer.json
//       [--hidden 256] [--layers 4] [--heads 4] [--kv-heads 2] [--head-dim 64]
//       [--intermediate 512] [--vocab N] [--seed 1] [--dtype f32|bf16]
//       [--gguf-type f32|f16|bf16|q8_0] [--logit-scale 1.0] [--untied] [--gguf-only]
//
// --logit-scale sets the standard deviation of the embedding (and lm_head)
// rows. Random weights give nearly uniform logits, where tiny floating-point
// differences flip near-ties; a larger scale widens the top-1 margin so two
// implementations can agree on greedy ids (DESIGN §6).

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "izwi/io/config.hpp"
#include "izwi/io/gguf.hpp"
#include "izwi/io/gguf_qwen3.hpp"
#include "izwi/io/json.hpp"
#include "izwi/io/safetensors.hpp"

#include <boost/program_options.hpp>

namespace fs = std::filesystem;
namespace po = boost::program_options;
using namespace izwi;

namespace {

struct Options {
  fs::path out;
  fs::path tokenizer;
  std::uint32_t hidden = 256, layers = 4, heads = 4, kv_heads = 2, head_dim = 64, intermediate = 512;
  std::uint32_t vocab = 151936;  // Qwen3's published vocab_size (the tokenizer's 151669 ids, padded)
  std::uint64_t seed = 1;
  std::string dtype = "f32";
  std::string gguf_type = "f32";
  double logit_scale = 1.0;
  bool tied = true;
  bool write_safetensors = true;
};

constexpr const char* program = "izwi-make-random-qwen3";

[[noreturn]] void usage(const std::string& problem, const po::options_description& options) {
  std::cerr << program << ": " << problem << "\nusage: " << program << " --out DIR --tokenizer tokenizer.json [options]\n"
            << options;
  std::exit(2);
}

[[noreturn]] void usage(const std::string& problem) {
  std::cerr << program << ": " << problem << "\n(" << program << " --help lists the options)\n";
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  std::string out, tokenizer;
  po::options_description options("options");
  options.add_options()
      ("out", po::value(&out)->value_name("DIR"), "directory to write (required)")
      ("tokenizer", po::value(&tokenizer)->value_name("FILE"), "a Qwen3 tokenizer.json (required)")
      ("hidden", po::value(&o.hidden)->value_name("N")->default_value(o.hidden), "hidden size")
      ("layers", po::value(&o.layers)->value_name("N")->default_value(o.layers), "decoder layers")
      ("heads", po::value(&o.heads)->value_name("N")->default_value(o.heads), "attention heads")
      ("kv-heads", po::value(&o.kv_heads)->value_name("N")->default_value(o.kv_heads), "key/value heads")
      ("head-dim", po::value(&o.head_dim)->value_name("N")->default_value(o.head_dim), "head dimension")
      ("intermediate", po::value(&o.intermediate)->value_name("N")->default_value(o.intermediate), "MLP size")
      ("vocab", po::value(&o.vocab)->value_name("N")->default_value(o.vocab), "vocabulary rows (covers every tokenizer id)")
      ("seed", po::value(&o.seed)->value_name("N")->default_value(o.seed), "random seed")
      ("dtype", po::value(&o.dtype)->value_name("f32|bf16")->default_value(o.dtype), "safetensors dtype")
      ("gguf-type", po::value(&o.gguf_type)->value_name("f32|f16|bf16|q8_0")->default_value(o.gguf_type), "GGUF weight type")
      ("logit-scale", po::value(&o.logit_scale)->value_name("X")->default_value(o.logit_scale),
       "standard deviation of the embedding rows (wider top-1 margins)")
      ("untied", po::bool_switch(), "write a separate lm_head")
      ("gguf-only", po::bool_switch(), "write model.gguf only, no safetensors")
      ("help,h", "show this help");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, options), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    usage(e.what(), options);
  }
  if (vm.count("help")) {
    std::cout << program << ": writes a random-weight Qwen3 checkpoint\nusage: " << program
              << " --out DIR --tokenizer tokenizer.json [options]\n" << options;
    std::exit(0);
  }
  o.out = out;
  o.tokenizer = tokenizer;
  o.tied = !vm["untied"].as<bool>();
  o.write_safetensors = !vm["gguf-only"].as<bool>();
  if (o.out.empty()) usage("--out is required", options);
  if (o.tokenizer.empty()) usage("--tokenizer is required (a Qwen3 tokenizer.json)", options);
  if (o.dtype != "f32" && o.dtype != "bf16") usage("--dtype must be f32 or bf16", options);
  if (o.kv_heads == 0 || o.heads % o.kv_heads != 0) usage("--heads must be a multiple of --kv-heads", options);
  return o;
}

/// The vocabulary of a tokenizer.json as GGUF stores it.
io::GgufVocabulary vocabulary_of(const io::JsonValue& tokenizer, std::uint32_t vocab_size) {
  io::GgufVocabulary v;
  const io::JsonValue& model = *io::json_find(tokenizer, "model");
  std::vector<std::string> tokens(vocab_size);
  std::vector<io::GgufTokenType> types(vocab_size, io::GgufTokenType::unused);
  std::vector<bool> filled(vocab_size, false);
  for (const auto& [token, id] : io::json_find(model, "vocab")->as_object()) {
    const auto i = static_cast<std::size_t>(id.as_int64());
    if (i >= vocab_size) continue;
    tokens[i] = std::string(token);
    types[i] = io::GgufTokenType::normal;
    filled[i] = true;
  }
  if (const io::JsonValue* added = io::json_find(tokenizer, "added_tokens"))
    for (const io::JsonValue& t : added->as_array()) {
      const auto i = static_cast<std::size_t>(io::json_find(t, "id")->as_int64());
      if (i >= vocab_size) continue;
      tokens[i] = std::string(*io::json_string(*io::json_find(t, "content")));
      const io::JsonValue* special_flag = io::json_find(t, "special");
      const bool special = special_flag && special_flag->as_bool();
      types[i] = special ? io::GgufTokenType::control : io::GgufTokenType::user_defined;
      filled[i] = true;
    }
  for (std::size_t i = 0; i < vocab_size; ++i)
    if (!filled[i]) tokens[i] = "[PAD" + std::to_string(i) + "]";
  for (const io::JsonValue& merge : io::json_find(model, "merges")->as_array()) {
    if (merge.is_string()) {
      v.merges.emplace_back(*io::json_string(merge));
    } else {  // newer tokenizers.json: ["left", "right"]
      const auto& pair = merge.as_array();
      v.merges.push_back(std::string(*io::json_string(pair.at(0))) + " " + std::string(*io::json_string(pair.at(1))));
    }
  }
  v.tokens = std::move(tokens);
  v.token_types = std::move(types);
  return v;
}

std::uint16_t to_bf16(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits += 0x7fff + ((bits >> 16) & 1);  // round to nearest even
  return static_cast<std::uint16_t>(bits >> 16);
}

io::GgmlType gguf_type_of(const std::string& name) {
  if (name == "f32") return io::GgmlType::f32;
  if (name == "f16") return io::GgmlType::f16;
  if (name == "bf16") return io::GgmlType::bf16;
  if (name == "q8_0") return io::GgmlType::q8_0;
  usage("--gguf-type must be f32, f16, bf16 or q8_0");
}

io::GgufFileType file_type_of(io::GgmlType t) {
  switch (t) {
    case io::GgmlType::f16: return io::GgufFileType::mostly_f16;
    case io::GgmlType::bf16: return io::GgufFileType::mostly_bf16;
    case io::GgmlType::q8_0: return io::GgufFileType::mostly_q8_0;
    default: return io::GgufFileType::all_f32;
  }
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

/// Qwen3's special ids, as the published tokenizer numbers them.
constexpr std::uint32_t eos_id = 151645, bos_id = 151643;  // <|im_end|>, <|endoftext|>

/// Name -> (shape, values), in the Hugging Face names.
using Tensors = std::map<std::string, std::pair<std::vector<std::uint64_t>, std::vector<float>>>;

void check_vocab_covers(const io::JsonValue& tokenizer, std::uint32_t vocab) {
  std::size_t largest = 0;
  for (const auto& [token, id] : io::json_find(*io::json_find(tokenizer, "model"), "vocab")->as_object())
    largest = std::max<std::size_t>(largest, static_cast<std::size_t>(id.as_int64()));
  if (const io::JsonValue* added = io::json_find(tokenizer, "added_tokens"))
    for (const io::JsonValue& t : added->as_array())
      largest = std::max<std::size_t>(largest, static_cast<std::size_t>(io::json_find(t, "id")->as_int64()));
  if (vocab <= largest) usage("--vocab must cover every id of the tokenizer");
}

/// config.json with Qwen3's keys, the generation defaults of the published
/// models, and the tokenizer files beside them.
void write_config_files(const Options& o) {
  char config[2048];
  std::snprintf(config, sizeof config,
                "{\n  \"architectures\": [\"Qwen3ForCausalLM\"],\n  \"model_type\": \"qwen3\",\n"
                "  \"_izwi_note\": \"random weights (izwi-make-random-qwen3, seed %llu): an untrained model\",\n"
                "  \"hidden_size\": %u,\n  \"num_hidden_layers\": %u,\n  \"num_attention_heads\": %u,\n"
                "  \"num_key_value_heads\": %u,\n  \"head_dim\": %u,\n  \"intermediate_size\": %u,\n"
                "  \"vocab_size\": %u,\n  \"max_position_embeddings\": 40960,\n  \"rope_theta\": 1000000,\n"
                "  \"rms_norm_eps\": 1e-06,\n  \"tie_word_embeddings\": %s,\n  \"attention_bias\": false,\n"
                "  \"hidden_act\": \"silu\",\n  \"torch_dtype\": \"%s\",\n  \"bos_token_id\": %u,\n"
                "  \"eos_token_id\": %u,\n  \"rope_scaling\": null,\n  \"use_sliding_window\": false\n}\n",
                static_cast<unsigned long long>(o.seed), o.hidden, o.layers, o.heads, o.kv_heads, o.head_dim,
                o.intermediate, o.vocab, o.tied ? "true" : "false", o.dtype == "bf16" ? "bfloat16" : "float32", bos_id,
                eos_id);
  write_text(o.out / "config.json", config);
  write_text(o.out / "generation_config.json",
             "{\n  \"bos_token_id\": 151643,\n  \"eos_token_id\": [151645, 151643],\n  \"pad_token_id\": 151643,\n"
             "  \"do_sample\": true,\n  \"temperature\": 0.6,\n  \"top_k\": 20,\n  \"top_p\": 0.95\n}\n");
  fs::copy_file(o.tokenizer, o.out / "tokenizer.json", fs::copy_options::overwrite_existing);
  const fs::path tokenizer_config = o.tokenizer.parent_path() / "tokenizer_config.json";
  if (fs::exists(tokenizer_config))
    fs::copy_file(tokenizer_config, o.out / "tokenizer_config.json", fs::copy_options::overwrite_existing);
}

/// Projections normal(0, 0.1) -- larger than transformers' 0.02 initializer
/// so that attention and MLP outputs move the residual stream and the output
/// depends on the context, not only on the last token -- norms near 1,
/// embeddings (and lm_head) at --logit-scale.
Tensors random_tensors(const Options& o) {
  constexpr double kProjectionStd = 0.1;
  std::mt19937_64 rng(o.seed);
  Tensors tensors;
  auto add = [&](const std::string& name, std::vector<std::uint64_t> shape, double mean, double stddev) {
    std::size_t n = 1;
    for (auto d : shape) n *= d;
    std::normal_distribution<float> dist(static_cast<float>(mean), static_cast<float>(stddev));
    std::vector<float> values(n);
    for (float& x : values) x = dist(rng);
    tensors[name] = {std::move(shape), std::move(values)};
  };
  const std::uint64_t h = o.hidden, q = std::uint64_t{o.heads} * o.head_dim, kv = std::uint64_t{o.kv_heads} * o.head_dim;
  add("model.embed_tokens.weight", {o.vocab, h}, 0.0, o.logit_scale);
  for (std::uint32_t l = 0; l < o.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {h}, 1.0, 0.1);
    add(p + "post_attention_layernorm.weight", {h}, 1.0, 0.1);
    add(p + "self_attn.q_proj.weight", {q, h}, 0.0, kProjectionStd);
    add(p + "self_attn.k_proj.weight", {kv, h}, 0.0, kProjectionStd);
    add(p + "self_attn.v_proj.weight", {kv, h}, 0.0, kProjectionStd);
    add(p + "self_attn.o_proj.weight", {h, q}, 0.0, kProjectionStd);
    add(p + "self_attn.q_norm.weight", {o.head_dim}, 1.0, 0.1);
    add(p + "self_attn.k_norm.weight", {o.head_dim}, 1.0, 0.1);
    add(p + "mlp.gate_proj.weight", {o.intermediate, h}, 0.0, kProjectionStd);
    add(p + "mlp.up_proj.weight", {o.intermediate, h}, 0.0, kProjectionStd);
    add(p + "mlp.down_proj.weight", {h, o.intermediate}, 0.0, kProjectionStd);
  }
  add("model.norm.weight", {h}, 1.0, 0.1);
  if (!o.tied) add("lm_head.weight", {o.vocab, h}, 0.0, o.logit_scale);
  return tensors;
}

/// model.safetensors: f32, or bf16 rounded to nearest even as torch does.
void write_safetensors_file(const Options& o, const Tensors& tensors) {
  std::vector<std::vector<std::uint16_t>> bf16_storage;
  std::vector<io::TensorToWrite> to_write;
  for (const auto& [name, tensor] : tensors) {
    io::TensorToWrite t;
    t.name = name;
    t.shape = tensor.first;
    if (o.dtype == "bf16") {
      auto& converted = bf16_storage.emplace_back(tensor.second.size());
      for (std::size_t i = 0; i < converted.size(); ++i) converted[i] = to_bf16(tensor.second[i]);
      t.dtype = DType::bf16;
      t.data = std::as_bytes(std::span(converted));
    } else {
      t.dtype = DType::f32;
      t.data = std::as_bytes(std::span(tensor.second));
    }
    to_write.push_back(std::move(t));
  }
  io::write_safetensors(o.out / "model.safetensors", to_write, {{"format", "pt"}});
}

/// model.gguf with the same weights in --gguf-type (norms stay f32, as
/// llama.cpp's converter keeps 1-D tensors), the vocabulary and Qwen3's metadata.
void write_gguf_file(const Options& o, const Tensors& tensors, const io::JsonValue& tokenizer) {
  const io::GgmlType type = gguf_type_of(o.gguf_type);
  io::GgufWriter gguf;
  const io::TransformerConfig cfg = io::TransformerConfig::from(
      io::ConfigView(io::read_json_file(o.out / "config.json"), (o.out / "config.json").string()));
  io::GgufVocabulary vocabulary = vocabulary_of(tokenizer, o.vocab);
  vocabulary.bos_token_id = bos_id;
  vocabulary.eos_token_id = eos_id;
  vocabulary.padding_token_id = bos_id;
  io::add_qwen3_metadata(gguf, cfg, vocabulary, file_type_of(type), "izwi-random-qwen3");
  for (const auto& [name, tensor] : tensors) {
    const auto gguf_name = io::qwen3_gguf_tensor_name(name);
    if (!gguf_name) throw std::runtime_error("no GGUF name for " + name);
    const bool one_dimensional = tensor.first.size() == 1;
    std::vector<float> values = tensor.second;
    if (o.dtype == "bf16")  // the GGUF holds exactly what the safetensors hold
      for (float& x : values) {
        const std::uint32_t bits = std::uint32_t{to_bf16(x)} << 16;
        std::memcpy(&x, &bits, 4);
      }
    gguf.add_tensor(*gguf_name, one_dimensional ? io::GgmlType::f32 : type, tensor.first, values);
  }
  gguf.write(o.out / "model.gguf");
}

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  const io::JsonValue tokenizer = io::read_json_file(o.tokenizer);
  check_vocab_covers(tokenizer, o.vocab);
  fs::create_directories(o.out);
  write_config_files(o);
  const Tensors tensors = random_tensors(o);
  if (o.write_safetensors) write_safetensors_file(o, tensors);
  write_gguf_file(o, tensors, tokenizer);
  std::cout << "wrote a random-weight Qwen3 (hidden " << o.hidden << ", " << o.layers << " layers, " << o.heads
            << "/" << o.kv_heads << " heads, head_dim " << o.head_dim << ", vocab " << o.vocab << ") to " << o.out
            << "\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "izwi-make-random-qwen3: " << e.what() << "\n";
  return 1;
}
