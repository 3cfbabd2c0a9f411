#!/usr/bin/env bash
# make run: with no AZURE_OPENAI_ENDPOINT, start the Azure OpenAI simulator, the handler pointed at it,
# and the demo page on a second origin; with an endpoint, run the handler against it. With no
# QUOTA_TABLE_ENDPOINT, Azurite's Table service holds a demo quota (QUOTA_USER_DAILY_TOKENS=0: none).
# It checks the ports first, says what it is doing while it builds and installs, and prints what to try
# once every service answers.
set -euo pipefail
cd "$(dirname "$0")/.."

PORT=${FUNCTIONS_CUSTOMHANDLER_PORT:-7071}
SIM_ADDR=${SIM_ADDR:-127.0.0.1:8081}
SIM_ADDR_B=${SIM_ADDR_B:-127.0.0.1:8082}
DEMO_PORT=${DEMO_PORT:-5173}
AZURITE_TABLE_PORT=${AZURITE_TABLE_PORT:-10002}
started=$SECONDS
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM

# say prints a progress line: what is happening, and how long it takes on a first run.
say() { echo "make run: $*"; }

# answers HOST PORT: something accepts connections there.
answers() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

# free HOST PORT NAME SETTING=VALUE: stop at once, naming the setting that moves it, when the port is taken.
free() {
  if answers "$1" "$2"; then
    echo "make run: $1:$2 ($3) is already in use, by another make run or another program." >&2
    echo "  Stop that, or move $3 elsewhere: $4 make run (see README.md, \"The two commands\")." >&2
    exit 1
  fi
}

# healthy PORT: GET /api/health on 127.0.0.1:PORT answers 200.
healthy() (
  exec 2>/dev/null 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
  printf 'GET /api/health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
  read -r -t 2 _ status _ <&3 || exit 1
  [ "$status" = 200 ]
)

# await NAME PID SECONDS CHECK...: wait until CHECK succeeds; stop, with the service's own words, when its
# process ends first or it does not answer in time.
await() {
  local name=$1 pid=$2 limit=$3
  shift 3
  local tries=$((limit * 10))
  for _ in $(seq 1 "$tries"); do
    "$@" && return 0
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "make run: the $name stopped before it answered (its words are above, or in its log under bin/)." >&2
      exit 1
    fi
    sleep 0.1
  done
  echo "make run: the $name does not answer after $limit s (see its log under bin/)." >&2
  exit 1
}

