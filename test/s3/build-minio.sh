#!/usr/bin/env bash
# Builds MinIO from the Go module proxy: the second real S3-compatible server the S3 store's
# contract runs against (the first is Versity Gateway, build-s3-server.sh), the one most
# self-hosted fleets use. MinIO publishes no semantic-version tags the proxy serves, so the version
# is a pseudo-version of a commit on its default branch (2026-02-12); its go.mod has no replace
# directives, so plain `go install` works. About 2 min 15 s on a cold cache on two cores (~1.2 GB
# of modules, ~1 GB of build cache). Cached outside the repo, keyed by version, like the
# kube-apiserver. Prints the binary's path on stdout.
set -euo pipefail
V="${MINIO_VERSION:-v0.0.0-20260212201848-7aac2a2c5b7c}"
exec "$(dirname "$0")/../../scripts/go-install-cached.sh" "minio-$V" "github.com/minio/minio@$V" minio \
  "about 2 minutes on a cold cache"
