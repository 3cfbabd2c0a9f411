#!/usr/bin/env bash
# make run: with no AZURE_OPENAI_ENDPOINT, start the Azure OpenAI simulator, the handler pointed at it,
# and the demo page on a second origin; with an endpoint, run the handler against it. With no
# QUOTA_TABLE_ENDPOINT, Azurite's Table service holds a small demo quota (QUOTA_USER_DAILY_TOKENS=0: none).
set -euo pipefail
cd "$(dirname "$0")/.."

PORT=${FUNCTIONS_CUSTOMHANDLER_PORT:-7071}
SIM_ADDR=${SIM_ADDR:-127.0.0.1:8081}
SIM_ADDR_B=${SIM_ADDR_B:-127.0.0.1:8082}
DEMO_PORT=${DEMO_PORT:-5173}
mkdir -p bin
go build -o bin/handler ./cmd/handler
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM

# AUTH_MODE=entra without an authority of your own: the simulator is Entra ID too (internal/issuertest),
# with a test tenant, app and user, so the handler checks real tokens signed with real keys.
LOCAL_ISSUER=
AZURITE_WAIT=
if [ "${AUTH_MODE:-}" = entra ] && [ -z "${AZURE_AUTHORITY_HOST:-}" ]; then
  LOCAL_ISSUER=1
  export AZURE_AUTHORITY_HOST="http://$SIM_ADDR" AUTH_TENANTS=${AUTH_TENANTS:-11111111-2222-4333-8444-555555555555}
  export AUTH_AUDIENCE=${AUTH_AUDIENCE:-api://timebox-local} AUTH_REQUIRED_SCOPE=${AUTH_REQUIRED_SCOPE:-user_impersonation}
fi
SIMULATED=
if [ -z "${AZURE_OPENAI_ENDPOINT:-}" ] && [ -z "${AZURE_OPENAI_BACKENDS:-}" ]; then SIMULATED=1; fi
if [ -n "$LOCAL_ISSUER" ] || [ -n "$SIMULATED" ]; then
  go build -o bin/aoaisim ./cmd/aoaisim
  # The simulator serves the deployment asked for (AZURE_OPENAI_DEPLOYMENT=o4-mini: a reasoning model in
  # background mode, whose long answers go across hops), gpt-4o-mini by default.
  SIM_DEPLOYMENT=${AZURE_OPENAI_DEPLOYMENT:-gpt-4o-mini}
  [ -n "$SIMULATED" ] || SIM_DEPLOYMENT=gpt-4o-mini
  ./bin/aoaisim -addr "$SIM_ADDR" -api-key sim-key -deployments "$SIM_DEPLOYMENT" -ttft 400ms -per-token 15ms ${LOCAL_ISSUER:+-issuer} ${SIMULATED:+-backend a} > bin/aoaisim.log &
  pids+=($!)
  if [ -n "$SIMULATED" ]; then
    # A pool of two deployments (docs/operations.md, "The pool of deployments"): a first, b second, each a
    # simulator of its own, so that [[sim:throttle s=20 backend=a]] shows a failover in one request.
    ./bin/aoaisim -addr "$SIM_ADDR_B" -api-key sim-key -deployments "$SIM_DEPLOYMENT" -ttft 400ms -per-token 15ms -backend b > bin/aoaisim-b.log &
    pids+=($!)
    entry() { printf '{"name":"%s","endpoint":"http://%s","deployment":"%s","priority":%s,"apiVersion":"%s","apiKeySetting":"SIM_KEY"}' "$1" "$2" "$SIM_DEPLOYMENT" "$3" "${AZURE_OPENAI_API_VERSION:-}"; }
    export AZURE_OPENAI_BACKENDS="[$(entry a "$SIM_ADDR" 1),$(entry b "$SIM_ADDR_B" 2)]" AZURE_OPENAI_DEPLOYMENT=$SIM_DEPLOYMENT SIM_KEY=sim-key
    unset AZURE_OPENAI_API_VERSION AZURE_OPENAI_API_KEY
    echo "simulator: a pool of two, a on http://$SIM_ADDR and b on http://$SIM_ADDR_B (logs: bin/aoaisim.log, bin/aoaisim-b.log)"
  else
    echo "simulator: http://$SIM_ADDR (log: bin/aoaisim.log)"
  fi
fi
TOKEN_URL=
if [ -n "$LOCAL_ISSUER" ]; then
  TOKEN_URL="http://$SIM_ADDR/${AUTH_TENANTS%%,*}/oauth2/v2.0/token"
  TOKEN_SCOPE="${AUTH_AUDIENCE%%,*}/$AUTH_REQUIRED_SCOPE"
fi
export FUNCTIONS_CUSTOMHANDLER_PORT=$PORT
# Quotas: Azurite (tools/azurite) in memory, and a demo limit small enough to reach in a few questions.
if [ -z "${QUOTA_TABLE_ENDPOINT:-}" ] && [ "${QUOTA_USER_DAILY_TOKENS:-}" != 0 ]; then
  AZURITE_TABLE_PORT=${AZURITE_TABLE_PORT:-10002}
  # Installed before, and waited for below: a handler that starts before its quota store answers refuses
  # every question (503 quota_unavailable), and on a fresh clone the install takes minutes.
  bash scripts/azurite.sh install
  bash scripts/azurite.sh table "$AZURITE_TABLE_PORT" > bin/azurite.log 2>&1 &
  pids+=($!)
  AZURITE_WAIT=$AZURITE_TABLE_PORT
  export QUOTA_TABLE_ENDPOINT="http://127.0.0.1:$AZURITE_TABLE_PORT/devstoreaccount1" QUOTA_USER_DAILY_TOKENS=${QUOTA_USER_DAILY_TOKENS:-2000}
  echo "quotas: Azurite on $QUOTA_TABLE_ENDPOINT (log: bin/azurite.log), $QUOTA_USER_DAILY_TOKENS tokens per user and day"
fi
# Long answers' cursor key (CURSOR_KEYS), made once and kept in bin/: a restarted handler still opens the
# cursors it handed out before.
if [ -z "${CURSOR_KEYS:-}" ]; then
  [ -s bin/cursor.key ] || (umask 077 && head -c 32 /dev/urandom | base64 > bin/cursor.key)
  export CURSOR_KEYS=$(cat bin/cursor.key)
fi
# The demo page's origin, so its calls are allowed (against the simulator or a real endpoint alike).
export ALLOWED_ORIGINS=${ALLOWED_ORIGINS:-http://127.0.0.1:$DEMO_PORT,http://localhost:$DEMO_PORT}

if [ -f demo/serve.mjs ] && [ -f client/package.json ]; then
  # npm ci when the lock file is newer than the installed tree (a pull that brought a new dependency), not
  # only when node_modules is missing; npm writes node_modules/.package-lock.json on every install.
  (cd client && { [ node_modules/.package-lock.json -nt package-lock.json ] || npm ci --no-audit --no-fund >/dev/null; } && npm run --silent build >/dev/null)
  node demo/serve.mjs --port "$DEMO_PORT" --api "http://127.0.0.1:$PORT" ${TOKEN_URL:+--token-url "$TOKEN_URL" --token-scope "$TOKEN_SCOPE"} &
  pids+=($!)
  echo "demo page: http://127.0.0.1:$DEMO_PORT/ (a second origin: every call is cross-origin, with a preflight)"
fi

API="http://127.0.0.1:$PORT/api"
bash scripts/examples.sh "$API" "$PORT" "${SIMULATED:+simulator}"
if [ -n "$TOKEN_URL" ]; then
  cat <<MSG
AUTH_MODE=entra: every chat call needs a token; the simulator is Entra ID (authority $AZURE_AUTHORITY_HOST,
tenant ${AUTH_TENANTS%%,*}, audience ${AUTH_AUDIENCE%%,*}, scope $AUTH_REQUIRED_SCOPE). Get one for the test user, then call:
  TOKEN=\$(curl -s $TOKEN_URL -d scope=$TOKEN_SCOPE | sed -E 's/.*"access_token":"([^"]+)".*/\1/')
  curl -si $API/chat -H "authorization: Bearer \$TOKEN" -H 'content-type: application/json' -d '{"messages":[{"role":"user","content":"hi"}]}'
  curl -si $API/chat -H 'content-type: application/json' -d '{"messages":[{"role":"user","content":"hi"}]}'   # 401 unauthenticated
  go run ./cmd/timebox ask --url http://127.0.0.1:$PORT --token "\$TOKEN" "hi"
  (v1.0 tokens, as SPFx gets by default: curl -s ${TOKEN_URL%/v2.0/token}/token -d resource=${AUTH_AUDIENCE%%,*} -d scope=$AUTH_REQUIRED_SCOPE)
MSG
fi
if [ -n "$AZURITE_WAIT" ]; then
  up=
  for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$AZURITE_WAIT") 2>/dev/null && up=1 && break; sleep 0.1; done
  [ -n "$up" ] || echo "Azurite does not answer on 127.0.0.1:$AZURITE_WAIT after 30 s (see bin/azurite.log): questions get 503 quota_unavailable until it does"
fi
echo "Stop with Ctrl-C."
./bin/handler &
pids+=($!)
wait "${pids[-1]}"
