#!/usr/bin/env bash
# make perf: build the handler as `make build` does, the floors (perf/cmd/hello, perf/cmd/floor) the same way,
# and run the driver (perf/cmd/perf), which prints issue 11's table. PERF_BEFORE=<git revision> also builds
# that revision's handler and measures it in the same rounds (before and after from one run). Extra driver
# flags go in PERF_FLAGS (e.g. PERF_FLAGS='-held 1000 -cold-rounds 5').
set -euo pipefail
cd "$(dirname "$0")/.."

out=bin/perf
mkdir -p "$out"
build() { CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $2" -o "$1" "${@:3}"; }
build "$out/handler" "-X main.version=$(git describe --always --dirty 2>/dev/null || echo dev)" ./cmd/handler
build "$out/" "" ./perf/cmd/hello ./perf/cmd/floor ./perf/cmd/perf

flags=()
if [ -n "${PERF_BEFORE:-}" ]; then
  src=$(mktemp -d)
  trap 'rm -rf "$src"' EXIT
  git archive "$PERF_BEFORE" | tar -x -C "$src"
  (cd "$src" && build "$OLDPWD/$out/handler-before" "-X main.version=$PERF_BEFORE" ./cmd/handler)
  flags+=(-before "$out/handler-before")
fi

# 5,000 held requests are 10,000 sockets in the driver and in the server under test.
ulimit -n "$(ulimit -Hn)"
# shellcheck disable=SC2086
"$out/perf" -bin "$out" "${flags[@]}" ${PERF_FLAGS:-}
