#!/usr/bin/env bash
# Builds one Go program from the Go module proxy with `go install`, once per version: the binary
# is cached outside the repo in $MODELPLANE_CACHE (default ~/.cache/modelplane)/<cache-dir>/, so a
# test run builds it only on a fresh machine. Prints the binary's path on stdout; everything else
# goes to stderr. GO_BUILD_JOBS caps the compile's parallelism (default 2: test machines are small
# and shared); GO_LDFLAGS adds linker flags (-X version stamps) to the default "-s -w".
# usage: scripts/go-install-cached.sh <cache-dir> <module path>@<version> <binary name> [what to say]
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 <cache-dir> <module>@<version> <binary> [note]" >&2; exit 2; }
DIR=$1 PKG=$2 NAME=$3 NOTE=${4:-}
CACHE="${MODELPLANE_CACHE:-$HOME/.cache/modelplane}/$DIR"
BIN="$CACHE/$NAME"
if [ -x "$BIN" ]; then echo "$BIN"; exit 0; fi
command -v go >/dev/null || { echo "go is required to build $NAME (https://go.dev/dl)" >&2; exit 1; }
mkdir -p "$CACHE"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
{
  echo "building $PKG from the Go module proxy${NOTE:+ ($NOTE)}"
  # GOTOOLCHAIN=local: build with the Go that is installed rather than fetching the toolchain the
  # module's go.mod names; GOFLAGS is cleared so a caller's -mod=... cannot break `go install`.
  GOTOOLCHAIN=local GOFLAGS= GOBIN="$WORK" CGO_ENABLED=0 \
    go install -p "${GO_BUILD_JOBS:-2}" -trimpath -ldflags "-s -w ${GO_LDFLAGS:-}" "$PKG"
  # Renamed into place last, so an interrupted build never leaves a binary the cache check trusts;
  # the temporary name is per process, so two builds at once (two checkouts) cannot take each other's.
  mv "$WORK/$NAME" "$BIN.tmp.$$"
  mv "$BIN.tmp.$$" "$BIN"
} >&2
echo "$BIN"
