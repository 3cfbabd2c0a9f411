#!/usr/bin/env bash
# make start: the real Functions host (Azure Functions Core Tools 4.x) over the built handler. It checks
# first for what a fresh clone lacks, and says how to get it, instead of failing inside func.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v func >/dev/null 2>&1; then
  cat >&2 <<'MSG'
make start needs Azure Functions Core Tools 4.x (the func command), which is not on PATH.
Install it (https://learn.microsoft.com/azure/azure-functions/functions-run-local), e.g. with npm:
  npm install -g azure-functions-core-tools@4
Without it, make run serves the same handler with the simulator and the demo page.
MSG
  exit 1
fi
if [ ! -f local.settings.json ]; then
  cat >&2 <<'MSG'
make start needs local.settings.json (the Functions host's settings). Copy the example:
  cp local.settings.json.example local.settings.json
It calls the simulator at http://127.0.0.1:8081 with the key sim-key: start it first, in another terminal,
with make sim (or set AZURE_OPENAI_ENDPOINT, AZURE_OPENAI_DEPLOYMENT and a key or nothing for Entra ID in it).
MSG
  exit 1
fi
make --no-print-directory build
echo "func start: the host on http://127.0.0.1:7071 (calls Azure OpenAI as local.settings.json says; make sim for the simulator)"
exec func start
