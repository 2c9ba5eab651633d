#!/usr/bin/env bash
# Builds kwok (sigs.k8s.io/kwok: simulated nodes and pods, no containers) from the Go module proxy
# for make e2e-cluster. v0.7.0 is built against client-go v0.33, the release of the cached
# kube-apiserver; its go.mod has no replace directives, so plain `go install` works. Cached
# outside the repo, keyed by version. Prints the binary's path on stdout.
set -euo pipefail
V="${KWOK_VERSION:-v0.7.0}"
exec "$(dirname "$0")/../../scripts/go-install-cached.sh" "kwok-$V" "sigs.k8s.io/kwok/cmd/kwok@$V" kwok \
  "a few minutes on a cold cache"
