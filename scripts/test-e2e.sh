#!/usr/bin/env bash
# The browser tests: real Chromium (Debian's), real handler, real simulator. See e2e/.
set -euo pipefail
cd "$(dirname "$0")/.."
exec bash e2e/run.sh
