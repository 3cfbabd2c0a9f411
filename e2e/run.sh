#!/usr/bin/env bash
# The browser tests, from a fresh clone: installs Debian's chromium when it is
# missing, installs the client's and the runner's npm packages from their
# lock files, builds the client, installs Azurite (tools/azurite), then runs
# node --test (which builds and starts the simulator, the handler, Azurite
# and the demo servers itself).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x /usr/bin/chromium ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends chromium
fi

(cd client && npm ci --no-audit --no-fund --loglevel=error && npm run --silent build)
(cd e2e && npm ci --no-audit --no-fund --loglevel=error)
bash scripts/azurite.sh install # the quota tests' table store
cd e2e && node --test --test-concurrency=1 tests/