# AUTH_MODE=entra without an authority of your own: the simulator is Entra ID too (internal/issuertest),
# with a test tenant, app and user, so the handler checks real tokens signed with real keys.
LOCAL_ISSUER=
if [ "${AUTH_MODE:-}" = entra ] && [ -z "${AZURE_AUTHORITY_HOST:-}" ]; then
  LOCAL_ISSUER=1
  export AZURE_AUTHORITY_HOST="http://$SIM_ADDR" AUTH_TENANTS=${AUTH_TENANTS:-11111111-2222-4333-8444-555555555555}
  export AUTH_AUDIENCE=${AUTH_AUDIENCE:-api://timebox-local} AUTH_REQUIRED_SCOPE=${AUTH_REQUIRED_SCOPE:-user_impersonation}
fi
SIMULATED=
if [ -z "${AZURE_OPENAI_ENDPOINT:-}" ] && [ -z "${AZURE_OPENAI_BACKENDS:-}" ]; then SIMULATED=1; fi
AZURITE=
if [ -z "${QUOTA_TABLE_ENDPOINT:-}" ] && [ "${QUOTA_USER_DAILY_TOKENS:-}" != 0 ]; then AZURITE=1; fi
DEMO=
if [ -f demo/serve.mjs ] && [ -f client/package.json ]; then DEMO=1; fi

# Every port first: a taken one is said now, not after minutes of building.
free 127.0.0.1 "$PORT" "the handler" "FUNCTIONS_CUSTOMHANDLER_PORT=<free port>"
if [ -n "$LOCAL_ISSUER" ] || [ -n "$SIMULATED" ]; then free "${SIM_ADDR%:*}" "${SIM_ADDR##*:}" "the simulator" "SIM_ADDR=127.0.0.1:<free port>"; fi
if [ -n "$SIMULATED" ]; then free "${SIM_ADDR_B%:*}" "${SIM_ADDR_B##*:}" "the simulator's second deployment" "SIM_ADDR_B=127.0.0.1:<free port>"; fi
if [ -n "$AZURITE" ]; then free 127.0.0.1 "$AZURITE_TABLE_PORT" "Azurite's Table service" "AZURITE_TABLE_PORT=<free port>"; fi
if [ -n "$DEMO" ]; then free 127.0.0.1 "$DEMO_PORT" "the demo page" "DEMO_PORT=<free port>"; fi

mkdir -p bin
say "building the handler and the simulator (Go; the first time downloads the modules and compiles: 1-2 min on 2 cores)"
go build -o bin/handler ./cmd/handler
if [ -n "$LOCAL_ISSUER" ] || [ -n "$SIMULATED" ]; then go build -o bin/aoaisim ./cmd/aoaisim; fi

if [ -n "$LOCAL_ISSUER" ] || [ -n "$SIMULATED" ]; then
  # The simulator serves the deployment asked for (AZURE_OPENAI_DEPLOYMENT=o4-mini: a reasoning model in
  # background mode, whose long answers go across hops), gpt-4o-mini by default.
  SIM_DEPLOYMENT=${AZURE_OPENAI_DEPLOYMENT:-gpt-4o-mini}
  [ -n "$SIMULATED" ] || SIM_DEPLOYMENT=gpt-4o-mini
  ./bin/aoaisim -addr "$SIM_ADDR" -api-key sim-key -deployments "$SIM_DEPLOYMENT" -ttft 400ms -per-token 15ms ${LOCAL_ISSUER:+-issuer} ${SIMULATED:+-backend a} > bin/aoaisim.log 2>&1 &
  pids+=($!)
  sim_pid=$!
  if [ -n "$SIMULATED" ]; then
    # A pool of two deployments (docs/operations.md, "The pool of deployments"): a first, b second, each a
    # simulator of its own, so that [[sim:throttle s=20 backend=a]] shows a failover in one request.
    ./bin/aoaisim -addr "$SIM_ADDR_B" -api-key sim-key -deployments "$SIM_DEPLOYMENT" -ttft 400ms -per-token 15ms -backend b > bin/aoaisim-b.log 2>&1 &
    pids+=($!)
    sim_b_pid=$!
    entry() { printf '{"name":"%s","endpoint":"http://%s","deployment":"%s","priority":%s,"apiVersion":"%s","apiKeySetting":"SIM_KEY"}' "$1" "$2" "$SIM_DEPLOYMENT" "$3" "${AZURE_OPENAI_API_VERSION:-}"; }
    export AZURE_OPENAI_BACKENDS="[$(entry a "$SIM_ADDR" 1),$(entry b "$SIM_ADDR_B" 2)]" AZURE_OPENAI_DEPLOYMENT=$SIM_DEPLOYMENT SIM_KEY=sim-key
    unset AZURE_OPENAI_API_VERSION AZURE_OPENAI_API_KEY
  fi
fi
TOKEN_URL=
if [ -n "$LOCAL_ISSUER" ]; then
  TOKEN_URL="http://$SIM_ADDR/${AUTH_TENANTS%%,*}/oauth2/v2.0/token"
  TOKEN_SCOPE="${AUTH_AUDIENCE%%,*}/$AUTH_REQUIRED_SCOPE"
fi
export FUNCTIONS_CUSTOMHANDLER_PORT=$PORT

# Quotas: Azurite (tools/azurite) in memory, and a demo limit of 20,000 tokens a day: enough for every printed
# example in turn (each holds at most its prompt and MAX_TOKENS while it runs), small enough to watch it go
# down on the demo page. QUOTA_USER_DAILY_TOKENS=1500 reaches 429 quota_exceeded in a few questions.
if [ -n "$AZURITE" ]; then
  # Installed and answering before the handler starts: a handler whose quota store does not answer refuses
  # every question (503 quota_unavailable).
  bash scripts/azurite.sh install
  bash scripts/azurite.sh table "$AZURITE_TABLE_PORT" > bin/azurite.log 2>&1 &
  pids+=($!)
  azurite_pid=$!
  export QUOTA_TABLE_ENDPOINT="http://127.0.0.1:$AZURITE_TABLE_PORT/devstoreaccount1" QUOTA_USER_DAILY_TOKENS=${QUOTA_USER_DAILY_TOKENS:-20000}
fi
# The demo page's origin, so its calls are allowed (against the simulator or a real endpoint alike).
export ALLOWED_ORIGINS=${ALLOWED_ORIGINS:-http://127.0.0.1:$DEMO_PORT,http://localhost:$DEMO_PORT}

if [ -n "$DEMO" ]; then
  # npm ci when the lock file is newer than the installed tree (a pull that brought a new dependency), not
  # only when node_modules is missing; npm writes node_modules/.package-lock.json on every install.
  if ! [ client/node_modules/.package-lock.json -nt client/package-lock.json ]; then
    say "installing the TypeScript client's packages for the demo page (npm ci: under a minute)"
    (cd client && npm ci --no-audit --no-fund >/dev/null)
  fi
  (cd client && npm run --silent build >/dev/null)
  node demo/serve.mjs --port "$DEMO_PORT" --api "http://127.0.0.1:$PORT" ${TOKEN_URL:+--token-url "$TOKEN_URL" --token-scope "$TOKEN_SCOPE"} > bin/demo.log 2>&1 &
  pids+=($!)
  demo_pid=$!
fi

say "starting; the handler's log lines (JSON, one per request) follow below"
if [ -n "${sim_pid:-}" ]; then await simulator "$sim_pid" 30 answers "${SIM_ADDR%:*}" "${SIM_ADDR##*:}"; fi
if [ -n "${sim_b_pid:-}" ]; then await "simulator's second deployment" "$sim_b_pid" 30 answers "${SIM_ADDR_B%:*}" "${SIM_ADDR_B##*:}"; fi
if [ -n "${azurite_pid:-}" ]; then await Azurite "$azurite_pid" 60 answers 127.0.0.1 "$AZURITE_TABLE_PORT"; fi
./bin/handler &
pids+=($!)
handler_pid=$!
await handler "$handler_pid" 60 healthy "$PORT"
if [ -n "${demo_pid:-}" ]; then await "demo page" "$demo_pid" 30 answers 127.0.0.1 "$DEMO_PORT"; fi

# Everything answers: what there is, and what to try.
if [ -n "${sim_b_pid:-}" ]; then
  echo "simulator: a pool of two, a on http://$SIM_ADDR and b on http://$SIM_ADDR_B (logs: bin/aoaisim.log, bin/aoaisim-b.log)"
elif [ -n "${sim_pid:-}" ]; then
  echo "simulator: http://$SIM_ADDR (log: bin/aoaisim.log)"
fi
if [ -n "$AZURITE" ]; then
  echo "quotas: Azurite on $QUOTA_TABLE_ENDPOINT (log: bin/azurite.log), $QUOTA_USER_DAILY_TOKENS tokens per user and day"
  echo "  (enough for every example below in turn; QUOTA_USER_DAILY_TOKENS=1500 make run reaches 429 quota_exceeded in a few questions)"
fi
if [ -n "$DEMO" ]; then echo "demo page: http://127.0.0.1:$DEMO_PORT/ (a second origin: every call is cross-origin, with a preflight)"; fi
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
echo "Ready in $((SECONDS - started)) s: everything above answers. Stop with Ctrl-C."
wait "$handler_pid"
