#!/usr/bin/env bash
# Builds a real S3-compatible server for the S3 object store's tests: Versity Gateway
# (github.com/versity/versitygw, Apache-2.0) with its posix backend, from the Go module proxy; the
# other server the store is tested against is MinIO (build-minio.sh). Cached outside the repo,
# keyed by version (2 min 11 s on a cold cache on two cores, ~340 MB of modules, ~430 MB of build
# cache). Prints the binary's path on stdout; everything else to stderr.
set -euo pipefail
V="${VERSITYGW_VERSION:-1.8.0}"
CACHE="${MODELPLANE_CACHE:-$HOME/.cache/modelplane}/versitygw-v$V"
BIN="$CACHE/versitygw"
if [ -x "$BIN" ]; then echo "$BIN"; exit 0; fi
command -v go >/dev/null || { echo "go is required to build versitygw (https://go.dev/dl)" >&2; exit 1; }
mkdir -p "$CACHE"
GOFLAGS=-mod=mod GOTOOLCHAIN=local GOBIN="$CACHE" go install "github.com/versity/versitygw/cmd/versitygw@v$V" >&2
echo "$BIN"
