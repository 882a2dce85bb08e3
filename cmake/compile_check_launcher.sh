#!/bin/sh
# Compiler and linker launcher of IZWI_BENCHMARKS_COMPILE_ONLY (bench/CMakeLists.txt):
# the benchmarks are checked, not built.
#   compile_check_launcher.sh compile COMMAND...  runs COMMAND -fsyntax-only (every
#       diagnostic of a compile, templates instantiated, no code generated: about
#       60% less time than -O0), then creates the empty object file the build expects
#   compile_check_launcher.sh link COMMAND...     links nothing: writes, as the
#       program, a script that says it is not one and fails
set -eu
mode="$1"
shift
out=""
previous=""
for arg in "$@"; do
  [ "$previous" = "-o" ] && out="$arg"
  previous="$arg"
done
case "$mode" in
  compile)
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
