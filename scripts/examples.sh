#!/usr/bin/env bash
# make run's "what to try", printed once the services are up: scripts/examples.sh API PORT [simulator].
# The simulator's [[sim:...]] directives are offered only when the simulator answers as Azure OpenAI: a real
# deployment would read them as words of the question.
set -euo pipefail
API=${1:?api base URL}
PORT=${2:?handler port}
UPSTREAM=${3:-}

echo "handler: $API  (budget ${REQUEST_BUDGET:-200s}, fast-failure threshold ${FAST_FAILURE_THRESHOLD:-30s})"
if [ "$UPSTREAM" != simulator ]; then
  # A real Azure OpenAI: the simulator's directives would be sent to it as words of the question.
  cat <<MSG
Azure OpenAI: ${AZURE_OPENAI_ENDPOINT:-?}, deployment ${AZURE_OPENAI_DEPLOYMENT:-?} (${AZURE_OPENAI_API_KEY:+api-key}${AZURE_OPENAI_API_KEY:-Entra ID: az login, or a managed identity}). Try:
  curl -s $API/health
  curl -s $API/chat -H 'content-type: application/json' -d '{"messages":[{"role":"user","content":"Say hello in one sentence."}]}'
  go run ./cmd/timebox ask --url http://127.0.0.1:$PORT "Say hello in one sentence."
MSG
else
  cat <<MSG
Try (the [[sim:...]] directives choose a simulator scenario; see docs/simulator.md):
  curl -s $API/health
  curl -s $API/chat -H 'content-type: application/json' -d '{"messages":[{"role":"user","content":"Count to 10, with a comma between each number, no newlines and a period at the end. E.g., 1, 2, 3, ..."}]}'
  curl -si $API/chat -H 'content-type: application/json' -d '{"messages":[{"role":"user","content":"[[sim:status code=503]] hi"}]}'    # fast 503 -> 503 upstream_unavailable (retryable)
  curl -s $API/chat -H 'content-type: application/json' -d '{"messages":[{"role":"user","content":"[[sim:throttle s=20 backend=a]] hi"}]}'   # a throttled, b answers in the same request: the log line's "attempts" shows both; a is skipped for 20 s
  curl -si $API/chat -H 'content-type: application/json' -H 'x-client-timeout-ms: 10000' -d '{"messages":[{"role":"user","content":"[[sim:throttle s=45]] hi"}]}'  # wait does not fit -> 429 rate_limited + Retry-After: 45
  curl -si $API/chat -H 'content-type: application/json' -d '{"messages":[{"role":"user","content":"[[sim:throttle s=86400]] hi"}]}'  # a request no wait clears -> 413 prompt_too_large
  curl -si $API/chat -H 'content-type: application/json' -d '{"messages":[{"role":"user","content":"[[sim:throttle s=2 times=1 id=demo$RANDOM]] hi"}]}' # server waits 2 s, retries: upstreamAttempts 2
  curl -si $API/chat -H 'content-type: application/json' -H 'x-client-timeout-ms: 5000' -d '{"messages":[{"role":"user","content":"[[sim:hang]] hi"}]}'  # 500 deadline_exceeded after 3 s
  curl -si $API/chat -H 'content-type: application/json' -d '{"messages":[{"role":"user","content":"[[sim:status code=500 after=31000]] hi"}]}'  # slow failure -> 500, x-should-retry: false
  curl -si $API/chat -H 'content-type: application/json' -d '{"messages":[{"role":"user","content":"[[sim:filter]] hi"}]}'      # 400 content_filtered
  curl -si $API/chat -H 'content-type: application/json' -H 'Origin: https://evil.example' -d '{"messages":[{"role":"user","content":"hi"}]}'  # 403 origin_not_allowed
  curl -si $API/chat -H 'content-type: application/json' -d '{"messages":[{"role":"user","content":"[[sim:hang]] hi"}]}'        # waits the whole budget (200 s), then 500 deadline_exceeded
The OpenAI SDKs' dialect (docs/openai-sdk.md), the same pipeline:
  curl -s http://127.0.0.1:$PORT/openai/v1/models
  curl -s http://127.0.0.1:$PORT/openai/v1/chat/completions -H 'content-type: application/json' -d '{"model":"${AZURE_OPENAI_DEPLOYMENT:-gpt-4o-mini}","messages":[{"role":"user","content":"Say hello."}]}'
Long answers across hops need a deployment in background mode: AZURE_OPENAI_DEPLOYMENT=o4-mini make run, then
  go run ./cmd/timebox ask --attempt-timeout 15s --url http://127.0.0.1:$PORT "[[sim:long s=40]] Count to 100, with a comma between each number."   # a 40 s answer in hops of about 11 s: "part 1 of the answer, still writing", 2, 3, then the end; the text as it comes
  curl -sN $API/chat -H 'accept: text/event-stream' -H 'x-client-timeout-ms: 15000' -H 'content-type: application/json' -d '{"messages":[{"role":"user","content":"[[sim:long s=40]] Count to 100."}]}'   # ends after 11 s with event: continue and a cursor; POST it to $API/chat/continue
  (x-client-timeout-ms, or --attempt-timeout, makes each hop short; without it a hop lasts the budget, 200 s)
MSG
fi
