#pragma once
// Model administration (/v1/admin/models...: list, get, load, unload), behind
// the admin key. Part of the Server bodies; included by impl/server.hpp.

#include "izwi/server/impl/server_common.hpp"

namespace izwi::server {

namespace detail {

/// A registry operation (admin load/unload) answered when it ends. The
/// registry calls back on its worker thread; the answer is posted to the
/// connection's strand.
inline ModelRegistry::Done answer_on_strand(const std::shared_ptr<http::Session>& session, std::string id,
                                            std::string_view state) {
  auto executor = session->get_executor();
  std::weak_ptr<http::Session> weak = session;
  return [weak, executor, id = std::move(id), state = std::string(state)](std::optional<ApiError> error) {
    boost::asio::post(executor, [weak, id, state, error = std::move(error)] {
      auto session = weak.lock();
      if (!session) return;
      session->run_guarded([&] {
        if (error) {
          session->respond(json_response(error->status, openai::error_json(*error)));
          return;
        }
        boost::json::object body{{"id", id}, {"object", "model"}, {"state", state}};
        session->respond(json_response(200, body));
      });
    });
  };
}

/// A pending admin operation holds nothing to cancel: the load goes on.
struct DetachedOperation final : http::PendingResponse {
  void cancel() noexcept override {}
};

inline boost::json::object entry_json(const ModelEntry& entry) {
  boost::json::object o;
  o["id"] = entry.id;
  o["object"] = "model";
  o["state"] = std::string(to_string(entry.state));
  if (!entry.error.empty()) o["error"] = openai::sanitize_utf8(entry.error);
  if (entry.info) {
    const ModelInfo& info = *entry.info;
    o["path"] = openai::sanitize_utf8(info.path.string());
    o["created"] = info.created;
    o["owned_by"] = info.owned_by;
    boost::json::array tasks;
    for (Task t : info.tasks) tasks.emplace_back(std::string(to_string(t)));
    o["tasks"] = std::move(tasks);
    o["max_model_len"] = info.max_model_len;
    o["untrained"] = info.untrained;
    o["description"] = openai::sanitize_utf8(info.description);
    o["device"] = openai::sanitize_utf8(info.device);
  }
  if (entry.status) {
    const EngineStatus& s = *entry.status;
    o["status"] = boost::json::object{{"num_running", s.num_running},
                                      {"num_pending", s.num_pending},
                                      {"num_kv_blocks", s.num_kv_blocks},
                                      {"num_kv_blocks_used", s.num_kv_blocks_used},
                                      {"draining", s.draining}};
  }
  return o;
}

}  // namespace detail

IZWI_DECL void Server::admin_list(HandlerContext& ctx) {
  boost::json::array data;
  for (const ModelEntry& entry : registry_.entries()) data.push_back(detail::entry_json(entry));
  ctx.session->respond(detail::json_response(200, boost::json::object{{"object", "list"}, {"data", std::move(data)}},
                                             ctx.request.version()));
}

IZWI_DECL void Server::admin_get(HandlerContext& ctx) {
  const std::string& id = ctx.match.param("id");
  std::optional<ModelEntry> entry = registry_.entry(id);
  if (!entry)
    throw ApiError::not_found("No model `" + openai::sanitize_utf8(id.substr(0, 200)) + "` is known.",
                              "model_not_found");
  ctx.session->respond(detail::json_response(200, detail::entry_json(*entry), ctx.request.version()));
}

IZWI_DECL void Server::admin_load(HandlerContext& ctx) {
  if (draining()) throw ApiError::unavailable("The server is shutting down.");
  const std::string& id = ctx.match.param("id");
  ctx.session->attach(std::make_shared<detail::DetachedOperation>());
  registry_.load(id, detail::answer_on_strand(ctx.session, id, "loaded"));
}

IZWI_DECL void Server::admin_unload(HandlerContext& ctx) {
  const std::string& id = ctx.match.param("id");
  ctx.session->attach(std::make_shared<detail::DetachedOperation>());
  registry_.unload(id, config_.unload_grace, detail::answer_on_strand(ctx.session, id, "unloaded"));
}

}  // namespace izwi::server
