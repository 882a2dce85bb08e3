// izwi::server_http_compiled: the Server's speech and saved voices (Qwen3-TTS),
// compiled once (cmake/izwiCompiled.cmake; one part of <izwi/server/src.hpp>).
#include <izwi/server/server.hpp>
#include <izwi/server/impl/speech_routes.hpp>
