# Driver of the install/consumer tests (cmake -P), one nested build per test.
#   MODE=install        cmake --install BUILD_DIR into a fresh prefix, then build
#                       consumer/ against it with find_package(izwi)
#   MODE=subdirectory   build subdirectory_consumer/, which add_subdirectory()s SOURCE_DIR
# Then runs the consumer program, which must exit 0.
foreach(var MODE WORK_DIR SOURCE_DIR BUILD_DIR GENERATOR CXX_COMPILER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_consumer.cmake: ${var} not set")
  endif()
endforeach()

function(run)
  string(JOIN " " pretty ${ARGN})
  message(STATUS "$ ${pretty}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "failed (${result}): ${pretty}")
  endif()
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(common -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=Debug)
if(MAKE_PROGRAM)
  list(APPEND common -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM})
endif()

if(MODE STREQUAL "install")
  set(prefix ${WORK_DIR}/prefix)
  run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
  foreach(f include/izwi/core/sampling_params.hpp include/izwi/core/impl/sampling_params.hpp
            include/izwi/concepts.hpp)
    if(NOT EXISTS ${prefix}/${f})
      message(FATAL_ERROR "not installed: ${f}")
    endif()
  endforeach()
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/test/build/consumer -B ${WORK_DIR}/build ${common}
      -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON)
elseif(MODE STREQUAL "subdirectory")
  # The nested tree compiles the kernel library. Its AVX-512 variant (a third
  # of that, ~15 s of CPU) is left out where this CPU cannot run it, as the
  # sanitizer configurations do (scripts/test.sh): the consumer checks that it
  # runs this CPU's best variant, which is then AVX2 or SSE2 either way.
  set(kernel_args "")
  if(EXISTS /proc/cpuinfo)
    file(READ /proc/cpuinfo cpuinfo)
    if(cpuinfo MATCHES "flags[^\n]* sse2[ \n]" AND NOT cpuinfo MATCHES " avx512f[ \n]")
      set(kernel_args -DIZWI_KERNELS_AVX512=OFF)
    endif()
  endif()
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/test/build/subdirectory_consumer -B ${WORK_DIR}/build ${common}
      -DIZWI_SOURCE_DIR=${SOURCE_DIR} ${kernel_args})
else()
  message(FATAL_ERROR "unknown MODE ${MODE}")
endif()

run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
if(MODE STREQUAL "subdirectory")
  # The consumer links izwi::izwi only: building it must not have compiled the
  # separate-compilation libraries (cmake/izwiCompiled.cmake, EXCLUDE_FROM_ALL
  # when izwi is not the top-level project).
  file(GLOB_RECURSE built ${WORK_DIR}/build/izwi/*compiled*.a)
  if(built)
    message(FATAL_ERROR "add_subdirectory(izwi) built libraries its consumer does not link: ${built}")
  endif()
endif()
run(${WORK_DIR}/build/izwi_consumer)
