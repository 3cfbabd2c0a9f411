#!/usr/bin/env bash
# Runs every Go fuzz target in the module for $1 (default 10s) each; go test -fuzz takes one target per run.
# Minimising a new input may take 5 s at most (the default, 60 s, shows as long stretches of 0 execs/sec).
set -euo pipefail
cd "$(dirname "$0")/.."
t=${1:-10s}
grep -rl --include='*_test.go' '^func Fuzz' internal cmd | xargs -n1 dirname | sort -u | while read -r dir; do
  for name in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go | sed 's/^func //'); do
    echo "fuzz $dir $name ($t)"
    go test -run '^$' -fuzz "^${name}\$" -fuzztime "$t" -fuzzminimizetime 5s "./$dir"
  done
done
