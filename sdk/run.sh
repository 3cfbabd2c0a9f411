#!/usr/bin/env bash
# The OpenAI SDK tests, from a fresh clone: installs Debian's chromium when it
# is missing, the pinned npm packages from sdk/package-lock.json (openai,
# playwright-core), then runs node --test, whose harness (e2e/harness.mjs)
# builds and starts the simulator and the handler itself. The Go SDK's tests
# (openai-go) run with the Go tests (internal/openaiwire).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends chromium
fi

(cd sdk && npm ci --no-audit --no-fund --loglevel=error)
cd sdk && node --test --test-concurrency=1 tests/
