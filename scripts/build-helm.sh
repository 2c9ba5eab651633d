#!/usr/bin/env bash
# Builds helm from the Go module proxy for the chart's tests (charts/modelplane: lint, template,
# schema, server-side dry-run). helm's go.mod has no replace directives, so plain `go install`
# works. Cached outside the repo, keyed by version, like the kube-apiserver. Prints the binary's
# path on stdout.
set -euo pipefail
V="${HELM_VERSION:-v3.19.5}"
exec "$(dirname "$0")/go-install-cached.sh" "helm-$V" "helm.sh/helm/v3/cmd/helm@$V" helm \
  "a few minutes on a cold cache"
