#!/usr/bin/env bash
# A Python virtualenv with Schemathesis (property-based API testing from the OpenAPI document),
# for test/hostile/schemathesis.test.ts. Cached outside the repo, keyed by version; prints the
# `st` executable's path on stdout, everything else to stderr.
set -euo pipefail
V="${SCHEMATHESIS_VERSION:-4.32.5}"
VENV="${MODELPLANE_CACHE:-$HOME/.cache/modelplane}/schemathesis-$V"
if [ -x "$VENV/bin/st" ] && "$VENV/bin/st" --version >/dev/null 2>&1; then
  echo "$VENV/bin/st"
  exit 0
fi
command -v python3 >/dev/null || { echo "python3 is required for the Schemathesis run" >&2; exit 1; }
rm -rf "$VENV"
python3 -m venv "$VENV" >&2
"$VENV/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$V" >&2
echo "$VENV/bin/st"
