#pragma once
// Whisper: loading from a Hugging Face directory or a ggml-whisper file.
// Inline in header-only builds; compiled once, in <izwi/src.hpp>, under
// IZWI_SEPARATE_COMPILATION (see izwi/config.hpp).

#include "izwi/config.hpp"
#include "izwi/models/whisper.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <utility>

#include "izwi/core/detail/huge_page_buffer.hpp"
#include "izwi/core/error.hpp"
#include "izwi/io/config.hpp"
#include "izwi/io/format_error.hpp"
#include "izwi/io/ggml_whisper.hpp"
#include "izwi/io/json.hpp"
#include "izwi/io/model_directory.hpp"

namespace izwi {

IZWI_DECL WhisperConfig WhisperConfig::from_hf_config(const std::filesystem::path& config_json) {
  const io::JsonValue doc = io::read_json_file(config_json);
  const io::ConfigView v(doc, config_json.string());
  WhisperConfig c;
  c.d_model = v.required<std::uint32_t>("d_model");
  c.encoder_layers = v.required<std::uint32_t>("encoder_layers");
  c.encoder_heads = v.required<std::uint32_t>("encoder_attention_heads");
  c.decoder_layers = v.required<std::uint32_t>("decoder_layers");
  c.decoder_heads = v.required<std::uint32_t>("decoder_attention_heads");
  c.ffn_dim = v.required<std::uint32_t>("encoder_ffn_dim");
  if (v.optional<std::uint32_t>("decoder_ffn_dim", c.ffn_dim) != c.ffn_dim)
    throw v.make_error("decoder_ffn_dim", "must equal encoder_ffn_dim");
  c.n_mels = v.optional<std::uint32_t>("num_mel_bins", 80);
  c.n_audio_ctx = v.optional<std::uint32_t>("max_source_positions", 1500);
  c.n_text_ctx = v.optional<std::uint32_t>("max_target_positions", 448);
  c.vocab_size = v.required<std::uint32_t>("vocab_size");
  if (const auto act = v.optional<std::string>("activation_function", "gelu"); act != "gelu")
    throw v.make_error("activation_function", "'" + act + "' is not supported (Whisper uses gelu)");
  if (v.optional<bool>("scale_embedding", false)) throw v.make_error("scale_embedding", "true is not supported");
  c.validate();
  return c;
}

namespace detail::whisper {

/// transformers' name of an OpenAI/ggml Whisper tensor name.
IZWI_DECL std::string hf_tensor_name(std::string_view openai) {
  std::string s(openai);
  auto replace = [&s](std::string_view from, std::string_view to) {
    if (auto at = s.find(from); at != std::string::npos) s.replace(at, from.size(), to);
  };
  if (s == "encoder.positional_embedding") return "model.encoder.embed_positions.weight";
  if (s == "decoder.positional_embedding") return "model.decoder.embed_positions.weight";
  replace("decoder.token_embedding.", "decoder.embed_tokens.");
  replace("encoder.ln_post.", "encoder.layer_norm.");
  replace("decoder.ln.", "decoder.layer_norm.");
  replace(".blocks.", ".layers.");
  for (auto [from, to] : {std::pair<std::string_view, std::string_view>{".cross_attn.query.", ".encoder_attn.q_proj."},
                          {".cross_attn.key.", ".encoder_attn.k_proj."},
                          {".cross_attn.value.", ".encoder_attn.v_proj."},
                          {".cross_attn.out.", ".encoder_attn.out_proj."},
                          {".cross_attn_ln.", ".encoder_attn_layer_norm."},
                          {".attn.query.", ".self_attn.q_proj."},
                          {".attn.key.", ".self_attn.k_proj."},
                          {".attn.value.", ".self_attn.v_proj."},
                          {".attn.out.", ".self_attn.out_proj."},
                          {".attn_ln.", ".self_attn_layer_norm."},
                          {".mlp.0.", ".fc1."},
                          {".mlp.2.", ".fc2."},
                          {".mlp_ln.", ".final_layer_norm."}})
    replace(from, to);
  return "model." + s;
}

/// One stored tensor, whichever format holds it.
struct StoredTensor {
  DType dtype = DType::f32;
  std::vector<std::uint64_t> shape;
  std::span<const std::byte> bytes;
};

/// 64-byte aligned copies of every weight, packed into huge-page memory (the
/// decoder streams its weights once per token, as Qwen3's do: see
/// io/file_memory.hpp); the matrices point into them.
struct AlignedArena {
  static constexpr std::size_t alignment = 64;
  static constexpr std::size_t chunk_bytes = std::size_t{64} << 20;  // a weight larger gets a chunk of its own
  std::vector<izwi::detail::HugePageBuffer> chunks;
  std::size_t used = 0;  // of chunks.back()

