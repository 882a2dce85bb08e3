# izwi_std_headers(<out>): the standard headers (<vector>, <cmath>: no path,
# no extension) that izwi's public headers and their bodies include, as a
# list for target_precompile_headers. Two kinds of target compile izwi's
# headers one small translation unit at a time and parse these again in each:
# the header check (cmake/izwiHeaderCheck.cmake) and the compile-fail tests
# (cmake/izwiTesting.cmake). Precompiled, they are parsed once per target.
# What a precompiled standard library can no longer show, a header that
# forgets one of them, scripts/check_std_includes.py checks.
include_guard(GLOBAL)

function(izwi_std_headers out)
  file(GLOB_RECURSE files CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/include/izwi/*.hpp)
  set(std "")
  foreach(file IN LISTS files)
    file(STRINGS ${file} lines REGEX "^#[ \t]*include[ \t]*<[a-z_0-9]+>")
    foreach(line IN LISTS lines)
      string(REGEX REPLACE "^#[ \t]*include[ \t]*(<[a-z_0-9]+>).*" "\\1" name "${line}")
      list(APPEND std ${name})
    endforeach()
  endforeach()
  list(REMOVE_DUPLICATES std)
  list(SORT std)
  set(${out} ${std} PARENT_SCOPE)
endfunction()
