#!/usr/bin/env bash
# third_party.sh: writes each fork in third_party/ from its pinned upstream version (the Go module proxy's copy,
# as go mod download fetches it) plus its patch, third_party/<name>.patch (git apply). A fork holds the non-test
# Go files of the upstream packages timebox links, the upstream LICENSE and go.mod, and a README this script
# writes. go.mod's replace directives build timebox against the forks. See docs/architecture.md, "third_party".
#   scripts/third_party.sh           rewrite every fork
#   scripts/third_party.sh --check   write nothing; fail when a committed fork, or go.mod's replace of it,
#                                    differs from what this script would write (make lint runs it)
#   scripts/third_party.sh --patch   rewrite each patch from its fork as edited by hand (keeps the patch's
#                                    leading prose, which says why; README.md is not part of the patch)
set -euo pipefail
cd "$(dirname "$0")/.."

# One fork a line: its folder under third_party/, the upstream module and version (exactly go.mod's require),
# then the module's package folders that timebox links (nothing else of the module is copied: no cmd/,
# examples, tests or test data).
forks=(
  "go-readability codeberg.org/readeck/go-readability/v2 v2.1.3 . render internal/re2go"
  "pdf github.com/ledongthuc/pdf v0.0.0-20260907135840-6c8c28e0e8a0 ."
  "go-shiori-dom github.com/go-shiori/dom v0.0.0-20230515143342-73569d674e1c ."
  "msal github.com/AzureAD/microsoft-authentication-library-for-go v1.10.1 apps/cache apps/confidential apps/errors apps/internal/base apps/internal/base/storage apps/internal/exported apps/internal/json apps/internal/json/types/time apps/internal/local apps/internal/oauth apps/internal/oauth/ops apps/internal/oauth/ops/accesstokens apps/internal/oauth/ops/authority apps/internal/oauth/ops/internal/comm apps/internal/oauth/ops/internal/grant apps/internal/oauth/ops/wstrust apps/internal/oauth/ops/wstrust/defs apps/internal/options apps/internal/shared apps/internal/version apps/managedidentity apps/public"
  "regexp2 github.com/dlclark/regexp2/v2 v2.5.1 . helpers syntax"
)

mode="${1:-write}"
case "$mode" in write | --check | --patch) ;; *) echo "usage: $0 [--check | --patch]" >&2; exit 2 ;; esac

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# git apply must treat the staged copies as plain files, never as part of this repository's work tree.
export GIT_CEILING_DIRECTORIES="$tmp"

# upstream NAME MODULE VERSION PACKAGES...: stages the upstream files a fork keeps in $tmp/upstream/NAME.
upstream() {
  local name="$1" module="$2" version="$3" json dir pkg f
  shift 3
  # outside this module (in $tmp), so that go.mod's replace of the module does not apply
  json="$(cd "$tmp" && GOFLAGS=-mod=mod go mod download -json "$module@$version")" ||
    { echo "third_party: go mod download $module@$version failed: $json" >&2; exit 1; }
  dir="$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$json")"
  [ -d "$dir" ] || { echo "third_party: go mod download $module@$version gave no folder: $json" >&2; exit 1; }
  mkdir -p "$tmp/upstream/$name"
  cp "$dir/go.mod" "$dir"/LICENSE* "$tmp/upstream/$name/"
  for pkg in "$@"; do
    mkdir -p "$tmp/upstream/$name/$pkg"
    for f in "$dir/$pkg"/*.go; do
      case "$f" in *_test.go) continue ;; esac
      cp "$f" "$tmp/upstream/$name/$pkg/"
    done
  done
  chmod -R u+w "$tmp/upstream/$name" # the module cache's files are read-only
}

# readme NAME MODULE VERSION PACKAGES...: the fork's README.md: what it is, and why (the patch's leading prose).
readme() {
  local name="$1" module="$2" version="$3" pkg
  shift 3
  cat <<MD
# third_party/$name: $module $version, patched

$module at $version, as the Go module proxy serves it, with
[$name.patch](../$name.patch) applied: the upstream LICENSE and go.mod, and the non-test Go files of
the packages timebox links:

MD
  for pkg in "$@"; do
    if [ "$pkg" = . ]; then echo "- $module"; else echo "- $module/$pkg"; fi
  done
  cat <<MD

go.mod's \`replace\` directive builds timebox against this copy. scripts/third_party.sh writes this
folder: do not edit it by hand; change the patch, or edit here and run \`scripts/third_party.sh --patch\`.
See docs/architecture.md, section "third_party".

## Why it is patched

MD
  sed -n '/^diff --git /q;p' "third_party/$name.patch"
}

status=0
for line in "${forks[@]}"; do
  read -r name module version packages <<<"$line"
  # shellcheck disable=SC2086 # packages is a list of folders
  upstream "$name" "$module" "$version" $packages
  if [ "$mode" = --patch ]; then
    # run from $tmp/p, "git diff --no-prefix a b" names the files a/<path> and b/<path>, as git apply -p1 wants
    mkdir -p "$tmp/p/$name"
    cp -r "$tmp/upstream/$name" "$tmp/p/$name/a"
    cp -r "third_party/$name" "$tmp/p/$name/b"
    rm -f "$tmp/p/$name/b/README.md"
    { sed -n '/^diff --git /q;p' "third_party/$name.patch"
      (cd "$tmp/p/$name" && git diff --no-index --no-prefix a b) || [ $? -eq 1 ]
    } >"$tmp/p/$name.patch"
    mv "$tmp/p/$name.patch" "third_party/$name.patch"
    echo "third_party: wrote third_party/$name.patch"
    continue
  fi
  mkdir -p "$tmp/fork"
  cp -r "$tmp/upstream/$name" "$tmp/fork/$name"
  (cd "$tmp/fork/$name" && git apply --allow-empty --whitespace=nowarn "$OLDPWD/third_party/$name.patch") ||
    { echo "third_party: third_party/$name.patch does not apply to $module $version" >&2; exit 1; }
  # shellcheck disable=SC2086
  readme "$name" "$module" "$version" $packages >"$tmp/fork/$name/README.md"
  if [ "$mode" = --check ]; then
    if ! diff -r "$tmp/fork/$name" "third_party/$name" >"$tmp/diff"; then
      echo "third_party/$name is not $module $version with third_party/$name.patch applied; run scripts/third_party.sh:" >&2
      head -n 40 "$tmp/diff" >&2
      status=1
    fi
    wired="$(go list -m -f '{{.Version}} {{with .Replace}}{{.Path}}{{end}}' "$module")"
    if [ "$wired" != "$version ./third_party/$name" ]; then
      echo "go.mod must require $module $version and replace it with ./third_party/$name (it says: $wired)" >&2
      status=1
    fi
  else
    rm -rf "third_party/$name"
    cp -r "$tmp/fork/$name" "third_party/$name"
    echo "third_party: wrote third_party/$name ($module $version + $name.patch)"
  fi
done
exit "$status"