  const std::byte* copy(std::span<const std::byte> bytes) {
    const std::size_t need = (std::max<std::size_t>(bytes.size(), 1) + alignment - 1) / alignment * alignment;
    if (chunks.empty() || used + need > chunks.back().size()) {
      chunks.emplace_back(std::max(chunk_bytes, need), "a Whisper model's weights");
      used = 0;
    }
    std::byte* out = chunks.back().data() + used;
    if (!bytes.empty()) std::memcpy(out, bytes.data(), bytes.size());
    used += need;
    return out;
  }
};

}  // namespace detail::whisper

IZWI_DECL WhisperGenerationConfig WhisperGenerationConfig::openai_defaults(const tokenizer::WhisperTokenizer& tokenizer) {
  const tokenizer::WhisperSpecialTokens& s = tokenizer.special();
  WhisperGenerationConfig g;
  g.suppress_tokens = tokenizer.non_speech_tokens();
  for (TokenId id : {s.sot, s.translate, s.transcribe, s.sot_lm, s.sot_prev, s.no_speech}) g.suppress_tokens.push_back(id);
  std::sort(g.suppress_tokens.begin(), g.suppress_tokens.end());
  g.suppress_tokens.erase(std::unique(g.suppress_tokens.begin(), g.suppress_tokens.end()), g.suppress_tokens.end());
  g.begin_suppress_tokens = tokenizer.encode(" ");
  g.begin_suppress_tokens.push_back(s.eot);
  return g;
}

/// generation_config.json: suppress lists and alignment heads, and a check
/// that its language and timestamp ids are the ones the vocabulary size implies.
IZWI_DECL WhisperGenerationConfig read_whisper_generation_config(const std::filesystem::path& file,
                                                      const tokenizer::WhisperSpecialTokens& special) {
  const io::JsonValue doc = io::read_json_file(file);
  const io::ConfigView v(doc, file.string());
  WhisperGenerationConfig g;
  auto ids = [&](std::string_view key) {
    std::vector<TokenId> out;
    for (std::int64_t id : v.optional<std::vector<std::int64_t>>(key, {})) {
      if (id < 0 || static_cast<std::size_t>(id) >= special.vocab_size)
        throw v.make_error(key, "token id " + std::to_string(id) + " outside the vocabulary");
      out.push_back(static_cast<TokenId>(id));
    }
    return out;
  };
  g.suppress_tokens = ids("suppress_tokens");
  g.begin_suppress_tokens = ids("begin_suppress_tokens");
  if (const io::JsonValue* heads = v.find("alignment_heads"); heads != nullptr && heads->is_array())
    for (const io::JsonValue& pair : heads->as_array()) {
      const auto layer = pair.is_array() && pair.as_array().size() == 2 ? io::json_integer(pair.as_array()[0])
                                                                        : std::nullopt;
      const auto head = layer ? io::json_integer(pair.as_array()[1]) : std::nullopt;
      if (!layer || !head || *layer < 0 || *head < 0)
        throw v.make_error("alignment_heads", "entries must be [layer, head] pairs");
      g.alignment_heads.emplace_back(static_cast<std::uint32_t>(*layer), static_cast<std::uint32_t>(*head));
    }
  if (const io::JsonValue* langs = v.find("lang_to_id"); langs != nullptr && langs->is_object())
    for (const auto& [key, id] : langs->as_object()) {
      const std::string token(key.data(), key.size());
      const std::string code = token.size() > 4 ? token.substr(2, token.size() - 4) : token;
      const auto expected = special.language_token(code);
      if (!expected || io::json_integer(id) != std::optional<std::int64_t>(*expected))
        throw v.make_error("lang_to_id", token + " does not have the id a " + std::to_string(special.vocab_size) +
                                             "-token Whisper vocabulary gives it");
    }
  if (const auto nt = v.optional<std::int64_t>("no_timestamps_token_id"); nt && *nt != special.no_timestamps)
    throw v.make_error("no_timestamps_token_id", "is " + std::to_string(*nt) + ", the vocabulary implies " +
                                                     std::to_string(special.no_timestamps));
  return g;
}

namespace detail::whisper {

/// Builds a Whisper from a tensor lookup (OpenAI names) and a configuration.
struct Loader {
  using Lookup = std::function<StoredTensor(const std::string& openai_name)>;

