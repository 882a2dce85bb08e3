# Test helpers shared by every area's test/<area>/CMakeLists.txt.
# Included by the top-level CMakeLists.txt before test/ is added.
#
#   izwi_test_selected(<out-var> [LABELS ...])
#       TRUE when a test (or test executable) with these labels belongs to this
#       build. IZWI_TEST_ONLY_LABELS (a list, empty = everything) restricts a
#       build to executables carrying one of the labels: the ThreadSanitizer
#       configuration sets it to "threads" and so compiles only the threaded
#       test executables. IZWI_TEST_EXCLUDE_LABELS works the other way: a
#       test (or executable) carrying one of those labels is left out of the
#       build entirely, so a configuration never compiles what it will not
#       run (the sanitizer build excludes slow, install, compile-fail, fuzz).
#       izwi_add_test calls this; call it yourself before an add_test whose
#       executable is expensive to build.
#
#   izwi_register_test_target(<target>)
#       Adds <target> to the umbrella target `izwi-tests` (build every test
#       executable of this configuration and nothing else).
#
#   izwi_add_compile_fail_test(<name> SOURCE <file.cpp> EXPECT <regex>
#                              [LIBS <targets>...] [DEFINITIONS <defs>...]
#                              [CONTROL] [LABELS <labels>...])
#       A must-not-compile test. SOURCE is compiled as part of an
#       EXCLUDE_FROM_ALL object library linked to izwi::izwi (plus LIBS), so it
#       sees exactly the include paths, standard and flags of a real user. The
#       CTest test <name> builds that one object and passes only if the compiler
#       FAILS and its output matches EXPECT (a CMake regular expression): a file
#       that fails for another reason (a typo, a missing include) does not pass.
#       CONTROL adds a second test, <name>.control, that compiles SOURCE with
#       IZWI_COMPILE_FAIL_CONTROL defined and must SUCCEED: write the bad line as
#         #ifndef IZWI_COMPILE_FAIL_CONTROL
#           bad_line();
#         #else
#           good_line();
#         #endif
#       so the control proves everything around the bad line is well-formed.
#       Every such test carries the label `compile-fail`.

set(IZWI_TEST_ONLY_LABELS "" CACHE STRING
  "Build and register only test executables with one of these labels (e.g. 'threads' for ThreadSanitizer); empty: all")
set(IZWI_TEST_EXCLUDE_LABELS "" CACHE STRING
  "Leave out test executables and tests with one of these labels (e.g. 'slow;fuzz' for the sanitizer build)")
set_property(GLOBAL PROPERTY IZWI_TEST_TARGETS "")

function(izwi_test_selected out)
  cmake_parse_arguments(ARG "" "" "LABELS" ${ARGN})
  set(selected TRUE)
  if(IZWI_TEST_ONLY_LABELS)
    set(selected FALSE)
    foreach(label IN LISTS ARG_LABELS)
      if(label IN_LIST IZWI_TEST_ONLY_LABELS)
        set(selected TRUE)
      endif()
    endforeach()
  endif()
  foreach(label IN LISTS ARG_LABELS)
    if(label IN_LIST IZWI_TEST_EXCLUDE_LABELS)
      set(selected FALSE)
    endif()
  endforeach()
  set(${out} ${selected} PARENT_SCOPE)
endfunction()

function(izwi_register_test_target target)
  set_property(GLOBAL APPEND PROPERTY IZWI_TEST_TARGETS ${target})
endfunction()

set(IZWI_COMPILE_FAIL_DRIVER ${CMAKE_CURRENT_LIST_DIR}/izwiCompileFail.cmake)
include(izwiStdHeaders)

# The standard headers, precompiled once for every compile-fail test (built
# by the first test that needs it): each test compiles one small unit, which
# spent about 1.5 s of its 3-8 s parsing them. Flags as the tests' own, so
# GCC accepts the PCH; the tests' -D definitions do not appear in it.
function(izwi_compile_fail_pch out)
  if(NOT TARGET izwi_compile_fail_pch)
    set(source ${PROJECT_BINARY_DIR}/izwi_compile_fail_pch.cpp)
    file(CONFIGURE OUTPUT ${source} CONTENT "// The standard headers' PCH for the compile-fail tests (cmake/izwiTesting.cmake).\n")
    add_library(izwi_compile_fail_pch OBJECT EXCLUDE_FROM_ALL ${source})
    target_link_libraries(izwi_compile_fail_pch PRIVATE izwi::izwi)
    target_compile_definitions(izwi_compile_fail_pch PRIVATE IZWI_SEPARATE_COMPILATION)
    target_compile_options(izwi_compile_fail_pch PRIVATE -O0 -g0)
    izwi_std_headers(std_headers)
    target_precompile_headers(izwi_compile_fail_pch PRIVATE ${std_headers})
  endif()
  set(${out} izwi_compile_fail_pch PARENT_SCOPE)
endfunction()

function(izwi_add_compile_fail_test name)
  cmake_parse_arguments(ARG "CONTROL" "SOURCE;EXPECT" "LIBS;DEFINITIONS;LABELS" ${ARGN})
  if(NOT ARG_SOURCE OR NOT ARG_EXPECT)
    message(FATAL_ERROR "izwi_add_compile_fail_test(${name}): SOURCE and EXPECT are required")
  endif()
  set(labels compile-fail ${ARG_LABELS})
  izwi_test_selected(selected LABELS ${labels})
  if(NOT selected)
    return()
  endif()
  get_filename_component(source ${ARG_SOURCE} ABSOLUTE)
  string(MAKE_C_IDENTIFIER "izwi_cf_${name}" target)

  set(variants fail)
  if(ARG_CONTROL)
    list(APPEND variants control)
  endif()
  foreach(variant IN LISTS variants)
    set(t ${target}_${variant})
    add_library(${t} OBJECT EXCLUDE_FROM_ALL ${source})
    target_link_libraries(${t} PRIVATE izwi::izwi ${ARG_LIBS})
    # The separate-compilation mode (izwi/config.hpp): the non-template bodies
    # (IZWI_DECL) are left out, and no diagnostic under test can come from
    # them, since a contract is checked where a template meets the types the
    # test names. A third less to parse per test; the header check compiles
    # those bodies header-only.
    target_compile_definitions(${t} PRIVATE IZWI_SEPARATE_COMPILATION ${ARG_DEFINITIONS})
    # Diagnostics come from the front end: skip optimisation and debug info.
    target_compile_options(${t} PRIVATE -O0 -g0)
    izwi_compile_fail_pch(pch)
    target_precompile_headers(${t} REUSE_FROM ${pch})
    if(variant STREQUAL "control")
      target_compile_definitions(${t} PRIVATE IZWI_COMPILE_FAIL_CONTROL=1)
      set(test_name ${name}.control)
    else()
      set(test_name ${name})
    endif()
    # The regex goes through a file, so any character in it survives intact.
    set(expect_file ${CMAKE_CURRENT_BINARY_DIR}/${t}.expect)
    file(WRITE ${expect_file} "${ARG_EXPECT}")
    add_test(NAME ${test_name}
      COMMAND ${CMAKE_COMMAND}
        -DBUILD_DIR=${PROJECT_BINARY_DIR} -DTARGET=${t} -DCONFIG=$<CONFIG>
        -DEXPECT_FILE=${expect_file} -DMODE=${variant}
        -P ${IZWI_COMPILE_FAIL_DRIVER})
    # Each test runs the build tool in the build tree: one at a time.
    set_tests_properties(${test_name} PROPERTIES LABELS "${labels}" RESOURCE_LOCK izwi_build_tree TIMEOUT 300)
  endforeach()
endfunction()
