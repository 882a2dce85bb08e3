// Word timestamps: the numeric steps (standardising, median filter, DTW)
// against hand-computed cases, word splitting and punctuation merging as
// openai-whisper does them, and whole alignments on the random tiny model.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "izwi/asr/word_timestamps.hpp"
#include "izwi/io/json.hpp"
#include "izwi/models/whisper_alignment.hpp"
#include "models/random_whisper.hpp"

using namespace izwi;
namespace dw = izwi::detail::whisper;

TEST_CASE("Word alignment: standardising columns and the median filter on hand-computed cases",
          "[whisper][alignment]") {
  // Columns [1 2 3] and [4 4 4]: mean 2, population deviation sqrt(2/3); no spread → 0.
  std::vector<float> x = {1, 4, 2, 4, 3, 4};
  dw::standardize_columns(x.data(), 3, 2);
  const double z = 1 / std::sqrt(2.0 / 3.0);
  const std::vector<double> expected = {-z, 0, 0, 0, z, 0};
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(x[i] == Approx(expected[i]).margin(1e-6));

  // Width 3, reflected edges: [5 | 1 5 2 8 3 | 8] → medians 5 2 5 3 8.
  std::vector<float> row = {1, 5, 2, 8, 3};
  dw::median_filter_rows(row.data(), 1, 5, 3);
  CHECK(row == std::vector<float>{5, 2, 5, 3, 8});
  // Width 5 over [1 2 3 4]: [3 2 | 1 2 3 4 | 3 2] → 2 2 3 3; two rows filtered independently.
  std::vector<float> rows = {1, 2, 3, 4, 4, 3, 2, 1};
  dw::median_filter_rows(rows.data(), 2, 4, 5);
  CHECK(rows == std::vector<float>{2, 2, 3, 3, 3, 3, 2, 2});
  // A row no longer than width / 2 cannot be reflected: left as it is.
  std::vector<float> short_row = {9, 1, 5};
  dw::median_filter_rows(short_row.data(), 1, 3, 7);
  CHECK(short_row == std::vector<float>{9, 1, 5});
  CHECK_THROWS_WITH(dw::median_filter_rows(row.data(), 1, 5, 4), Catch::Contains("must be odd"));
}

TEST_CASE("Word alignment: DTW paths on hand-computed cases", "[whisper][alignment]") {
  auto steps = [](const std::vector<dw::DtwStep>& path) {
    std::vector<std::pair<std::size_t, std::size_t>> out;
    for (const auto& s : path) out.emplace_back(s.row, s.column);
    return out;
  };
  using P = std::vector<std::pair<std::size_t, std::size_t>>;
  const std::vector<float> diagonal = {0, 5, 5, 5, 0, 5, 5, 5, 0};
  CHECK(steps(dw::dtw_path(diagonal.data(), 3, 3)) == P{{0, 0}, {1, 1}, {2, 2}});

  // Two tokens over four positions: the first holds positions 0-1, the second 2-3.
  const std::vector<float> two = {0, 0, 9, 9, 9, 9, 0, 0};
  const auto path = dw::dtw_path(two.data(), 2, 4);
  CHECK(steps(path) == P{{0, 0}, {0, 1}, {1, 2}, {1, 3}});
  CHECK(dw::dtw_row_starts(path, 2) == std::vector<std::size_t>{0, 2});

  // Ties: the diagonal and "down" win only when strictly cheapest, else the
  // path moves right; so over zeros it goes down first: (0,0) (1,0) (1,1).
  const std::vector<float> zeros = {0, 0, 0, 0};
  CHECK(steps(dw::dtw_path(zeros.data(), 2, 2)) == P{{0, 0}, {1, 0}, {1, 1}});

  // More tokens than positions: several rows start at the same position.
  const std::vector<float> tall = {0, 9, 0, 9, 9, 0};
  const auto tall_path = dw::dtw_path(tall.data(), 3, 2);
  CHECK(steps(tall_path) == P{{0, 0}, {1, 0}, {2, 1}});
  CHECK(dw::dtw_row_starts(tall_path, 3) == std::vector<std::size_t>{0, 0, 1});
}

