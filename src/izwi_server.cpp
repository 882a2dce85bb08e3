// izwi::server_compiled: izwi-server's stock model loader, compiled once
// (include/izwi/config.hpp). <izwi/server/src.hpp> is the same compiled part
// in one translation unit; here the Server's bodies are translation units of
// their own, in izwi::server_http_compiled (src/izwi_server_http*.cpp).
#if !defined(IZWI_SEPARATE_COMPILATION)
#error "src/izwi_server.cpp is built with IZWI_SEPARATE_COMPILATION (cmake/izwiCompiled.cmake)"
#endif
#include <izwi/server/model_loader.hpp>
#include <izwi/server/impl/device.ipp>
#include <izwi/server/impl/model_loader.ipp>
