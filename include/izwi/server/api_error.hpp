#pragma once
// ApiError: an HTTP error in OpenAI's envelope.
//
//   {"error": {"message": "...", "type": "invalid_request_error",
//              "param": "messages", "code": null}}
//
// Anything that answers a request throws or returns one of these; the HTTP
// layer turns it into the status line, headers (Retry-After for 429,
// WWW-Authenticate for 401) and body. The message is meant for the client:
// never put a path, an exception's what() from a library or a stack of
// internals in it — a 500 carries a fixed text and the details go to the log.

#include <optional>
#include <stdexcept>
#include <string>

namespace izwi::server {

struct ApiError : std::runtime_error {
  /// HTTP status: 400, 401, 404, 405, 413, 429, 500, 503, ...
  unsigned status;
  /// OpenAI's "type": invalid_request_error, authentication_error,
  /// not_found_error, rate_limit_error, server_error, service_unavailable_error.
  std::string type;
  /// The request field at fault, as a JSON path ("messages[2].content").
  std::optional<std::string> param;
  /// OpenAI's "code" (e.g. "model_not_found", "invalid_api_key").
  std::optional<std::string> code;
  /// Seconds for a Retry-After header (429, 503).
  std::optional<unsigned> retry_after_seconds;

  ApiError(unsigned status, std::string type, const std::string& message, std::optional<std::string> param = {},
           std::optional<std::string> code = {})
      : std::runtime_error(message), status(status), type(std::move(type)), param(std::move(param)),
        code(std::move(code)) {}

  /// 400 invalid_request_error naming the field.
  static ApiError bad_request(const std::string& message, std::optional<std::string> param = {},
                              std::optional<std::string> code = {}) {
    return ApiError(400, "invalid_request_error", message, std::move(param), std::move(code));
  }
  static ApiError not_found(const std::string& message, std::optional<std::string> code = {}) {
    return ApiError(404, "not_found_error", message, std::nullopt, std::move(code));
  }
  static ApiError unavailable(const std::string& message, unsigned retry_after = 1) {
    ApiError e(503, "service_unavailable_error", message);
    e.retry_after_seconds = retry_after;
    return e;
  }
  static ApiError too_many_requests(const std::string& message, unsigned retry_after = 1) {
    ApiError e(429, "rate_limit_error", message);
    e.retry_after_seconds = retry_after;
    return e;
  }
  static ApiError internal() {
    return ApiError(500, "server_error", "The server had an error while processing your request.");
  }
};

}  // namespace izwi::server