namespace {

// A toy vocabulary: byte strings per id, 100 = <|endoftext|>.
const std::map<TokenId, std::string> toy_vocabulary = {
    {0, " Hello"}, {1, ","}, {2, " \xE2\x80"}, {3, "\x9C"}, {4, " wor"}, {5, "ld"}, {6, "\xE2\x80\x9D"},
    {7, "."},      {8, " ("}, {9, " yes"},     {10, ")"},   {11, "\xE3\x81"}, {12, "\x82"}, {13, "\xE3\x81\x84"},
    {14, "!?"},    {100, "<|endoftext|>"}};
std::string toy_bytes(TokenId t) { return toy_vocabulary.at(t); }

std::vector<std::string> texts(const std::vector<dw::TokenWord>& words) {
  std::vector<std::string> out;
  for (const auto& w : words) out.push_back(w.word);
  return out;
}

}  // namespace

TEST_CASE("Word alignment: splitting tokens into words and merging punctuation", "[whisper][alignment]") {
  CHECK(dw::utf8_awaits_continuation("\xE3\x81"));
  CHECK_FALSE(dw::utf8_awaits_continuation("\xE3\x81\x82"));
  CHECK_FALSE(dw::utf8_awaits_continuation("a\x80"));  // broken, not incomplete
  CHECK_FALSE(dw::utf8_awaits_continuation("abc"));

  // “ is split over tokens 2 and 3; groups end at whole characters.
  const std::vector<TokenId> tokens = {0, 1, 2, 3, 4, 5, 6, 7, 100};
  const auto groups = dw::split_on_characters(tokens, toy_bytes);
  CHECK(texts(groups) ==
        std::vector<std::string>{" Hello", ",", " \xE2\x80\x9C", " wor", "ld", "\xE2\x80\x9D", ".", "<|endoftext|>"});
  CHECK(groups[2].tokens == std::vector<TokenId>{2, 3});

  // Words start at a space, at punctuation, or at a special token; ” is not
  // ASCII punctuation so it stays with "world", as in openai-whisper.
  auto words = dw::split_words("en", tokens, 100, toy_bytes);
  CHECK(texts(words) == std::vector<std::string>{" Hello", ",", " \xE2\x80\x9C", " world\xE2\x80\x9D", ".",
                                                 "<|endoftext|>"});
  words.pop_back();
  dw::merge_punctuation(words);
  CHECK(texts(words) ==
        std::vector<std::string>{" Hello,", "", "", " \xE2\x80\x9C world\xE2\x80\x9D.", ""});
  CHECK(words[0].tokens == std::vector<TokenId>{0, 1});
  CHECK(words[3].tokens == std::vector<TokenId>{2, 3, 4, 5, 6, 7});

  // " (" joins the next word, ")" and "," the previous one that kept its text.
  const std::vector<TokenId> brackets = {0, 8, 9, 10, 1};
  auto bracket_words = dw::split_words("en", brackets, 100, toy_bytes);
  CHECK(texts(bracket_words) == std::vector<std::string>{" Hello", " (", " yes", ")", ","});
  dw::merge_punctuation(bracket_words);
  CHECK(texts(bracket_words) == std::vector<std::string>{" Hello", "", " ( yes),", "", ""});
  // Punctuation is Python's substring test of string.punctuation: "!?" is
  // not a substring of it, so it joins the word before (openai-whisper's behaviour).
  CHECK(texts(dw::split_words("en", std::vector<TokenId>{0, 14}, 100, toy_bytes)) ==
        std::vector<std::string>{" Hello!?"});

  // Languages without spaces: every whole character is a word.
  const std::vector<TokenId> japanese = {11, 12, 13, 100};
  CHECK(texts(dw::split_words("ja", japanese, 100, toy_bytes)) ==
        std::vector<std::string>{"\xE3\x81\x82", "\xE3\x81\x84", "<|endoftext|>"});
  CHECK(texts(dw::split_words("en", japanese, 100, toy_bytes)) ==
        std::vector<std::string>{"\xE3\x81\x82\xE3\x81\x84", "<|endoftext|>"});
}