  const WhisperConfig& config;
  const Lookup& lookup;
  const std::string& file;
  AlignedArena& arena;

  StoredTensor checked(const std::string& name, std::vector<std::uint64_t> shape) const {
    StoredTensor t = lookup(name);
    // Biases and vectors may be stored with extra unit dimensions (ggml's conv biases are [n, 1]).
    auto squeeze = [](std::vector<std::uint64_t> s) {
      std::erase(s, std::uint64_t{1});
      return s;
    };
    if (squeeze(t.shape) != squeeze(shape)) {
      auto show = [](const std::vector<std::uint64_t>& s) {
        std::string out = "[";
        for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
        return out + "]";
      };
      throw io::format_error(file, name, "shape " + show(t.shape) + ", expected " + show(shape));
    }
    return t;
  }

  kernels::cpu::WeightMatrix matrix(const std::string& name, std::uint64_t rows, std::uint64_t cols,
                                    std::vector<std::uint64_t> shape = {}) const {
    auto t = checked(name, shape.empty() ? std::vector<std::uint64_t>{rows, cols} : std::move(shape));
    if (t.dtype == DType::q8_0 && cols % 32 != 0)
      throw io::format_error(file, name, "q8_0 rows must be a multiple of 32 values");
    return {t.dtype, rows, cols, arena.copy(t.bytes)};
  }

  std::vector<float> vector(const std::string& name, std::uint64_t rows, std::uint64_t cols = 1) const {
    auto t = checked(name, cols == 1 ? std::vector<std::uint64_t>{rows} : std::vector<std::uint64_t>{rows, cols});
    const std::size_t width = cols == 1 ? rows : cols, count = cols == 1 ? 1 : rows;
    const kernels::cpu::WeightMatrix m{t.dtype, count, width, arena.copy(t.bytes)};
    std::vector<float> out(rows * cols);
    for (std::size_t r = 0; r < count; ++r) kernels::cpu::dequantize_row(m, r, out.data() + r * width);
    return out;
  }

  WhisperLinear linear(const std::string& prefix, std::uint64_t out, std::uint64_t in, bool bias = true) const {
    return {matrix(prefix + ".weight", out, in), bias ? vector(prefix + ".bias", out) : std::vector<float>{}};
  }

