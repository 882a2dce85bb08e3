#pragma once
// The error every model-file reader in include/izwi/io/ throws for a file it
// refuses (safetensors today, GGUF later): it carries the file and, where one
// is involved, the tensor, so a caller can say which download is broken.

#include <izwi/core/error.hpp>

#include <string>
#include <utility>

namespace izwi::io {

/// A model file is malformed, truncated, or uses something izwi does not
/// support. `what()` reads "<file>: tensor '<name>': <problem>" (the tensor
/// part only when a tensor is involved).
class format_error : public izwi::error {
 public:
  format_error(std::string file, std::string tensor, const std::string& problem)
      : izwi::error(compose(file, tensor, problem)), file_(std::move(file)), tensor_(std::move(tensor)) {}

  /// The file as the caller named it.
  const std::string& file() const noexcept { return file_; }
  /// The tensor concerned; empty when the problem is the file as a whole.
  const std::string& tensor() const noexcept { return tensor_; }

 private:
  static std::string compose(const std::string& file, const std::string& tensor, const std::string& problem) {
    std::string text = file;
    if (!tensor.empty()) text += ": tensor '" + tensor + "'";
    text += ": ";
    text += problem;
    return text;
  }

  std::string file_;
  std::string tensor_;
};

}  // namespace izwi::io
