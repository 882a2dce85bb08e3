#!/usr/bin/env bash
# The main job, for now: set up a fresh Debian 12 machine, build the example
# host program izwi-demo (examples/demo) and run it. Arguments go to izwi-demo.
# Build directory: $IZWI_DEMO_BUILD_DIR (default build/).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build="${IZWI_DEMO_BUILD_DIR:-build}"

scripts/setup-debian.sh
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DIZWI_BUILD_EXAMPLES=ON
cmake --build "$build" --target izwi-demo -j "$(nproc)"
demo="$(find "$build" -type f -name izwi-demo -perm -u+x | head -n 1)"
if [[ -z "$demo" ]]; then
  echo "run-demo.sh: izwi-demo was not built (is examples/demo present?)" >&2
  exit 1
fi
exec "$demo" "$@"
