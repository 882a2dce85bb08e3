# Driver of izwi_add_compile_fail_test (cmake -P). Builds one object target and
# judges the outcome:
#   MODE=fail     passes only if the build fails AND the output matches the regex
#                 in EXPECT_FILE (so a failure for the wrong reason is reported);
#   MODE=control  passes only if the build succeeds.
foreach(var BUILD_DIR TARGET EXPECT_FILE MODE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "izwiCompileFail.cmake: ${var} not set")
  endif()
endforeach()

set(config_args "")
if(CONFIG)
  set(config_args --config ${CONFIG})
endif()
execute_process(
  COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --target ${TARGET} ${config_args}
  RESULT_VARIABLE result
  OUTPUT_VARIABLE output
  ERROR_VARIABLE output)
file(READ ${EXPECT_FILE} expect)

if(MODE STREQUAL "control")
  if(NOT result EQUAL 0)
    message("${output}")
    message(FATAL_ERROR "control build of ${TARGET} failed: the source is broken beyond the line it means to reject")
  endif()
  message(STATUS "control build of ${TARGET} compiled, as it should")
  return()
endif()

if(result EQUAL 0)
  message("${output}")
  message(FATAL_ERROR "${TARGET} compiled, but it must not: the contract it tests no longer rejects it")
endif()
if(NOT output MATCHES "${expect}")
  message("${output}")
  message(FATAL_ERROR "${TARGET} failed to compile, but not with the expected diagnostic.\nExpected to match: ${expect}")
endif()
message(STATUS "${TARGET} failed to compile with the expected diagnostic (matched: ${CMAKE_MATCH_0})")
