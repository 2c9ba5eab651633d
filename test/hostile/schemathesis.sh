#!/usr/bin/env bash
# A Python virtualenv with Schemathesis (property-based API testing from the OpenAPI document),
# for test/hostile/schemathesis.test.ts. Made once by `make test-deps` (scripts/py-venv-cached.sh:
# built aside, renamed into place), keyed by version; the test calls it with --check, which only
# reads the cache. Prints the `st` executable's path on stdout, everything else to stderr.
set -euo pipefail
V="${SCHEMATHESIS_VERSION:-4.32.5}"
CHECK=(); [ "${1:-}" = --check ] && CHECK=(--check)
python=$("$(dirname "$0")/../../scripts/py-venv-cached.sh" "${CHECK[@]}" \
  "schemathesis-$V" schemathesis "schemathesis==$V")
echo "$(dirname "$python")/st"
