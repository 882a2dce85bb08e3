# Runs the kernel test executable on an emulated x86-64 CPU without AVX
# (qemu-user, -cpu Westmere), expecting the dispatcher to choose sse2.
# cmake -DQEMU=<qemu-x86_64 or empty> -DPROGRAM=<izwi_kernel_tests> -DX86=<ON|OFF> -P run_without_avx.cmake
if(NOT X86)
  message("SKIPPED: not an x86-64 build (no AVX variants to avoid)")
  return()
endif()
if(NOT QEMU)
  message("SKIPPED: qemu-x86_64 not found (Debian: qemu-user)")
  return()
endif()
set(ENV{IZWI_EXPECT_CPU_ARCH} sse2)
unset(ENV{IZWI_CPU_ARCH})
execute_process(COMMAND ${QEMU} -cpu Westmere ${PROGRAM} RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "izwi_kernel_tests under qemu-x86_64 -cpu Westmere failed: ${result}")
endif()
