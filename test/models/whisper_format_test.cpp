// Whisper's configuration, special tokens, tokenizer and whisper.cpp's
// ggml-whisper file format, checked against the facts of the published models
// and whisper.cpp's own files (../shared/fixtures/whisper).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <vector>

#include "izwi/audio/mel.hpp"
#include "izwi/executor/detail/cpu_ops.hpp"
#include "izwi/io/ggml_whisper.hpp"
#include "izwi/models/whisper.hpp"
#include "izwi/tokenizer/whisper_tokenizer.hpp"
#include "models/random_whisper.hpp"

using namespace izwi;
using tokenizer::WhisperSpecialTokens;
using tokenizer::WhisperTokenizer;

TEST_CASE("WhisperSpecialTokens: the ids of .en, multilingual and large-v3 vocabularies", "[whisper][tokenizer]") {
  // The ids openai-whisper's tokenizer gives (tiktoken special tokens after the ranks).
  const auto en = WhisperSpecialTokens::for_vocab_size(51864);
  CHECK_FALSE(en.multilingual);
  CHECK(en.eot == 50256);
  CHECK(en.sot == 50257);
  CHECK(en.transcribe == 50358);
  CHECK(en.no_timestamps == 50362);
  CHECK(en.timestamp_begin == 50363);

  const auto multi = WhisperSpecialTokens::for_vocab_size(51865);
  CHECK(multi.eot == 50257);
  CHECK(multi.sot == 50258);
  CHECK(multi.language_token("en") == 50259);
  CHECK(multi.language_token("su") == 50357);
  CHECK_FALSE(multi.language_token("yue"));
  CHECK(multi.translate == 50358);
  CHECK(multi.transcribe == 50359);
  CHECK(multi.sot_lm == 50360);
  CHECK(multi.sot_prev == 50361);
  CHECK(multi.no_speech == 50362);
  CHECK(multi.no_timestamps == 50363);
  CHECK(multi.timestamp_begin == 50364);
  // 1501 timestamps, 0.00 to 30.00 s, end exactly at the vocabulary's end.
  CHECK(multi.timestamp_begin + 1500 == 51864);
  CHECK(multi.timestamp_seconds(multi.timestamp_begin + 1500) == Approx(30.0));

  const auto v3 = WhisperSpecialTokens::for_vocab_size(51866);
  CHECK(v3.num_languages == 100);
  CHECK(v3.language_token("yue") == 50358);
  CHECK(v3.transcribe == 50360);
  CHECK(v3.no_timestamps == 50364);
  CHECK(v3.timestamp_begin == 50365);

  CHECK_THROWS_WITH(WhisperSpecialTokens::for_vocab_size(51000), Catch::Contains("51000"));
}

TEST_CASE("WhisperConfig: the published shapes", "[whisper]") {
  const auto tiny = WhisperConfig::preset("tiny");
  CHECK(tiny.d_model == 384);
  CHECK(tiny.head_dim() == 64);
  CHECK(tiny.ffn_dim == 1536);
  CHECK(tiny.multilingual());
  CHECK_FALSE(WhisperConfig::preset("base.en").multilingual());
  const auto v3 = WhisperConfig::preset("large-v3");
  CHECK(v3.n_mels == 128);
  CHECK(v3.vocab_size == 51866);
  const auto turbo = WhisperConfig::preset("large-v3-turbo");
  CHECK(turbo.encoder_layers == 32);
  CHECK(turbo.decoder_layers == 4);
  for (const char* name : {"tiny", "tiny.en", "base", "base.en", "small", "small.en", "medium", "medium.en", "large-v1",
                           "large-v2", "large-v3", "large-v3-turbo"})
    CHECK_NOTHROW(WhisperConfig::preset(name).validate());
  CHECK_THROWS_WITH(WhisperConfig::preset("huge"), Catch::Contains("huge"));
  auto bad = tiny;
  bad.encoder_heads = 5;
  CHECK_THROWS_WITH(bad.validate(), Catch::Contains("encoder_heads"));
  bad = tiny;
  bad.n_mels = 64;
  CHECK_THROWS_WITH(bad.validate(), Catch::Contains("n_mels"));
}

