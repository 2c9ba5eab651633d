#!/usr/bin/env bash
# A Python virtualenv with the official `openai` and `anthropic` SDKs, for the tests that drive the
# proxy from Python (the Python SDKs differ from the TypeScript ones in what they send: videos as
# multipart, for one). Cached outside the repo, keyed by the pinned versions; prints the venv's
# python on stdout, everything else to stderr.
set -euo pipefail
OPENAI_V="${OPENAI_PY_VERSION:-3.51.0}"
ANTHROPIC_V="${ANTHROPIC_PY_VERSION:-2.10.0}"
VENV="${MODELPLANE_CACHE:-$HOME/.cache/modelplane}/py-sdks-openai$OPENAI_V-anthropic$ANTHROPIC_V"
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import openai, anthropic' 2>/dev/null; then
  echo "$VENV/bin/python"
  exit 0
fi
command -v python3 >/dev/null || { echo "python3 is required for the Python SDK tests" >&2; exit 1; }
rm -rf "$VENV"
python3 -m venv "$VENV" >&2
"$VENV/bin/pip" install --quiet --disable-pip-version-check "openai==$OPENAI_V" "anthropic==$ANTHROPIC_V" >&2
echo "$VENV/bin/python"
