# Runs the kernel test executable on an emulated x86-64 CPU (qemu-user) and
# expects the dispatcher to choose a given variant there by itself.
# cmake -DQEMU=<qemu-x86_64 or empty> -DPROGRAM=<izwi_kernel_tests> -DX86=<ON|OFF>
#       -DCPU=<qemu CPU model> -DEXPECT=<variant> -P run_on_cpu_model.cmake
if(NOT X86)
  message("SKIPPED: not an x86-64 build (no AVX variants to choose between)")
  return()
endif()
if(NOT QEMU)
  message("SKIPPED: qemu-x86_64 not found (Debian: qemu-user)")
  return()
endif()
set(ENV{IZWI_EXPECT_CPU_ARCH} ${EXPECT})
# Only the chosen variant's kernels (kernel_test_util.hpp): every variant is
# checked natively; here the point is the chosen path on this CPU model.
set(ENV{IZWI_TEST_ACTIVE_VARIANT_ONLY} 1)
unset(ENV{IZWI_CPU_ARCH})
# qemu warns about every CPU feature of the model TCG cannot emulate; keep
# the test's own output readable.
execute_process(COMMAND ${QEMU} -cpu ${CPU} ${PROGRAM} RESULT_VARIABLE result ERROR_VARIABLE errors)
string(REGEX REPLACE "[^\n]*TCG doesn't support requested feature[^\n]*\n" "" errors "${errors}")
message("${errors}")
if(NOT result EQUAL 0)
  message(FATAL_ERROR "izwi_kernel_tests under qemu-x86_64 -cpu ${CPU} (expecting ${EXPECT}) failed: ${result}")
endif()
