// izwi::server_http_compiled: the Server's chat and completions,
// compiled once (cmake/izwiCompiled.cmake; one part of <izwi/server/src.hpp>).
#include <izwi/server/server.hpp>
#include <izwi/server/impl/generation_routes.hpp>
