# Finds izwi's dependencies and gives each a namespaced imported target.
# Used by izwi's own build and, installed beside izwiConfig.cmake, by consumers
# of the installed package, so both resolve dependencies the same way.
include(CMakeFindDependencyMacro)
find_dependency(Threads)

# xxHash is used header-only (XXH_INLINE_ALL): only its header is needed.
if(NOT TARGET izwi::xxhash)
  find_path(IZWI_XXHASH_INCLUDE_DIR xxhash.h REQUIRED)
  add_library(izwi::xxhash INTERFACE IMPORTED)
  target_include_directories(izwi::xxhash INTERFACE ${IZWI_XXHASH_INCLUDE_DIR})
endif()

# Audio: Debian ships pkg-config files (no CMake packages) for these.
# FFmpeg's libavformat/libavcodec/libavutil decode the upload containers
# libsndfile has no reader for (MP4/M4A, WebM, AAC) and encode AAC; they are
# required like the others (Debian: libavformat-dev libavcodec-dev).
# Rubber Band (librubberband-dev) time-stretches /v1/audio/speech's output
# for `speed` while keeping the pitch, in its streaming (real-time) mode.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  foreach(pair "sndfile;sndfile" "soxr;soxr" "fftw3f;fftw3f" "fftw3;fftw3"
               "avformat;libavformat" "avcodec;libavcodec" "avutil;libavutil"
               "rubberband;rubberband")
    list(GET pair 0 name)
    list(GET pair 1 module)
    if(NOT TARGET izwi::${name})
      pkg_check_modules(IZWI_PC_${name} QUIET IMPORTED_TARGET GLOBAL ${module})
      if(IZWI_PC_${name}_FOUND)
        add_library(izwi::${name} ALIAS PkgConfig::IZWI_PC_${name})
      endif()
    endif()
  endforeach()
endif()
foreach(name sndfile soxr fftw3f fftw3 avformat avcodec avutil rubberband)
  if(NOT TARGET izwi::${name})
    # Missing audio libraries only matter to users of izwi::audio; they get a
    # link error naming the library rather than a failed configure.
    add_library(izwi::${name} INTERFACE IMPORTED)
    target_link_libraries(izwi::${name} INTERFACE ${name})
  endif()
endforeach()

# Tokenizer: ICU's common library (libicu-dev), through CMake's FindICU.
if(NOT TARGET izwi::icuuc)
  find_package(ICU QUIET COMPONENTS uc)
  add_library(izwi::icuuc INTERFACE IMPORTED)
  if(ICU_FOUND)
    target_link_libraries(izwi::icuuc INTERFACE ICU::uc)
  else()
    # As for audio: only users of izwi::tokenizer need it, and they get a link
    # error naming the library rather than a failed configure.
    target_link_libraries(izwi::icuuc INTERFACE icuuc)
  endif()
endif()

# zlib (zlib1g-dev): the compression ratio of Whisper's temperature fallback (izwi::asr).
if(NOT TARGET izwi::zlib)
  find_package(ZLIB QUIET)
  add_library(izwi::zlib INTERFACE IMPORTED)
  if(ZLIB_FOUND)
    target_link_libraries(izwi::zlib INTERFACE ZLIB::ZLIB)
  else()
    target_link_libraries(izwi::zlib INTERFACE z)
  endif()
endif()

# A compiled Boost component as an imported target of izwi's: Boost's CMake
# config target when it has one, else the plain library name (as for audio: a
# link error naming the library rather than a failed configure).
function(izwi_import_boost_component target component)
  if(TARGET ${target})
    return()
  endif()
  find_package(Boost 1.81 QUIET CONFIG COMPONENTS ${component})
  add_library(${target} INTERFACE IMPORTED)
  if(TARGET Boost::${component})
    target_link_libraries(${target} INTERFACE Boost::${component})
  else()
    target_link_libraries(${target} INTERFACE boost_${component})
  endif()
endfunction()

# JSON (include/izwi/io/json.hpp, the tokenizer, the server): Boost.JSON, the
# one JSON library of izwi. Its parser has a compiled part, linked from Debian's
# libboost-json1.81-dev (libboost_json.so) so that every program reading a
# config.json or tokenizer.json needs nothing more than this target; a program
# may instead compile <boost/json/src.hpp> in one translation unit (Boost.JSON's
# header-only mode), which takes precedence over the shared library.
izwi_import_boost_component(izwi::boost_json json)

# Command lines of izwi's own programs (tools/, examples/, bench/): Boost.Program_options.
# The library headers never use it; it is a compiled library (Debian:
# libboost-program-options1.81-dev, part of libboost1.81-all-dev), so the
# programs link it rather than each parsing argv by hand.
izwi_import_boost_component(izwi::program_options program_options)

# HTTP server (include/izwi/server/): Boost.Beast and Asio from Boost's headers
# (libboost1.81-all-dev); Boost.JSON's compiled part comes with izwi::boost_json.
if(NOT TARGET izwi::boost)
  find_package(Boost 1.81 QUIET CONFIG)
  add_library(izwi::boost INTERFACE IMPORTED)
  if(TARGET Boost::headers)
    target_link_libraries(izwi::boost INTERFACE Boost::headers)
  endif()
endif()

# OpenCL (optional; izwi::opencl, the GPU executor): CMake's FindOpenCL gives
# OpenCL::OpenCL when the headers and the ICD loader are installed.
if(NOT TARGET OpenCL::OpenCL)
  find_package(OpenCL QUIET)
endif()
