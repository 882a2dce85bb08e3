#pragma once
// The error the tokenizer throws for a tokenizer.json it refuses: malformed
// JSON, a model type or pre-tokenizer it does not implement, a merge whose
// parts are not in the vocabulary. The message names the file and the problem.

#include <izwi/core/error.hpp>

#include <string>
#include <utility>

namespace izwi::tokenizer {

/// `what()` reads "<file>: <problem>".
class tokenizer_error : public izwi::error {
 public:
  tokenizer_error(std::string file, const std::string& problem)
      : izwi::error(file + ": " + problem), file_(std::move(file)) {}

  /// The file as the caller named it.
  const std::string& file() const noexcept { return file_; }

 private:
  std::string file_;
};

}  // namespace izwi::tokenizer
