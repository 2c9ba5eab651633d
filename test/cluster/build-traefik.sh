#!/usr/bin/env bash
# Builds Traefik (github.com/traefik/traefik/v3), a real ingress controller, from the Go module
# proxy for make e2e-cluster (test/cluster/ingress.e2e.ts): its kubernetesIngress and
# kubernetesGateway providers read the chart's Ingresses and HTTPRoute from the test control plane.
# Traefik's go.mod has replace directives, which `go install pkg@version` refuses, so the module is
# downloaded and built inside a writable copy of it, where its own go.mod and go.sum apply.
# v3.6.12: v3.7's go.mod replaces a nested module by a folder its module zip lacks, and several of
# its dependencies are not served here. Beside the binary go the standard Gateway API CRDs of the
# release Traefik is built against (gateway-api-crds/), which the test installs.
# About 10 minutes on a cold cache on two cores. Cached outside the repo, keyed by version.
# Prints the binary's path on stdout; everything else goes to stderr.
set -euo pipefail
V="${TRAEFIK_VERSION:-v3.6.12}"
CACHE="${MODELPLANE_CACHE:-$HOME/.cache/modelplane}/traefik-$V"
BIN="$CACHE/traefik"
if [ -x "$BIN" ] && [ -d "$CACHE/gateway-api-crds" ]; then echo "$BIN"; exit 0; fi
command -v go >/dev/null || { echo "go is required to build traefik (https://go.dev/dl)" >&2; exit 1; }
mkdir -p "$CACHE"
WORK=$(mktemp -d)
trap 'chmod -R u+w "$WORK" 2>/dev/null; rm -rf "$WORK"' EXIT
export GOFLAGS=-mod=mod GOTOOLCHAIN=local
{
  cd "$WORK"
  DIR=$(go mod download -json "github.com/traefik/traefik/v3@$V" | sed -n 's/.*"Dir": "\(.*\)",*/\1/p')
  GW=$(sed -n 's/^\tsigs\.k8s\.io\/gateway-api \(v[^ ]*\).*/\1/p' "$DIR/go.mod")
  GWDIR=$(go mod download -json "sigs.k8s.io/gateway-api@$GW" | sed -n 's/.*"Dir": "\(.*\)",*/\1/p')
  rm -rf "$CACHE/gateway-api-crds.tmp.$$"
  cp -r "$GWDIR/config/crd/standard" "$CACHE/gateway-api-crds.tmp.$$"
  chmod -R u+w "$CACHE/gateway-api-crds.tmp.$$"
  if [ ! -x "$BIN" ]; then
    echo "building traefik $V from the Go module proxy (about 10 minutes on a cold cache)"
    cp -r "$DIR" src
    chmod -R u+w src
    (cd src && CGO_ENABLED=0 go build -p "${GO_BUILD_JOBS:-2}" -trimpath \
      -ldflags "-s -w -X github.com/traefik/traefik/v3/pkg/version.Version=$V" \
      -o "$BIN.tmp.$$" ./cmd/traefik)
    # Renamed into place last, so an interrupted build never leaves a binary the cache check trusts.
    mv "$BIN.tmp.$$" "$BIN"
  fi
  rm -rf "$CACHE/gateway-api-crds"
  mv "$CACHE/gateway-api-crds.tmp.$$" "$CACHE/gateway-api-crds"
} >&2
echo "$BIN"