TEST_CASE("Word alignment: long words cut at sentence ends", "[whisper][alignment]") {
  auto word = [](const char* text, double start, double end) {
    WhisperWord w;
    w.word = text;
    w.start = start;
    w.end = end;
    return w;
  };
  // Non-zero durations 0.2 0.2 1.6 2.0 0.2: median 0.2, so at most 0.4 s.
  std::vector<WhisperWord> words = {word(" A", 0, 0.2), word(" B", 0.2, 0.4), word(".", 0.4, 2.0),
                                    word(" C", 2.0, 4.0), word(" D", 4.0, 4.2)};
  dw::truncate_long_words_at_sentence_ends(words);
  CHECK(words[2].start == Approx(0.4));  // the mark itself ends early
  CHECK(words[2].end == Approx(0.8));
  CHECK(words[3].start == Approx(3.6));  // the word after a mark starts late
  CHECK(words[3].end == Approx(4.0));
  CHECK(words[4].end == Approx(4.2));
  // A long word elsewhere is left alone, and so is the first word.
  std::vector<WhisperWord> plain = {word(" Long", 0, 3.0), word(" x", 3.0, 3.2), word(" y", 3.2, 9.0)};
  dw::truncate_long_words_at_sentence_ends(plain);
  CHECK(plain[0].end == Approx(3.0));
  CHECK(plain[2].start == Approx(3.2));
}