  WhisperLayerWeights layer(const std::string& prefix, bool decoder) const {
    const std::uint64_t d = config.d_model, f = config.ffn_dim;
    WhisperLayerWeights w;
    auto attention = [&](const std::string& p) {
      return WhisperAttentionWeights{linear(p + ".query", d, d), linear(p + ".key", d, d, false),
                                     linear(p + ".value", d, d), linear(p + ".out", d, d)};
    };
    w.self_attn = attention(prefix + ".attn");
    w.self_attn_ln_w = vector(prefix + ".attn_ln.weight", d);
    w.self_attn_ln_b = vector(prefix + ".attn_ln.bias", d);
    if (decoder) {
      w.cross_attn = attention(prefix + ".cross_attn");
      w.cross_attn_ln_w = vector(prefix + ".cross_attn_ln.weight", d);
      w.cross_attn_ln_b = vector(prefix + ".cross_attn_ln.bias", d);
    }
    w.fc1 = linear(prefix + ".mlp.0", f, d);
    w.fc2 = linear(prefix + ".mlp.2", d, f);
    w.mlp_ln_w = vector(prefix + ".mlp_ln.weight", d);
    w.mlp_ln_b = vector(prefix + ".mlp_ln.bias", d);
    return w;
  }

  void fill(Whisper& m) const {
    const WhisperConfig& c = config;
    const std::uint64_t d = c.d_model;
    m.config_ = c;
    m.conv1_ = matrix("encoder.conv1.weight", d, std::uint64_t{c.n_mels} * 3, {d, c.n_mels, 3});
    m.conv1_bias_ = vector("encoder.conv1.bias", d);
    m.conv2_ = matrix("encoder.conv2.weight", d, d * 3, {d, d, 3});
    m.conv2_bias_ = vector("encoder.conv2.bias", d);
    m.encoder_positions_ = vector("encoder.positional_embedding", c.n_audio_ctx, d);
    for (std::uint32_t l = 0; l < c.encoder_layers; ++l)
      m.encoder_layers_.push_back(layer("encoder.blocks." + std::to_string(l), false));
    m.encoder_ln_w_ = vector("encoder.ln_post.weight", d);
    m.encoder_ln_b_ = vector("encoder.ln_post.bias", d);
    m.token_embedding_ = matrix("decoder.token_embedding.weight", c.vocab_size, d);
    m.decoder_positions_ = vector("decoder.positional_embedding", c.n_text_ctx, d);
    for (std::uint32_t l = 0; l < c.decoder_layers; ++l)
      m.decoder_layers_.push_back(layer("decoder.blocks." + std::to_string(l), true));
    m.decoder_ln_w_ = vector("decoder.ln.weight", d);
    m.decoder_ln_b_ = vector("decoder.ln.bias", d);
    m.special_ = tokenizer::WhisperSpecialTokens::for_vocab_size(c.vocab_size);
  }

