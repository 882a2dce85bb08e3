# izwi_add_fuzz_test(NAME <name> SOURCE <file.cpp> [LIBS <lib>...] [SECONDS <n>]
#                    [SEEDS_COMMAND <command> <args>...] [ENVIRONMENT <VAR=value>...])
#
# A libFuzzer target run for a bounded time as a CTest test (label "fuzz").
# izwi builds with g++, which has no libFuzzer, so the target is compiled
# directly with clang++ (clang-14 and libclang-rt-14-dev from
# scripts/setup-debian.sh) with -fsanitize=fuzzer,address,undefined, against
# izwi's include/ folder; LIBS are plain library names passed as -l<lib>.
# Without UBSan's vptr check (nothing polymorphic to check in the parsers; see
# CMakeLists.txt) and with line tables only (what a crash's stack needs):
# the gguf target's build 19.4 -> 14.9 s.
# Three tests, chained by CTest fixtures so `ctest -L fuzz` runs them in order:
#   <name>.build  builds the fuzzer (custom target <name>; not part of `all`)
#   <name>.seeds  runs SEEDS_COMMAND with the seed folder appended (if given)
#   <name>        runs the fuzzer for SECONDS (default 10, to keep the CI run within its budget;
#                 -DIZWI_FUZZ_SECONDS=<n> sets every target's, for a longer campaign) over
#                 <build>/<name>/corpus (new inputs) and <build>/<name>/seeds;
#                 it passes when no input crashes, leaks, hangs past 10 s or
#                 exceeds 2 GiB.
# Without clang++ the tests are left out with a configure message.
include_guard(GLOBAL)

set(IZWI_FUZZ_SECONDS "" CACHE STRING "Seconds every fuzz test runs (empty: each target's own, a CI smoke run of 6-10 s)")
find_program(IZWI_FUZZ_CXX NAMES clang++-14 clang++ DOC "clang++ with libFuzzer, for izwi's fuzz tests")

function(izwi_add_fuzz_test)
  cmake_parse_arguments(ARG "" "NAME;SOURCE;SECONDS" "LIBS;SEEDS_COMMAND;ENVIRONMENT" ${ARGN})
  if(NOT ARG_NAME OR NOT ARG_SOURCE)
    message(FATAL_ERROR "izwi_add_fuzz_test: NAME and SOURCE are required")
  endif()
  if(NOT IZWI_FUZZ_CXX)
    message(STATUS "izwi: no clang++ found, fuzz test ${ARG_NAME} left out")
    return()
  endif()
  if(COMMAND izwi_test_selected)
    izwi_test_selected(selected LABELS fuzz)
    if(NOT selected)
      return()
    endif()
  endif()
  if(NOT ARG_SECONDS)
    set(ARG_SECONDS 10)
  endif()
  if(IZWI_FUZZ_SECONDS)
    set(ARG_SECONDS ${IZWI_FUZZ_SECONDS})
  endif()
  get_filename_component(source "${ARG_SOURCE}" ABSOLUTE)
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/${ARG_NAME}")
  set(binary "${dir}/${ARG_NAME}")
  file(MAKE_DIRECTORY "${dir}/corpus" "${dir}/seeds")
  set(link_flags "")
  foreach(lib IN LISTS ARG_LIBS)
    list(APPEND link_flags "-l${lib}")
  endforeach()

  add_custom_command(OUTPUT "${binary}"
    COMMAND "${IZWI_FUZZ_CXX}" -std=c++20 -gline-tables-only -O1 -fsanitize=fuzzer,address,undefined
            -fno-sanitize=vptr -fno-sanitize-recover=undefined -I${PROJECT_SOURCE_DIR}/include
            -MD -MT "${binary}" -MF "${binary}.d" "${source}" -o "${binary}" ${link_flags}
    DEPENDS "${source}"
    DEPFILE "${binary}.d"
    COMMENT "Building fuzz target ${ARG_NAME} with ${IZWI_FUZZ_CXX}"
    VERBATIM)
  add_custom_target(${ARG_NAME} DEPENDS "${binary}")

  add_test(NAME ${ARG_NAME}.build
           COMMAND "${CMAKE_COMMAND}" --build "${CMAKE_BINARY_DIR}" --target ${ARG_NAME})
  # It runs the build tool in the build tree, as the compile-fail tests do:
  # one at a time (two ninjas in one tree can fail each other, seen once with
  # ctest -j2 after a header change).
  set_tests_properties(${ARG_NAME}.build PROPERTIES FIXTURES_SETUP ${ARG_NAME}.ready LABELS fuzz
                       RESOURCE_LOCK izwi_build_tree)
  if(ARG_SEEDS_COMMAND)
    add_test(NAME ${ARG_NAME}.seeds COMMAND ${ARG_SEEDS_COMMAND} "${dir}/seeds")
    set_tests_properties(${ARG_NAME}.seeds PROPERTIES FIXTURES_SETUP ${ARG_NAME}.ready LABELS fuzz)
  endif()
  add_test(NAME ${ARG_NAME}
           COMMAND "${binary}" -max_total_time=${ARG_SECONDS} -timeout=10 -rss_limit_mb=2048
                   -print_final_stats=1 "${dir}/corpus" "${dir}/seeds")
  set_tests_properties(${ARG_NAME} PROPERTIES
    FIXTURES_REQUIRED ${ARG_NAME}.ready
    LABELS fuzz
    TIMEOUT 600
    ENVIRONMENT "${ARG_ENVIRONMENT}")
endfunction()