TEST_CASE("Word timestamps: openai-whisper's adjustment of words at segment boundaries", "[whisper][alignment]") {
  const double d = 0.3, longest = 2 * d;  // the median word duration, and twice it
  auto words_of = [](std::vector<std::pair<double, double>> times) {
    std::vector<asr::Word> out;
    for (auto [start, end] : times) out.push_back({"w", start, end, 0.5});
    return out;
  };
  SECTION("after a pause, a long first word and a long second one are cut to 2d at a shared boundary") {
    auto words = words_of({{1.0, 3.0}, {3.0, 5.0}, {5.0, 5.2}});
    double start = 1.0, end = 5.2;
    const double last_speech = asr::adjust_words_at_segment_boundary(words, start, end, d, 0.0);
    const double boundary = std::max(5.0 / 2, 5.0 - longest);  // openai-whisper's split of the second word
    CHECK(words[0].end == Approx(boundary));
    CHECK(words[1].start == Approx(boundary));
    CHECK(words[0].end - words[0].start == Approx(longest));
    CHECK(words[1].end - words[1].start <= longest + 1e-9);
    CHECK(start == Approx(words[0].start));  // the segment starts with its (cut) first word
    CHECK(end == Approx(5.2));
    CHECK(last_speech == end);
  }
  SECTION("without a pause before it, a long first word stays; the segment takes its times") {
    auto words = words_of({{1.0, 3.0}, {3.0, 3.2}});
    double start = 1.2, end = 3.1;
    asr::adjust_words_at_segment_boundary(words, start, end, d, 2.5);  // 3.0 - 2.5 < 4d
    CHECK(words[0].start == 1.0);
    CHECK(words[0].end == 3.0);
    CHECK(start == 1.0);  // 1.2 - 0.5 is not after the word's start
    CHECK(end == 3.2);
  }
  SECTION("a first word starting over 0.5 s before its segment moves to it; a last one ending over 0.5 s after is cut") {
    auto words = words_of({{0.0, 2.0}, {2.0, 2.4}, {4.0, 6.0}});
    double start = 1.0, end = 5.0;
    asr::adjust_words_at_segment_boundary(words, start, end, d, 1.5);
    CHECK(words[0].start == Approx(std::max(0.0, std::min(2.0 - d, 1.0))));
    CHECK(start == 1.0);
    CHECK(words[2].end == Approx(std::max(4.0 + d, 5.0)));
    CHECK(end == 5.0);
  }
  SECTION("a segment without words is left alone") {
    std::vector<asr::Word> none;
    double start = 1.0, end = 2.0;
    CHECK(asr::adjust_words_at_segment_boundary(none, start, end, d, 0.7) == 0.7);
    CHECK((start == 1.0 && end == 2.0));
  }
  SECTION("invariants over random segments") {
    std::mt19937 rng(12);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (int trial = 0; trial < 3000; ++trial) {
      const double median = 0.05 + 0.65 * unit(rng);
      std::vector<asr::Word> words;
      double t = 5 * unit(rng);
      const double last_speech = t * unit(rng);
      const std::size_t n = 1 + static_cast<std::size_t>(unit(rng) * 5);
      for (std::size_t i = 0; i < n; ++i) {
        const double length = unit(rng) < 0.3 ? 3 * unit(rng) : median * unit(rng) * 2;
        words.push_back({"w", t, t + length, 0.5});
        t += length + (unit(rng) < 0.2 ? unit(rng) : 0.0);
      }
      const std::vector<asr::Word> before = words;
      double start = words.front().start + (unit(rng) - 0.3) * 2, end = words.back().end + (unit(rng) - 0.7) * 2;
      const bool pause = words[0].end - last_speech > 4 * median &&
                         (words[0].end - words[0].start > 2 * median ||
                          (n > 1 && words[1].end - words[0].start > 4 * median));
      const double returned = asr::adjust_words_at_segment_boundary(words, start, end, median, last_speech);
      CAPTURE(trial, median, last_speech, start, end);
      CHECK(returned == end);
      for (const asr::Word& w : words) CHECK(w.start <= w.end + 1e-12);
      for (std::size_t i = 2; i + 1 < n; ++i) CHECK((words[i].start == before[i].start && words[i].end == before[i].end));
      // The segment takes its first word's start, or that word was shortened to at most d.
      CHECK((start == words[0].start || words[0].end - words[0].start <= median + 1e-9));
      // The segment takes its last word's end, or that word now ends at the segment (or d after its start).
      CHECK((end == words.back().end || words.back().end == std::max(words.back().start + median, end)));
      if (pause) CHECK(words[0].end - words[0].start <= 2 * median + 1e-9);
      if (pause && n > 1 && before[1].end - before[1].start > 2 * median) {
        CHECK(words[0].end == words[1].start);
        if (n > 2) CHECK(words[1].end - words[1].start <= 2 * median + 1e-9);
      }
    }
  }
}

TEST_CASE("Word alignment: the published alignment heads and how a model's are chosen", "[whisper][alignment]") {
  CHECK(whisper_alignment_heads_preset("tiny").size() == 6);
  CHECK(whisper_alignment_heads_preset("large-v2").size() == 23);
  CHECK(whisper_alignment_heads_preset("large") == whisper_alignment_heads_preset("large-v3"));
  CHECK(whisper_alignment_heads_preset("turbo") == whisper_alignment_heads_preset("large-v3-turbo"));
  // Every preset's heads lie inside its shape.
  for (const char* name : {"tiny", "tiny.en", "base", "base.en", "small", "small.en", "medium", "medium.en",
                           "large-v1", "large-v2", "large-v3", "large-v3-turbo"}) {
    const WhisperConfig c = WhisperConfig::preset(name);
    for (const auto& [layer, head] : whisper_alignment_heads_preset(name)) {
      CHECK(layer < c.decoder_layers);
      CHECK(head < c.decoder_heads);
    }
  }
  CHECK_THROWS_WITH(whisper_alignment_heads_preset("huge"), Catch::Contains("large-v3-turbo"));

  if (!testing::have_whisper_fixtures()) return;
  // A ggml file has no generation_config: the tiny shape is recognised.
  CHECK(whisper_alignment_heads(testing::model("ggml-model.bin")) == whisper_alignment_heads_preset("tiny"));
  CHECK(whisper_alignment_heads(testing::model("ggml-model.bin"), "base.en") ==
        whisper_alignment_heads_preset("base.en"));
  // An HF checkpoint's own heads come first.
  const Whisper& hf = testing::model("hf");
  CHECK(whisper_alignment_heads(hf) == hf.generation_config().alignment_heads);
}

