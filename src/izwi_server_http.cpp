// izwi::server_http_compiled: the Server's life cycle, routing, models,
// health and metrics, and the admin and web playground routes, compiled once
// (cmake/izwiCompiled.cmake; one part of <izwi/server/src.hpp>).
#include <izwi/server/server.hpp>
#include <izwi/server/impl/server.hpp>
#include <izwi/server/impl/admin_routes.hpp>
#include <izwi/server/impl/web_ui_routes.hpp>
