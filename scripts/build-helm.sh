#!/usr/bin/env bash
# Builds helm from the Go module proxy for the chart's tests (charts/modelplane: lint, template,
# schema, server-side dry-run). helm's go.mod has no replace directives, so plain `go install`
# works; the -X stamps are the ones helm's own Makefile sets: its version, and the Kubernetes
# version `helm template` assumes (without them it assumes v1.20 and refuses the chart's
# kubeVersion). About 4 min on a cold cache on two cores. Cached outside the repo, keyed by
# version, like the kube-apiserver. Prints the binary's path on stdout.
set -euo pipefail
V="${HELM_VERSION:-v3.19.5}"
# The Kubernetes minor of the client-go that helm release is built with.
K8S_MINOR="${HELM_K8S_MINOR:-34}"
GO_LDFLAGS="-X helm.sh/helm/v3/internal/version.version=$V -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
GO_LDFLAGS="$GO_LDFLAGS -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1"
GO_LDFLAGS="$GO_LDFLAGS -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$K8S_MINOR -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$K8S_MINOR"
export GO_LDFLAGS
exec "$(dirname "$0")/go-install-cached.sh" "helm-$V" "helm.sh/helm/v3/cmd/helm@$V" helm \
  "about 4 minutes on a cold cache"