TEST_CASE("Word alignment: the alignment pass gives forward()'s logits and softmax rows", "[whisper][alignment]") {
  if (!testing::have_whisper_fixtures()) return;
  const Whisper& m = testing::model("ggml-model.bin");
  WhisperRunner run(m, {.num_threads = 2});
  run.start(testing::log_mel_of("jfk.wav"));
  const std::vector<TokenId> tokens = m.tokenizer()->sot_sequence("en", false, false);
  const auto plain = run.feed(tokens, true);
  const std::vector<float> expected(plain.begin(), plain.end());

  const WhisperAlignmentHeads heads = {{0, 1}, {3, 5}};
  const std::size_t frames = 550;
  std::vector<float> weights;
  const auto logits = run.feed_with_alignment(tokens, heads, frames, weights);
  CHECK(std::vector<float>(logits.begin(), logits.end()) == expected);
  REQUIRE(weights.size() == heads.size() * tokens.size() * frames);
  for (std::size_t r = 0; r < heads.size() * tokens.size(); ++r) {
    double sum = 0;
    for (std::size_t j = 0; j < frames; ++j) sum += weights[r * frames + j];
    CHECK(sum == Approx(1.0).epsilon(1e-5));
  }
  CHECK_THROWS_WITH(run.feed_with_alignment(tokens, {{{4, 0}}}, frames, weights), Catch::Contains("outside"));
  CHECK_THROWS_WITH(run.feed_with_alignment(tokens, heads, 1501, weights), Catch::Contains("1500"));
}

TEST_CASE("Word timestamps on the random tiny model: words cover the text, times ordered within the audio",
          "[whisper][alignment]") {
  if (!testing::have_whisper_fixtures()) return;
  const Whisper& m = testing::model("ggml-model.bin");
  const std::vector<float> samples = testing::window_samples_of("jfk.wav");
  const std::size_t num_frames = samples.size() / 160;  // 10-ms mel frames of audio present
  WhisperRunner run(m, {.num_threads = 2});
  run.start(audio::WhisperLogMel(80)(samples).values);

  for (const bool timestamps : {false, true}) {
    CAPTURE(timestamps);
    WhisperGreedyOptions decode;
    decode.timestamps = timestamps;
    decode.max_tokens = 64;
    const WhisperGreedyResult result = whisper_greedy_decode(run, decode);
    REQUIRE_FALSE(result.text.empty());

    WhisperWordOptions options;
    options.num_frames = num_frames;
    const auto words = whisper_word_timestamps(run, result.tokens, options);
    REQUIRE_FALSE(words.empty());
    std::string joined;
    std::vector<TokenId> word_tokens;
    double previous_start = 0;
    for (const WhisperWord& w : words) {
      CAPTURE(w.word, w.start, w.end);
      CHECK_FALSE(w.word.empty());
      joined += w.word;
      word_tokens.insert(word_tokens.end(), w.tokens.begin(), w.tokens.end());
      CHECK(w.start >= previous_start);
      CHECK(w.start <= w.end);
      CHECK(w.end <= static_cast<double>(num_frames) / 100.0);
      CHECK(w.probability > 0.0);
      CHECK(w.probability <= 1.0);
      previous_start = w.start;
    }
    CHECK(joined == result.text);
    std::vector<TokenId> text_tokens;
    for (TokenId t : result.tokens)
      if (t < m.special_tokens().eot) text_tokens.push_back(t);
    CHECK(word_tokens == text_tokens);

    // Split at characters (as for Japanese): still the whole text, each word whole UTF-8.
    WhisperWordOptions characters = options;
    characters.language = "ja";
    const auto character_words = whisper_word_timestamps(run, result.tokens, characters);
    std::string joined_characters;
    for (const WhisperWord& w : character_words) {
      CHECK_FALSE(dw::utf8_awaits_continuation(w.word));
      joined_characters += w.word;
    }
    CHECK(joined_characters == result.text);
    CHECK(character_words.size() >= words.size());

    // The window's start shifts every time.
    options.time_offset = 30.0;
    const auto shifted = whisper_word_timestamps(run, result.tokens, options);
    REQUIRE(shifted.size() == words.size());
    for (std::size_t i = 0; i < words.size(); ++i) {
      CHECK(shifted[i].start == Approx(words[i].start + 30.0));
      CHECK(shifted[i].end == Approx(words[i].end + 30.0));
    }
  }

  WhisperWordOptions bad;
  bad.num_frames = 3001;
  CHECK_THROWS_WITH(whisper_word_timestamps(run, std::vector<TokenId>{1000}, bad), Catch::Contains("mel frames"));
  CHECK(whisper_word_timestamps(run, std::vector<TokenId>{m.special_tokens().eot}).empty());
}

