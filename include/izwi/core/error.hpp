#pragma once
// Errors raised at izwi's API edge. The step loop never throws per token: it
// reports through status values; exceptions are for requests and configuration
// a caller got wrong, with a message the caller can act on.

#include <stdexcept>
#include <string>

namespace izwi {

/// Base of every exception izwi throws on purpose.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A request or configuration value is out of its allowed range. `field()`
/// names the offending field (as a client would spell it, e.g. "top_p"), so the
/// server can put it into OpenAI's error envelope as `param`.
class invalid_argument : public error {
 public:
  invalid_argument(std::string field, const std::string& message)
      : error(message), field_(std::move(field)) {}
  const std::string& field() const noexcept { return field_; }

 private:
  std::string field_;
};

/// A device (a GPU) ran out of memory for one step's work. The engine then
/// preempts the step's last sequences (recomputed later, as under KV-cache
/// pressure) instead of failing them; a sequence that does not fit even
/// alone fails with this message.
class device_memory_exhausted : public error {
 public:
  using error::error;
};

/// The engine cannot take the request now (queue full, shutting down).
class unavailable : public error {
 public:
  using error::error;
};

}  // namespace izwi
