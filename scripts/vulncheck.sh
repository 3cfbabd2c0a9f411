#!/usr/bin/env bash
# vulncheck.sh (make lint): govulncheck of timebox's code against the Go vulnerability database. The database is
# the one the pinned golang.org/x/vulndb module carries (data/osv, the reports vuln.go.dev serves), fetched from
# the Go module proxy and indexed by that module's own cmd/indexdb into bin/vulndb/; VULNDB=<url> uses another
# (VULNDB=https://vuln.go.dev where it is reachable). scripts/vulncheck/main.go reads the findings: it fails on a
# vulnerability the code reaches in a module we require, and names the ones it reaches in the standard library,
# which are the machine's Go toolchain's to fix. Without the module proxy (and nothing cached) it says so and
# passes: make test must not fail for want of a network.
set -euo pipefail
cd "$(dirname "$0")/.."
govulncheck=golang.org/x/vuln/cmd/govulncheck@v1.9.0
vulndb=golang.org/x/vulndb@v0.0.0-20261105234957-e22db6528018

db="${VULNDB:-}"
if [ -z "$db" ]; then
  dir="bin/vulndb/${vulndb#*@}"
  if [ ! -f "$dir/index/db.json" ]; then
    # outside this module, so that its go.mod does not take in vulndb's requirements
    if ! json="$(cd "$(mktemp -d)" && GOFLAGS=-mod=mod go mod download -json "$vulndb" 2>&1)"; then
      echo "vulncheck: skipped: the Go module proxy did not give $vulndb: $json" >&2
      exit 0
    fi
    echo "vulncheck: indexing the Go vulnerability database into $dir (the first time only: 1-3 min on 2 cores)"
    src="$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$json")"
    rm -rf "$dir" && mkdir -p "$dir"
    go run "golang.org/x/vulndb/cmd/indexdb@${vulndb#*@}" -vulns "$src/data/osv" -out "$dir"
  fi
  db="file://$PWD/$dir"
fi
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
echo "vulncheck: govulncheck of every package (builds it the first time; about a minute on 2 cores)"
# TOOLS (the Makefile's): the packages go.mod's ignore keeps out of ./..., checked too.
# shellcheck disable=SC2086
go run "$govulncheck" -db "$db" -format json ./... ${TOOLS:-} >"$out"
go run ./scripts/vulncheck <"$out"
