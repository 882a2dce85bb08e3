#!/usr/bin/env bash
# Installs the reference implementations the tests compare against (DESIGN §6)
# from the npm registry, exactly as pinned in test/reference/package-lock.json:
#   npm ci --ignore-scripts   (no package may download or build anything at install time)
# Idempotent: does nothing when test/reference/node_modules already holds every
# locked package at its locked version. Needs node and npm (scripts/setup-debian.sh).
set -euo pipefail

dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/test/reference"
cd "$dir"

# Fresh when npm's own record of what it installed (node_modules/.package-lock.json)
# agrees with the lockfile on every package that applies to this platform.
fresh() {
  [ -f node_modules/.package-lock.json ] || return 1
  node -e '
    const fs = require("fs");
    const want = JSON.parse(fs.readFileSync("package-lock.json")).packages || {};
    const have = JSON.parse(fs.readFileSync("node_modules/.package-lock.json")).packages || {};
    let ok = true;
    for (const [path, p] of Object.entries(want)) {
      if (path === "") continue;
      const h = have[path];
      if (h === undefined) {
        // Optional (platform-specific) packages are skipped by npm on other platforms.
        if (!p.optional) { console.error("missing: " + path); ok = false; }
      } else if (h.version !== p.version) {
        console.error("stale: " + path + " " + h.version + " != " + p.version); ok = false;
      }
    }
    for (const path of Object.keys(have)) {
      if (!(path in want)) { console.error("extra: " + path); ok = false; }
    }
    process.exit(ok ? 0 : 1);
  '
}

if fresh; then
  echo "install-references: test/reference/node_modules is up to date with package-lock.json"
  exit 0
fi
# `npm install` from the lockfile rather than `npm ci`: node-llama-cpp lists a
# prebuilt binary per platform as optional dependencies, some of which the
# registry does not serve at this version, and `npm ci` refuses a lockfile
# without them. --omit=optional leaves out every other platform's (and every
# GPU) binary: the CPU build for linux-x64 is a direct dependency.
echo "install-references: npm install --ignore-scripts --omit=optional in test/reference"
npm install --ignore-scripts --omit=optional --no-audit --no-fund --loglevel=warn
fresh