  static Whisper from_ggml(const std::filesystem::path& path, const WhisperLoadOptions& options) {
    const io::GgmlWhisperFile file = io::GgmlWhisperFile::open(path);
    const io::GgmlWhisperHparams& h = file.hparams();
    if (h.n_audio_state != h.n_text_state)
      throw io::format_error(file.name(), "", "n_audio_state != n_text_state is not a Whisper model");
    WhisperConfig c;
    auto positive = [&](std::int32_t v, const char* what) {
      if (v <= 0) throw io::format_error(file.name(), "", std::string(what) + " is " + std::to_string(v));
      return static_cast<std::uint32_t>(v);
    };
    c.n_mels = positive(h.n_mels, "n_mels");
    c.n_audio_ctx = positive(h.n_audio_ctx, "n_audio_ctx");
    c.n_text_ctx = positive(h.n_text_ctx, "n_text_ctx");
    c.d_model = positive(h.n_audio_state, "n_audio_state");
    c.encoder_heads = positive(h.n_audio_head, "n_audio_head");
    c.encoder_layers = positive(h.n_audio_layer, "n_audio_layer");
    c.decoder_heads = positive(h.n_text_head, "n_text_head");
    c.decoder_layers = positive(h.n_text_layer, "n_text_layer");
    c.vocab_size = positive(h.n_vocab, "n_vocab");
    c.ffn_dim = 4 * c.d_model;  // not stored; every published model has it, and fc1's shape is checked
    c.validate();
    Lookup lookup = [&file](const std::string& name) {
      const io::GgmlWhisperTensor& t = file.at(name);
      return StoredTensor{t.dtype, t.shape, t.bytes};
    };
    Whisper m;
    auto arena = std::make_shared<AlignedArena>();
    Loader{c, lookup, file.name(), *arena}.fill(m);
    m.weights_owner_ = arena;
    m.kv_cache_dtype_ = options.kv_cache_dtype;
    m.mel_filters_.assign(file.mel_filters().begin(), file.mel_filters().end());
    if (options.load_tokenizer) {
      m.tokenizer_ = std::make_shared<tokenizer::WhisperTokenizer>(tokenizer::WhisperTokenizer::from_vocabulary(
          std::vector<std::string>(file.vocabulary().begin(), file.vocabulary().end()), c.vocab_size));
      // A ggml file has no generation_config.json: decode as openai-whisper
      // does by default (whisper.cpp leaves the non-speech symbols allowed
      // unless asked, --suppress-nst; WhisperGreedyOptions::checkpoint_suppress_tokens = false).
      m.generation_ = WhisperGenerationConfig::openai_defaults(*m.tokenizer_);
    }
    m.description_ = file.name() + " (ggml, " + std::string(to_string(m.conv2_.dtype)) + ")";
    return m;
  }

  static Whisper from_directory(const std::filesystem::path& dir, const WhisperLoadOptions& options) {
    const WhisperConfig c = WhisperConfig::from_hf_config(dir / "config.json");
    const io::ModelDirectory directory = io::ModelDirectory::open(dir);
    Lookup lookup = [&directory](const std::string& name) {
      const std::string hf = hf_tensor_name(name);
      const io::TensorLocation at = directory.at(hf);
      return StoredTensor{at.info->dtype, at.info->shape, at.file->bytes(*at.info)};
    };
    Whisper m;
    auto arena = std::make_shared<AlignedArena>();
    Loader{c, lookup, dir.string(), *arena}.fill(m);
    m.weights_owner_ = arena;
    m.kv_cache_dtype_ = options.kv_cache_dtype;
    if (std::filesystem::exists(dir / "generation_config.json"))
      m.generation_ = read_whisper_generation_config(dir / "generation_config.json", m.special_);
    if (options.load_tokenizer) {
      if (std::filesystem::exists(dir / "tokenizer.json"))
        m.tokenizer_ = std::make_shared<tokenizer::WhisperTokenizer>(
            tokenizer::WhisperTokenizer::from_tokenizer_json(dir / "tokenizer.json", c.vocab_size));
      else if (std::filesystem::exists(dir / "vocab.json"))
        m.tokenizer_ = std::make_shared<tokenizer::WhisperTokenizer>(
            tokenizer::WhisperTokenizer::from_vocab_json(dir / "vocab.json", c.vocab_size));
      else if (options.tiktoken_file)
        m.tokenizer_ = std::make_shared<tokenizer::WhisperTokenizer>(
            tokenizer::WhisperTokenizer::from_tiktoken(*options.tiktoken_file, c.vocab_size));
    }
    m.description_ = dir.string() + " (safetensors, " + std::string(to_string(m.conv2_.dtype)) + ")";
    return m;
  }
};

}  // namespace detail::whisper

IZWI_DECL Whisper Whisper::load(const std::filesystem::path& path, WhisperLoadOptions options) {
  if (std::filesystem::is_directory(path)) return detail::whisper::Loader::from_directory(path, options);
  if (!std::filesystem::exists(path)) throw izwi::error(path.string() + ": no such file or directory");
  return detail::whisper::Loader::from_ggml(path, options);
}

}  // namespace izwi
