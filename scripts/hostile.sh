#!/usr/bin/env bash
# make hostile: build the handler as `make build` does and replay issue 7's memory rows and the rows of
# callers that stop reading against it (perf/cmd/hostile), printing peak RSS, how long requests held and the
# exit after SIGTERM next to the issues' figures. HOSTILE_BEFORE=<git revision> also builds
# that revision's handler and measures it in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."

out=bin/hostile
mkdir -p "$out"
build() { CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $2" -o "$1" "${@:3}"; }
build "$out/handler" "-X main.version=$(git describe --always --dirty 2>/dev/null || echo dev)" ./cmd/handler
build "$out/hostile" "" ./perf/cmd/hostile

flags=()
if [ -n "${HOSTILE_BEFORE:-}" ]; then
  src=$(mktemp -d)
  trap 'rm -rf "$src"' EXIT
  git archive "$HOSTILE_BEFORE" | tar -x -C "$src"
  (cd "$src" && build "$OLDPWD/$out/handler-before" "-X main.version=$HOSTILE_BEFORE" ./cmd/handler)
  flags+=(-before "$out/handler-before")
fi
"$out/hostile" -handler "$out/handler" "${flags[@]}"
