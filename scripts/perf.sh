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
# stage FILE...: each binary is rewritten as a copy, as a deployment writes it (unzipped from the package),
# before it is measured. Go's linker writes its output through a shared memory mapping, and exec of a file
# whose pages were cached that way was slower: the same handler bytes started in 3.8-3.9 ms as the linker
# left them and in 3.4-3.5 ms as a copy, hello world in 2.44 against 2.25 ms (60 starts each, one run), an
# artefact of the build, not of the code, and larger for the larger binary. Every subject is staged alike.
stage() { local f; for f in "$@"; do cp "$f" "$f.staged" && mv -f "$f.staged" "$f"; done; }
build "$out/handler" "-X main.version=$(git describe --always --dirty 2>/dev/null || echo dev)" ./cmd/handler
build "$out/" "" ./perf/cmd/hello ./perf/cmd/floor ./perf/cmd/perf
stage "$out/handler" "$out/hello" "$out/floor"

flags=()
if [ -n "${PERF_BEFORE:-}" ]; then
  src=$(mktemp -d)
  trap 'rm -rf "$src"' EXIT
  git archive "$PERF_BEFORE" | tar -x -C "$src"
  (cd "$src" && build "$OLDPWD/$out/handler-before" "-X main.version=$PERF_BEFORE" ./cmd/handler)
  stage "$out/handler-before"
  flags+=(-before "$out/handler-before")
fi

# 5,000 held requests are 10,000 sockets in the driver and in the server under test.
ulimit -n "$(ulimit -Hn)"
# shellcheck disable=SC2086
"$out/perf" -bin "$out" "${flags[@]}" ${PERF_FLAGS:-}
