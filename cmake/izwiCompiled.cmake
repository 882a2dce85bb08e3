# The separate-compilation mode (include/izwi/config.hpp), as CMake targets:
#
#   izwi::io_compiled      the model-file readers and writers of io/ (GGUF,
#                          safetensors, ggml, directories, JSON), once
#                          (src/izwi_io.cpp)
#   izwi::compiled         the stock engines (izwi/stock_engines.hpp), model
#                          loading, Qwen3-TTS's model and executor bodies and
#                          Whisper's executor, instantiated and compiled once (src/izwi.cpp),
#                          with izwi::io_compiled
#   izwi::server_http_compiled  the HTTP Server and its endpoint families
#                          (izwi/server/server.hpp), no engine
#                          (src/izwi_server_http*.cpp), with izwi::io_compiled
#   izwi::server_compiled  izwi-server's stock model loader (src/izwi_server.cpp),
#                          with both of the above
#
# Linking either defines IZWI_SEPARATE_COMPILATION for the consumer (PUBLIC),
# so its translation units see `extern template` declarations and compile none
# of that code again. izwi::izwi alone stays header-only.
#
# Included after the sanitizer options of the top-level CMakeLists.txt: the
# compiled part must carry the same instrumentation as the programs it joins.

# The model files' bodies were compiled at -O3 in every program and test that
# reads a checkpoint (a third of the object code of the tools, the server's
# loader and the model tests): here once, in their own unit, because the
# HTTP Server reads model files too (Silero VAD's weights) without linking
# the stock engines.
add_library(izwi_io_compiled STATIC ${PROJECT_SOURCE_DIR}/src/izwi_io.cpp)
add_library(izwi::io_compiled ALIAS izwi_io_compiled)
target_link_libraries(izwi_io_compiled PUBLIC izwi)
target_compile_definitions(izwi_io_compiled PUBLIC IZWI_SEPARATE_COMPILATION)
set_target_properties(izwi_io_compiled PROPERTIES EXPORT_NAME io_compiled POSITION_INDEPENDENT_CODE ON)

add_library(izwi_compiled STATIC ${PROJECT_SOURCE_DIR}/src/izwi.cpp)
add_library(izwi::compiled ALIAS izwi_compiled)
target_link_libraries(izwi_compiled PUBLIC izwi izwi_io_compiled izwi_tokenizer izwi_audio)  # izwi_audio: Whisper's log-mel
target_compile_definitions(izwi_compiled PUBLIC IZWI_SEPARATE_COMPILATION)
set_target_properties(izwi_compiled PROPERTIES EXPORT_NAME compiled POSITION_INDEPENDENT_CODE ON)

# The Server's bodies were the costliest code of the build, compiled whole in
# every program that constructs a Server (izwi-server, the HTTP tests): here
# once. It needs no stock engine, so the HTTP tests (built in the sanitizer
# configurations too) do not wait for src/izwi.cpp. One source per endpoint
# family, compiled as one translation unit (a unity build): each translation
# unit parses the server's headers again (about 12-15 s of CPU at -O3; four
# units took 88 s of CPU where one takes 39 s), and on the 2-core CI machine
# this unit and the HTTP tests' already build side by side.
add_library(izwi_server_http_compiled STATIC
  ${PROJECT_SOURCE_DIR}/src/izwi_server_http.cpp
  ${PROJECT_SOURCE_DIR}/src/izwi_server_http_generation.cpp
  ${PROJECT_SOURCE_DIR}/src/izwi_server_http_transcription.cpp
  ${PROJECT_SOURCE_DIR}/src/izwi_server_http_speech.cpp)
add_library(izwi::server_http_compiled ALIAS izwi_server_http_compiled)
set_target_properties(izwi_server_http_compiled PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 0)
target_link_libraries(izwi_server_http_compiled PUBLIC izwi_server izwi_io_compiled)
target_compile_definitions(izwi_server_http_compiled PUBLIC IZWI_SEPARATE_COMPILATION)
set_target_properties(izwi_server_http_compiled PROPERTIES EXPORT_NAME server_http_compiled
                                                           POSITION_INDEPENDENT_CODE ON)
# Under a sanitizer this unit is built for the HTTP tests only, which test
# protocol and lifecycle, not speed: -O0 halves its instrumented compile
# (ASan+UBSan: 139 s of CPU at -O1, 66 s at -O0) for a few seconds more of
# running them.
if(IZWI_SANITIZE)
  target_compile_options(izwi_server_http_compiled PRIVATE -O0)
endif()

add_library(izwi_server_compiled STATIC ${PROJECT_SOURCE_DIR}/src/izwi_server.cpp)
add_library(izwi::server_compiled ALIAS izwi_server_compiled)
target_link_libraries(izwi_server_compiled PUBLIC izwi_compiled izwi_server_http_compiled izwi_server)
set_target_properties(izwi_server_compiled PROPERTIES EXPORT_NAME server_compiled POSITION_INDEPENDENT_CODE ON)
# izwi-server --device opencl (izwi/server/device.hpp): where OpenCL exists,
# the loader's OpenCL half joins as its own translation unit, the only one
# that instantiates the OpenCL engines. IZWI_WITH_OPENCL stays private: the
# loader's interface is the same either way (open_device says when a build
# has no OpenCL).
if(TARGET izwi_opencl)
  target_sources(izwi_server_compiled PRIVATE ${PROJECT_SOURCE_DIR}/src/izwi_server_opencl.cpp)
  target_link_libraries(izwi_server_compiled PRIVATE OpenCL::OpenCL)
  target_compile_definitions(izwi_server_compiled PRIVATE IZWI_WITH_OPENCL)
endif()

# A project that vendors izwi (add_subdirectory) builds these only if it links
# them: they are minutes of compiling (the stock engines, the server), and a
# header-only user of izwi::izwi needs none of them. CMake leaves installing
# an EXCLUDE_FROM_ALL target undefined, so only a top-level izwi installs them.
if(IZWI_TOP_LEVEL)
  install(TARGETS izwi_io_compiled izwi_compiled izwi_server_http_compiled izwi_server_compiled EXPORT izwiTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
else()
  set_target_properties(izwi_io_compiled izwi_compiled izwi_server_http_compiled izwi_server_compiled
                        PROPERTIES EXCLUDE_FROM_ALL ON)
endif()
