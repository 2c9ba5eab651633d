#!/usr/bin/env bash
# Builds stripe-mock (Stripe's own mock of its API, driven by Stripe's OpenAPI spec) from the Go
# module proxy: the Stripe payment provider's tests create real Checkout Sessions against it rather
# than against a hand-written fake. Pinned, so a test run never meets a newer spec by surprise.
# Cached outside the repo, keyed by version, like MinIO (test/s3/build-minio.sh). Prints the
# binary's path on stdout; everything else goes to stderr.
# STRIPE_MOCK_BUILD_JOBS caps the compile's parallelism (default 2: test machines are small, shared).
set -euo pipefail
V="${STRIPE_MOCK_VERSION:-v0.203.0}"
CACHE="${MODELPLANE_CACHE:-$HOME/.cache/modelplane}/stripe-mock-$V"
BIN="$CACHE/stripe-mock"
if [ -x "$BIN" ]; then echo "$BIN"; exit 0; fi
command -v go >/dev/null || { echo "go is required to build stripe-mock (https://go.dev/dl)" >&2; exit 1; }
mkdir -p "$CACHE"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
{
  echo "building stripe-mock@$V from the Go module proxy"
  # GOTOOLCHAIN=local: build with the Go that is installed rather than fetching the toolchain the
  # module's go.mod names; GOFLAGS is cleared so a caller's -mod=... cannot break `go install`.
  # The OpenAPI spec and fixtures are embedded in the binary, so it runs from anywhere.
  GOTOOLCHAIN=local GOFLAGS= GOBIN="$WORK" CGO_ENABLED=0 \
    go install -p "${STRIPE_MOCK_BUILD_JOBS:-2}" -trimpath -ldflags "-s -w" "github.com/stripe/stripe-mock@$V"
  # Renamed into place last, so an interrupted build never leaves a binary the cache check trusts.
  mv "$WORK/stripe-mock" "$BIN.tmp"
  mv "$BIN.tmp" "$BIN"
} >&2
echo "$BIN"
