// izwi::server_compiled: izwi-server's stock model loader, compiled once
// (include/izwi/config.hpp, include/izwi/server/src.hpp).
#include <izwi/server/src.hpp>