TEST_CASE("ggml-whisper: whisper.cpp's for-tests files parse", "[whisper][io]") {
  if (!testing::have_whisper_fixtures()) return;
  const auto multi = io::GgmlWhisperFile::open(testing::whisper_fixtures() / "whisper/for-tests-ggml-tiny.bin");
  const auto& h = multi.hparams();
  CHECK(h.n_vocab == 51865);
  CHECK(h.n_audio_ctx == 1500);
  CHECK(h.n_audio_state == 384);
  CHECK(h.n_audio_head == 6);
  CHECK(h.n_audio_layer == 4);
  CHECK(h.n_text_ctx == 448);
  CHECK(h.n_mels == 80);
  CHECK(multi.tensors().empty());
  CHECK(multi.vocabulary().size() == 50257);  // the BPE tokens; specials are derived
  REQUIRE(multi.mel_bins() == 80);
  REQUIRE(multi.mel_fft_bins() == 201);

  // The stored filterbank is librosa's Slaney filterbank, which izwi computes itself.
  const audio::MelFilterbank bank(audio::MelFilterbankOptions{});
  const std::vector<float> mine = bank.dense();
  double worst = 0;
  for (std::size_t i = 0; i < mine.size(); ++i)
    worst = std::max(worst, static_cast<double>(std::abs(mine[i] - multi.mel_filters()[i])));
  CHECK(worst < 1e-6);

  const auto en = io::GgmlWhisperFile::open(testing::whisper_fixtures() / "whisper/for-tests-ggml-tiny.en.bin");
  CHECK(en.hparams().n_vocab == 51864);
  CHECK(en.vocabulary().size() >= 50256);
}

namespace {

std::vector<std::byte> small_ggml_file(std::int32_t tensor_type_override = -1) {
  const auto path = std::filesystem::temp_directory_path() / "izwi-ggml-whisper-test.bin";
  io::GgmlWhisperHparams h;
  h.n_vocab = 51864;
  const std::vector<float> filters(2 * 3, 0.5f);
  const std::vector<std::string> vocab = {"a", "bc"};
  const std::vector<float> values(64, 1.0f);
  const std::vector<io::GgmlTensorToWrite> tensors = {
      {"decoder.ln.weight", DType::f32, {64}, std::as_bytes(std::span(values))}};
  io::write_ggml_whisper(path, h, filters, 2, 3, vocab, tensors);
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(path);
  std::vector<std::byte> bytes(chars.size());
  std::memcpy(bytes.data(), chars.data(), chars.size());
  if (tensor_type_override >= 0) {
    // header 48 + filters 8 + 24 + vocab 4 + (4+1) + (4+2) → tensor header; its type is the third i32.
    const std::size_t type_at = 48 + 8 + 24 + 4 + 5 + 6 + 8;
    std::memcpy(bytes.data() + type_at, &tensor_type_override, 4);
  }
  return bytes;
}

}  // namespace

TEST_CASE("ggml-whisper: written files read back, other ggml types, truncation and bad magic are refused",
          "[whisper][io]") {
  const auto file = io::GgmlWhisperFile::from_bytes(small_ggml_file(), "small.bin");
  CHECK(file.hparams().n_vocab == 51864);
  CHECK(file.vocabulary().size() == 2);
  CHECK(file.vocabulary()[1] == "bc");
  REQUIRE(file.tensors().size() == 1);
  CHECK(file.at("decoder.ln.weight").shape == std::vector<std::uint64_t>{64});
  CHECK_THROWS_WITH(file.at("decoder.ln.bias"), Catch::Contains("missing tensor") && Catch::Contains("decoder.ln.bias"));

  CHECK_THROWS_WITH(io::GgmlWhisperFile::from_bytes(small_ggml_file(12), "q4k.bin"),
                    Catch::Contains("q4_K") && Catch::Contains("decoder.ln.weight"));
  CHECK_THROWS_WITH(io::GgmlWhisperFile::from_bytes(small_ggml_file(30), "bf16.bin"), Catch::Contains("bf16"));
  auto truncated = small_ggml_file();
  truncated.resize(truncated.size() - 3);
  CHECK_THROWS_WITH(io::GgmlWhisperFile::from_bytes(truncated, "cut.bin"), Catch::Contains("truncated"));
  auto wrong_magic = small_ggml_file();
  wrong_magic[0] = std::byte{0};
  CHECK_THROWS_WITH(io::GgmlWhisperFile::from_bytes(wrong_magic, "magic.bin"), Catch::Contains("not a ggml-whisper"));
}

