#!/usr/bin/env bash
# Builds MinIO from the Go module proxy: the second real S3-compatible server the S3 store's
# contract runs against (the first is Versity Gateway, build-s3-server.sh), the one most
# self-hosted fleets use. MinIO publishes no semantic-version tags the proxy serves, so the version
# is a pseudo-version of a commit on its default branch (2026-02-12); its go.mod has no replace
# directives, so plain `go install` works. About 2 min 15 s on a cold cache on two cores (~1.2 GB
# of modules, ~1 GB of build cache). Cached outside the repo, keyed by version, like the
# kube-apiserver. Prints the binary's path on stdout; everything else goes to stderr.
# S3_SERVER_BUILD_JOBS caps the compile's parallelism (default 2: test machines are small, shared).
set -euo pipefail
V="${MINIO_VERSION:-v0.0.0-20260212201848-7aac2a2c5b7c}"
CACHE="${MODELPLANE_CACHE:-$HOME/.cache/modelplane}/minio-$V"
BIN="$CACHE/minio"
if [ -x "$BIN" ]; then echo "$BIN"; exit 0; fi
command -v go >/dev/null || { echo "go is required to build the S3 test server (https://go.dev/dl)" >&2; exit 1; }
mkdir -p "$CACHE"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
{
  echo "building minio@$V from the Go module proxy (about 2 minutes on a cold cache)"
  # GOTOOLCHAIN=local: build with the Go that is installed rather than fetching the toolchain
  # MinIO's go.mod names; GOFLAGS is cleared so a caller's -mod=... cannot break `go install`.
  GOTOOLCHAIN=local GOFLAGS= GOBIN="$WORK" CGO_ENABLED=0 \
    go install -p "${S3_SERVER_BUILD_JOBS:-2}" -trimpath -ldflags "-s -w" "github.com/minio/minio@$V"
  mv "$WORK/minio" "$BIN.tmp"
  mv "$BIN.tmp" "$BIN"
} >&2
echo "$BIN"
