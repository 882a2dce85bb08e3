#pragma once
// izwi-server's compiled part, for IZWI_SEPARATE_COMPILATION (see
// izwi/config.hpp): the stock model loader and the Server's bodies (life
// cycle, routing and every endpoint family), once. Include it in exactly one
// translation unit of a program that defines IZWI_SEPARATE_COMPILATION
// everywhere and compiles <izwi/src.hpp> too (the loader instantiates the
// stock engines).
//
// The CMake targets compile the same parts as several translation units, so
// that they build in parallel (cmake/izwiCompiled.cmake):
// izwi::server_http_compiled is the Server (src/izwi_server_http*.cpp, no
// engine), izwi::server_compiled adds the loader (src/izwi_server.cpp) and,
// where OpenCL exists, the loader's OpenCL half (src/izwi_server_opencl.cpp;
// IZWI_WITH_OPENCL; izwi/server/detail/opencl_loader.hpp).

#if !defined(IZWI_SEPARATE_COMPILATION)
#error "izwi/server/src.hpp is for IZWI_SEPARATE_COMPILATION builds"
#endif

#include "izwi/server/model_loader.hpp"
#include "izwi/server/impl/device.ipp"
#include "izwi/server/impl/model_loader.ipp"

#include "izwi/server/server.hpp"
#include "izwi/server/impl/server.hpp"
#include "izwi/server/impl/generation_routes.hpp"
#include "izwi/server/impl/admin_routes.hpp"
#include "izwi/server/impl/audio_routes.hpp"
#include "izwi/server/impl/speech_routes.hpp"
#include "izwi/server/impl/web_ui_routes.hpp"
