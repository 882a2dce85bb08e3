# izwi::kernels: the CPU kernels compiled once per instruction-set family, and
# the dispatcher that picks one at run time (include/izwi/kernels/cpu/dispatch.hpp).
#
#   src/kernels/cpu/baseline.cpp   no -m flags: "scalar", "sse2" (x86-64) or
#                                  "baseline" (other CPUs), the dispatcher
#   src/kernels/cpu/avx2.cpp       -mavx2 -mfma -mf16c                 (x86-64)
#   src/kernels/cpu/avx512.cpp     -mavx512f/cd/bw/dq/vl -mavx2 -mfma -mf16c (x86-64)
#
# A small static library, exported with izwiTargets and linked by the
# INTERFACE target izwi::izwi, so both find_package(izwi) and
# add_subdirectory() users get it without asking. baseline.cpp stays the
# first source (first archive member): see its header comment.
#
# Included by the top-level CMakeLists.txt; defines the target `izwi_kernels`.

add_library(izwi_kernels STATIC src/kernels/cpu/baseline.cpp)
add_library(izwi::kernels ALIAS izwi_kernels)
set_target_properties(izwi_kernels PROPERTIES EXPORT_NAME kernels POSITION_INDEPENDENT_CODE ON)
target_compile_features(izwi_kernels PUBLIC cxx_std_20)
target_include_directories(izwi_kernels PUBLIC
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_link_libraries(izwi_kernels PUBLIC Threads::Threads)
# A library built without optimisation would make every program slow that
# links it, whatever its own build type: -O2 unless the build type sets more.
# Under a sanitizer -O1, as the rest of izwi there (scripts/test.sh): the
# instrumented kernels are for finding memory errors on the tests' small
# shapes, and -O2 doubled their compile (ASan+UBSan, the baseline variant
# alone, idle: 50 s at -O2, 30 s at -O1).
if(IZWI_SANITIZE)
  target_compile_options(izwi_kernels PRIVATE -O1 -fsanitize=${IZWI_SANITIZE} -fno-omit-frame-pointer)
else()
  target_compile_options(izwi_kernels PRIVATE $<$<CONFIG:Debug,>:-O2>)
endif()

set(IZWI_KERNELS_X86_64 OFF)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$" AND CMAKE_SIZEOF_VOID_P EQUAL 8)
  set(IZWI_KERNELS_X86_64 ON)
endif()
option(IZWI_KERNELS_X86_VARIANTS "Build the AVX2 and AVX-512 kernel variants (x86-64)" ${IZWI_KERNELS_X86_64})
# Off: the dispatcher never offers "avx512"/"avx512bw" (AVX2 is the best). For
# builds that only test on a host without AVX-512: scripts/test.sh's sanitizer
# configurations there, where instrumenting that variant was a seventh of the
# ASan build and no test could run it.
option(IZWI_KERNELS_AVX512 "Build the AVX-512 kernel variant (with IZWI_KERNELS_X86_VARIANTS)" ON)

if(IZWI_KERNELS_X86_VARIANTS)
  # Each variant translation unit gets its family's flags and nothing else
  # does; hidden visibility keeps their inline functions out of any shared
  # object the library is linked into.
  set(variant_common -fvisibility=hidden -fvisibility-inlines-hidden)
  set_source_files_properties(src/kernels/cpu/avx2.cpp PROPERTIES
    COMPILE_OPTIONS "${variant_common};-mavx2;-mfma;-mf16c")
  set_source_files_properties(src/kernels/cpu/avx512.cpp PROPERTIES
    COMPILE_OPTIONS "${variant_common};-mavx512f;-mavx512cd;-mavx512bw;-mavx512dq;-mavx512vl;-mavx2;-mfma;-mf16c;$<$<CXX_COMPILER_ID:GNU>:-Wno-maybe-uninitialized>;-Wno-uninitialized")
  # GCC 12's avx512fintrin.h builds _mm512_undefined_ps() as `__m512 __Y = __Y;`,
  # which -Wall reports wherever xsimd inlines an AVX-512 intrinsic (hence the
  # -Wno above; Clang has no -Wmaybe-uninitialized and warns about the name).
  target_sources(izwi_kernels PRIVATE src/kernels/cpu/avx2.cpp)
  if(IZWI_KERNELS_AVX512)
    target_sources(izwi_kernels PRIVATE src/kernels/cpu/avx512.cpp)
    set(have_avx512 1)
  else()
    set(have_avx512 0)
  endif()
  set_source_files_properties(src/kernels/cpu/baseline.cpp PROPERTIES
    COMPILE_DEFINITIONS "IZWI_KERNELS_HAVE_AVX2=1;IZWI_KERNELS_HAVE_AVX512=${have_avx512}")
endif()
