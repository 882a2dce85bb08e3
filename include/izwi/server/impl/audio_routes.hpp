#pragma once
// The audio endpoints (/v1/audio/speech, /transcriptions, /translations).
// Until a speech model family is served they answer which model is missing.
// Part of the Server bodies; included by impl/server.hpp.

namespace izwi::server {

inline void Server::audio_unavailable(HandlerContext& ctx, Task task) {
  // The model a JSON body names (speech); multipart bodies are not looked into here.
  std::string name;
  if (task == Task::tts) {
    try {
      const boost::json::object body = openai::parse_json_object(ctx.request.body());
      if (const auto* m = body.if_contains("model"); m && m->is_string()) name = std::string(m->as_string());
    } catch (const ApiError&) {
    }
  }
  if (!name.empty()) {
    std::shared_ptr<AnyEngine> engine = registry_.find(name);
    if (!engine)
      throw ApiError(404, "invalid_request_error",
                     "The model `" + openai::sanitize_utf8(name.substr(0, 200)) + "` does not exist.", "model",
                     "model_not_found");
  }
  throw ApiError::bad_request("No model serving " + std::string(detail::task_words(task)) +
                                  " is loaded; this endpoint answers once one is.",
                              "model", "model_not_found");
}

}  // namespace izwi::server