TEST_CASE("WhisperTokenizer: ggml vocabularies equal the tiktoken ranks, text round-trips", "[whisper][tokenizer]") {
  if (!testing::have_whisper_fixtures()) return;
  const auto dir = testing::whisper_fixtures() / "whisper";
  const auto ggml = io::GgmlWhisperFile::open(dir / "for-tests-ggml-tiny.bin");
  const auto from_ggml = WhisperTokenizer::from_vocabulary({ggml.vocabulary().begin(), ggml.vocabulary().end()}, 51865);
  const auto from_tiktoken = WhisperTokenizer::from_tiktoken(dir / "multilingual.tiktoken", 51865);
  // whisper.cpp's test files store 1476 byte tokens (partial UTF-8) as U+FFFD;
  // every other token is the same bytes.
  std::size_t lossy = 0;
  for (TokenId id = 0; id < 50257; ++id) {
    const bool replaced = from_ggml.token_text(id).find("\xEF\xBF\xBD") != std::string::npos;
    if (replaced && from_tiktoken.token_text(id).find("\xEF\xBF\xBD") == std::string::npos) {
      ++lossy;
      continue;
    }
    REQUIRE(from_ggml.token_text(id) == from_tiktoken.token_text(id));
  }
  CHECK(lossy < 2000);

  const std::string text = " And so my fellow Americans, ask not what your country can do for you — ask what you "
                           "can do for your country. 1234 naïve café 東京 don't";
  const auto ids = from_tiktoken.encode(text);
  const std::string ascii = " And so my fellow Americans, ask not what your country can do for you.";
  CHECK(from_ggml.encode(ascii) == from_tiktoken.encode(ascii));
  CHECK(from_tiktoken.decode(ids) == text);
  CHECK(ids.size() < text.size() / 2);  // merged, not byte by byte
  // A word that is one token encodes to it, with its leading space.
  const auto fellow = from_tiktoken.token_to_id(" fellow");
  REQUIRE(fellow);
  CHECK(from_tiktoken.encode(" fellow") == std::vector<TokenId>{*fellow});

  const auto& s = from_tiktoken.special();
  CHECK(from_tiktoken.token_text(s.sot) == "<|startoftranscript|>");
  CHECK(from_tiktoken.token_text(s.timestamp_begin + 50) == "<|1.00|>");
  CHECK(from_tiktoken.token_to_id("<|notimestamps|>") == s.no_timestamps);
  CHECK(from_tiktoken.token_to_id("<|de|>") == s.language_token("de"));
  CHECK(from_tiktoken.sot_sequence("de", true, false) ==
        std::vector<TokenId>{s.sot, *s.language_token("de"), s.translate, s.no_timestamps});
  CHECK_THROWS_WITH(from_tiktoken.sot_sequence("xx", false, true), Catch::Contains("xx") && Catch::Contains("en, zh"));
  std::vector<TokenId> mixed = ids;
  mixed.insert(mixed.begin(), s.sot);
  mixed.push_back(s.timestamp_begin + 3);
  CHECK(from_tiktoken.decode(mixed) == text);
  CHECK(from_tiktoken.decode(mixed, true) == "<|startoftranscript|>" + text + "<|0.06|>");

  const auto en = WhisperTokenizer::from_tiktoken(dir / "gpt2.tiktoken", 51864);
  CHECK(en.decode(en.encode(text)) == text);
  CHECK(en.sot_sequence("en", false, true) == std::vector<TokenId>{en.special().sot});
}

