#!/usr/bin/env bash
# Builds one Kubernetes control-plane program (kube-apiserver, kube-controller-manager,
# kube-scheduler) from the Go module proxy, for the tests' real control planes.
# `go install k8s.io/kubernetes/cmd/<component>@v...` cannot work: k8s.io/kubernetes pins its
# staging modules at v0.0.0 with local replaces, and replaces only apply in the main module. So we
# make a tiny wrapper module that requires k8s.io/kubernetes and replaces every staging module with
# its published v0.<minor>.<patch>. The binary is cached outside the repo, keyed by version; the
# three share Go's build cache, so the second and third build only what is their own.
# Prints the binary's path on stdout; everything else goes to stderr.
# usage: test/k8s/build-kube-component.sh kube-apiserver|kube-controller-manager|kube-scheduler
set -euo pipefail
C=${1:?usage: $0 kube-apiserver|kube-controller-manager|kube-scheduler}
case "$C" in
  kube-apiserver) NEW=NewAPIServerCommand ;;
  kube-controller-manager) NEW=NewControllerManagerCommand ;;
  kube-scheduler) NEW=NewSchedulerCommand ;;
  *) echo "unknown component $C" >&2; exit 2 ;;
esac
V="${KUBE_VERSION:-1.33.13}"
CACHE="${MODELPLANE_CACHE:-$HOME/.cache/modelplane}/k8s-v$V"
BIN="$CACHE/$C"
if [ -x "$BIN" ]; then echo "$BIN"; exit 0; fi
command -v go >/dev/null || { echo "go is required to build $C (https://go.dev/dl)" >&2; exit 1; }
mkdir -p "$CACHE"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
export GOFLAGS=-mod=mod GOTOOLCHAIN=local
{
  go mod init kube-component
  go mod edit -require="k8s.io/kubernetes@v$V"
  MOD=$(go mod download -json "k8s.io/kubernetes@v$V" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')
  for m in $(sed -n 's/^\t\(k8s\.io\/[^ ]*\) v0\.0\.0$/\1/p' "$MOD"); do
    go mod edit -replace="$m=$m@v0.${V#1.}"
  done
  # As upstream's cmd/<component>/<component>.go.
  cat > main.go <<GO
package main

import (
	"os"
	_ "time/tzdata"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/$C/app"
)

func main() { os.Exit(cli.Run(app.$NEW())) }
GO
  go mod tidy
  MINOR=${V#1.}; MINOR=${MINOR%%.*}
  LD="-s -w"
  for k in gitVersion=v$V gitMajor=1 gitMinor=$MINOR gitTreeState=clean; do
    LD="$LD -X k8s.io/component-base/version.$k -X k8s.io/client-go/pkg/version.$k"
  done
  # Per-process temporary name: two builds at once (two checkouts) must not rename each other's.
  CGO_ENABLED=0 go build -p "${GO_BUILD_JOBS:-2}" -trimpath -ldflags "$LD" -o "$BIN.tmp.$$" .
  mv "$BIN.tmp.$$" "$BIN"
} >&2
echo "$BIN"