TEST_CASE("Word alignment: token times match whisper.cpp's DTW timestamps on the same weights",
          "[whisper][alignment][reference]") {
  if (!testing::have_whisper_fixtures()) return;
  // whisper-cli -dtw tiny (test/reference/whisper_cpp_dtw_goldens.sh): each
  // text token's t_dtw (centiseconds) is where the warping path reaches the
  // row after it. whisper.cpp's decoder input is [sot, <|en|>,
  // <|notimestamps|>, text, <|endoftext|>] (no task token) and it takes the
  // softmax over the whole window before keeping the audio present (1100 mel
  // frames of jfk.wav → 550 positions); izwi's alignment is run the same way.
  const Whisper& m = testing::model("ggml-model.bin", DType::f16);  // whisper.cpp's KV caches are f16
  const auto& s = m.special_tokens();
  const io::JsonValue golden = io::read_json_file(std::filesystem::path(IZWI_SOURCE_DIR) /
                                                  "test/models/goldens/whisper-tiny-random-jfk-dtw.json");
  std::vector<TokenId> text;
  std::vector<std::int64_t> expected_cs;
  for (const auto& t : golden.at("tokens").as_array()) {
    const auto id = static_cast<TokenId>(t.as_array().at(0).as_int64());
    if (id >= s.eot) continue;
    text.push_back(id);
    expected_cs.push_back(t.as_array().at(1).as_int64());
  }
  REQUIRE(text.size() >= 20);
  std::vector<TokenId> sequence = {s.sot, *s.language_token("en"), s.no_timestamps};
  sequence.insert(sequence.end(), text.begin(), text.end());
  sequence.push_back(s.eot);

  WhisperRunner run(m, {.num_threads = 2});
  run.start(testing::log_mel_of("jfk.wav"));
  const auto aligned = detail::whisper::align_tokens(run, sequence, 2, text.size() + 1,
                                                     whisper_alignment_heads_preset("tiny"), 550,
                                                     m.config().n_audio_ctx, 7);
  // Measured: 52 of 53 tokens identical, the last 4 cs (two positions) off
  // (whisper.cpp's f16 cross-attention keys and tanh GELU move the
  // attention slightly). Gates: 90% identical, none more than 10 cs off.
  std::size_t exact = 0;
  std::int64_t worst = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto ours = static_cast<std::int64_t>(2 * aligned.row_starts[i + 1]);
    exact += ours == expected_cs[i];
    worst = std::max<std::int64_t>(worst, std::llabs(ours - expected_cs[i]));
  }
  CAPTURE(exact, worst, text.size());
  CHECK(exact * 10 >= text.size() * 9);
  CHECK(worst <= 10);
}
