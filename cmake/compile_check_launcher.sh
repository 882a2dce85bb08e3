#!/bin/sh
# Compiler and linker launcher of what is checked, not built: the benchmarks
# under IZWI_BENCHMARKS_COMPILE_ONLY (bench/CMakeLists.txt) and the header
# self-containment check (cmake/izwiHeaderCheck.cmake).
#   compile_check_launcher.sh compile COMMAND...  runs COMMAND -fsyntax-only (every
#       diagnostic of a compile, templates instantiated, no code generated: about
#       60% less time than -O0), then creates the empty object file the build expects.
#       A precompiled header's compile (-x c++-header) runs unchanged: its output
#       is what the checked sources read.
#   compile_check_launcher.sh link COMMAND...     links nothing: writes, as the
#       program, a script that says it is not one and fails
set -eu
mode="$1"
shift
out=""
previous=""
header=0
for arg in "$@"; do
  [ "$previous" = "-o" ] && out="$arg"
  [ "$previous" = "-x" ] && [ "$arg" = "c++-header" ] && header=1
  previous="$arg"
done
case "$mode" in
  compile)
    if [ "$header" = 1 ]; then
      exec "$@"
    fi
    "$@" -fsyntax-only
    [ -n "$out" ] && : >"$out"
    ;;
  link)
    [ -n "$out" ] || { echo "compile_check_launcher.sh: no -o in the link command" >&2; exit 1; }
    cat >"$out" <<STUB
#!/bin/sh
echo "$(basename "$out"): only compile-checked (IZWI_BENCHMARKS_COMPILE_ONLY=ON); build the benchmarks without that option to run them" >&2
exit 1
STUB
    chmod +x "$out"
    ;;
  *)
    echo "compile_check_launcher.sh: unknown mode '$mode'" >&2
    exit 2
    ;;
esac
