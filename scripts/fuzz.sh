#!/usr/bin/env bash
# Runs every Go fuzz target in the module for $1 (default 10s) each; go test -fuzz takes one target per run.
set -euo pipefail
cd "$(dirname "$0")/.."
t=${1:-10s}
grep -rl --include='*_test.go' '^func Fuzz' internal cmd | xargs -n1 dirname | sort -u | while read -r dir; do
  for name in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go | sed 's/^func //'); do
    echo "fuzz $dir $name ($t)"
    go test -run '^$' -fuzz "^${name}\$" -fuzztime "$t" "./$dir"
  done
done
