#!/usr/bin/env bash
# The TypeScript client's tests (node:test), after a clean install of its locked dev dependencies.
set -euo pipefail
cd "$(dirname "$0")/../client"
npm ci --no-audit --no-fund
npm test
