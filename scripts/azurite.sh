#!/usr/bin/env bash
# Azurite, the Azure Storage emulator, from tools/azurite (pinned, with the Node 22 it requires, both from the
# npm registry: the machine's own Node is left alone).
#   scripts/azurite.sh install        npm ci, when the lock file is newer than the installed tree
#   scripts/azurite.sh table PORT     run its Table service on 127.0.0.1:PORT, in memory, in the foreground
set -euo pipefail
cd "$(dirname "$0")/.."
dir=tools/azurite

install() {
  # npm writes node_modules/.package-lock.json on every install: a pull that changed the lock file installs again.
  if [ ! -f "$dir/node_modules/.package-lock.json" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    echo "azurite: installing Azurite and the Node 22 it runs on from the npm registry into $dir (the first time: about a minute)" >&2
    npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error >/dev/null
  fi
}

case "${1:-}" in
  install)
    install
    ;;
  table)
    install
    node="$dir/node_modules/.bin/node"
    [ -x "$node" ] || node=node # no Node package for this platform: the machine's, which must be 22 or newer
    exec "$node" "$dir/node_modules/azurite/dist/src/table/main.js" --inMemoryPersistence --disableTelemetry --silent \
      --tableHost 127.0.0.1 --tablePort "${2:?port}"
    ;;
  *)
    echo "usage: $0 install | table PORT" >&2
    exit 2
    ;;
esac
