#!/usr/bin/env bash
# Builds the Kubernetes control-plane programs the tests run (kube-apiserver, kube-controller-manager,
# kube-scheduler) from the Go module proxy, for the tests' real control planes.
# `go install k8s.io/kubernetes/cmd/<component>@v...` cannot work: k8s.io/kubernetes pins its
# staging modules at v0.0.0 with local replaces, and replaces only apply in the main module. So we
# make a tiny wrapper module that requires k8s.io/kubernetes and replaces every staging module with
# its published v0.<minor>.<patch>. Asked for any one of the three, it builds every one not yet
# cached in ONE `go build` of the wrapper's three mains: one module resolution, one `go mod tidy`,
# one package graph (the three share most of their packages: client-go, apimachinery, apiserver's
# libraries, each compiled once), the links run side by side. Binaries are cached outside the repo,
# keyed by version; one already there is never rebuilt.
# Prints the asked binary's path on stdout; everything else goes to stderr.
# usage: test/k8s/build-kube-component.sh kube-apiserver|kube-controller-manager|kube-scheduler
set -euo pipefail
C=${1:?usage: $0 kube-apiserver|kube-controller-manager|kube-scheduler}
declare -A NEW=([kube-apiserver]=NewAPIServerCommand [kube-controller-manager]=NewControllerManagerCommand
  [kube-scheduler]=NewSchedulerCommand)
[ -n "${NEW[$C]:-}" ] || { echo "unknown component $C" >&2; exit 2; }
V="${KUBE_VERSION:-1.33.13}"
CACHE="${MODELPLANE_CACHE:-$HOME/.cache/modelplane}/k8s-v$V"
if [ -x "$CACHE/$C" ]; then echo "$CACHE/$C"; exit 0; fi
command -v go >/dev/null || { echo "go is required to build $C (https://go.dev/dl)" >&2; exit 1; }
missing=()
for c in kube-apiserver kube-controller-manager kube-scheduler; do [ -x "$CACHE/$c" ] || missing+=("$c"); done
mkdir -p "$CACHE"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
export GOFLAGS=-mod=mod GOTOOLCHAIN=local
{
  start=$(date +%s)
  echo "building ${missing[*]} v$V from the Go module proxy in one go build (once; minutes)"
  go mod init kube-components
  go mod edit -require="k8s.io/kubernetes@v$V"
  MOD=$(go mod download -json "k8s.io/kubernetes@v$V" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')
  for m in $(sed -n 's/^\t\(k8s\.io\/[^ ]*\) v0\.0\.0$/\1/p' "$MOD"); do
    go mod edit -replace="$m=$m@v0.${V#1.}"
  done
  # As upstream's cmd/<component>/<component>.go, one main package per component.
  for c in "${missing[@]}"; do
    mkdir -p "cmd/$c"
    cat > "cmd/$c/main.go" <<GO
package main

import (
	"os"
	_ "time/tzdata"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/$c/app"
)

func main() { os.Exit(cli.Run(app.${NEW[$c]}())) }
GO
  done
  go mod tidy
  MINOR=${V#1.}; MINOR=${MINOR%%.*}
  LD="-s -w"
  for k in gitVersion=v$V gitMajor=1 gitMinor=$MINOR gitTreeState=clean; do
    LD="$LD -X k8s.io/component-base/version.$k -X k8s.io/client-go/pkg/version.$k"
  done
  mkdir -p bin
  CGO_ENABLED=0 go build -p "${GO_BUILD_JOBS:-2}" -trimpath -ldflags "$LD" -o bin/ \
    $(printf './cmd/%s ' "${missing[@]}")
  # Renamed into place last under a per-process temporary name: an interrupted build never leaves
  # a binary the cache check trusts, and two builds at once (two checkouts) never take each other's.
  for c in "${missing[@]}"; do
    mv "bin/$c" "$CACHE/$c.tmp.$$"
    mv "$CACHE/$c.tmp.$$" "$CACHE/$c"
  done
  echo "built ${missing[*]} in $(( $(date +%s) - start )) s"
} >&2
echo "$CACHE/$C"
