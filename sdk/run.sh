#!/usr/bin/env bash
# The OpenAI SDK tests, from a fresh clone: installs Debian's chromium and
# python3-venv when they are missing, the pinned npm packages from
# sdk/package-lock.json (openai, playwright-core), then runs node --test,
# whose harness (e2e/harness.mjs) builds and starts the simulator and the
# handler itself; then the Python SDK (openai on PyPI, pinned by hash in
# sdk/python/requirements.txt) in a venv at sdk/python/.venv, made again when
# the lock changes, whose tests (sdk/python/tests/stack.py) start their own.
# The Go SDK's tests (openai-go) run with the Go tests (internal/openaiwire).
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
[ -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ] || missing+=(chromium)
python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
if [ "${#missing[@]}" -gt 0 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

(cd sdk && npm ci --no-audit --no-fund --loglevel=error)
(cd sdk && node --test --test-concurrency=1 tests/)

# The venv keeps a copy of the lock it was made from: a pull that changed the lock makes it again.
py=sdk/python
if ! cmp -s "$py/requirements.txt" "$py/.venv/requirements.txt"; then
  python3 -m venv --clear "$py/.venv"
  "$py/.venv/bin/pip" install -q --disable-pip-version-check --require-hashes --only-binary :all: -r "$py/requirements.txt"
  cp "$py/requirements.txt" "$py/.venv/requirements.txt"
fi
cd "$py/tests" && PYTHONDONTWRITEBYTECODE=1 ../.venv/bin/python -m unittest -v