TEST_CASE("Whisper CPU ops: conv1d, layer norm, GELU and dense attention equal direct formulas", "[whisper][kernels]") {
  detail::ThreadPool pool(2);
  detail::CpuOps ops(pool);
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto random = [&](std::size_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = normal(rng);
    return v;
  };
  // Conv1d (kernel 3, stride 2, pad 1) of a channel-major and a time-major input.
  const std::size_t in = 5, out = 7, length = 11, kernel = 3, stride = 2, pad = 1;
  const std::size_t out_len = (length + 2 * pad - kernel) / stride + 1;
  const auto x = random(in * length);  // [in][length]
  const auto w = random(out * in * kernel);
  const kernels::cpu::WeightMatrix weight{DType::f32, out, in * kernel, w.data()};
  std::vector<float> x_time_major(length * in);
  for (std::size_t c = 0; c < in; ++c)
    for (std::size_t t = 0; t < length; ++t) x_time_major[t * in + c] = x[c * length + t];
  std::vector<float> columns(out_len * in * kernel), y1(out_len * out), y2(out_len * out);
  ops.conv1d(x.data(), in, length, false, weight, kernel, stride, pad, columns.data(), y1.data());
  ops.conv1d(x_time_major.data(), in, length, true, weight, kernel, stride, pad, columns.data(), y2.data());
  for (std::size_t t = 0; t < out_len; ++t)
    for (std::size_t o = 0; o < out; ++o) {
      double direct = 0;
      for (std::size_t c = 0; c < in; ++c)
        for (std::size_t j = 0; j < kernel; ++j) {
          const auto p = static_cast<std::ptrdiff_t>(t * stride + j) - static_cast<std::ptrdiff_t>(pad);
          if (p >= 0 && p < static_cast<std::ptrdiff_t>(length))
            direct += double(w[(o * in + c) * kernel + j]) * x[c * length + static_cast<std::size_t>(p)];
        }
      REQUIRE(y1[t * out + o] == Approx(direct).margin(1e-5));
      REQUIRE(y2[t * out + o] == Approx(direct).margin(1e-5));
    }

  // Layer norm and GELU.
  const std::size_t dim = 48;
  auto row = random(dim);
  const auto gamma = random(dim), beta = random(dim);
  std::vector<float> normed(dim);
  ops.layer_norm(row.data(), 1, dim, gamma.data(), beta.data(), 1e-5f, normed.data());
  double mean = 0, var = 0;
  for (float v : row) mean += v;
  mean /= dim;
  for (float v : row) var += (v - mean) * (v - mean);
  var /= dim;
  for (std::size_t i = 0; i < dim; ++i)
    REQUIRE(normed[i] == Approx((row[i] - mean) / std::sqrt(var + 1e-5) * gamma[i] + beta[i]).margin(1e-5));
  std::vector<float> g = {-3.0f, -1.0f, 0.0f, 0.5f, 2.0f};
  ops.gelu(g.data(), g.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double v = std::vector<double>{-3.0, -1.0, 0.0, 0.5, 2.0}[i];
    REQUIRE(g[i] == Approx(0.5 * v * (1 + std::erf(v / std::sqrt(2.0)))).margin(1e-6));
  }

  // Dense attention: softmax(q kᵀ / sqrt(d)) v per head.
  const std::size_t heads = 3, hd = 8, n = 13, rows = 4, width = heads * hd;
  const auto q = random(rows * width), k = random(n * width), v = random(n * width);
  std::vector<float> kh(n * width), vt(n * width), scores(rows * n), attn(rows * width);
  ops.split_heads(k.data(), v.data(), n, heads, hd, kh.data(), vt.data());
  ops.dense_attention(q.data(), rows, kh.data(), vt.data(), n, heads, hd, scores.data(), attn.data());
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t h = 0; h < heads; ++h) {
      std::vector<double> p(n);
      double top = -1e30, total = 0;
      for (std::size_t j = 0; j < n; ++j) {
        double dot = 0;
        for (std::size_t d = 0; d < hd; ++d) dot += double(q[r * width + h * hd + d]) * k[j * width + h * hd + d];
        p[j] = dot / std::sqrt(double(hd));
        top = std::max(top, p[j]);
      }
      for (double& e : p) total += e = std::exp(e - top);
      for (std::size_t d = 0; d < hd; ++d) {
        double expected = 0;
        for (std::size_t j = 0; j < n; ++j) expected += p[j] / total * v[j * width + h * hd + d];
        REQUIRE(attn[r * width + h * hd + d] == Approx(expected).margin(1e-5));
      }
    }
}
