#!/usr/bin/env bash
# Builds a real kube-apiserver from the Go module proxy for the operator's integration tests
# (test/k8s/build-kube-component.sh says how). Prints the binary's path on stdout.
exec "$(dirname "$0")/build-kube-component.sh" kube-apiserver
