#!/usr/bin/env bash
# A Python virtualenv with the official `openai` and `anthropic` SDKs, for the tests that drive the
# proxy from Python (the Python SDKs differ from the TypeScript ones in what they send: videos as
# multipart, for one). Made once by `make test-deps` (scripts/py-venv-cached.sh: built aside, renamed
# into place), keyed by the pinned versions; the tests call it with --check, which only reads the
# cache. Prints the venv's python on stdout, everything else to stderr.
set -euo pipefail
OPENAI_V="${OPENAI_PY_VERSION:-3.51.0}"
ANTHROPIC_V="${ANTHROPIC_PY_VERSION:-2.10.0}"
CHECK=(); [ "${1:-}" = --check ] && CHECK=(--check)
exec "$(dirname "$0")/../../scripts/py-venv-cached.sh" "${CHECK[@]}" \
  "py-sdks-openai$OPENAI_V-anthropic$ANTHROPIC_V" 'openai, anthropic' \
  "openai==$OPENAI_V" "anthropic==$ANTHROPIC_V"
