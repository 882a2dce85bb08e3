// izwi::server_http_compiled: the Server's transcriptions and translations (Whisper),
// compiled once (cmake/izwiCompiled.cmake; one part of <izwi/server/src.hpp>).
#include <izwi/server/server.hpp>
#include <izwi/server/impl/audio_routes.hpp>
