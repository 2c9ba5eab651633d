#!/usr/bin/env bash
# The tiny GGUF model llama.cpp's server loads in the tests, written by ./write_tiny_gguf.py with the
# `gguf` package from the Python registry (in a venv cached outside the repo): random weights, a real
# byte-level BPE tokenizer and a ChatML template; nothing is fetched from a model hub. The file is
# cached too, keyed by the writer's own hash, so a change to the writer makes a new one. Prints the
# model's path on stdout, everything else to stderr.
set -euo pipefail
GGUF_V="${GGUF_PY_VERSION:-0.19.0}"
ROOT="${MODELPLANE_CACHE:-$HOME/.cache/modelplane}"
VENV="$ROOT/gguf-py$GGUF_V"
HERE="$(cd "$(dirname "$0")" && pwd)"
HASH=$(sha256sum "$HERE/write_tiny_gguf.py" | cut -c1-12)
OUT="$ROOT/llamacpp-models/tiny-$HASH.gguf"
if [ -s "$OUT" ]; then echo "$OUT"; exit 0; fi
if ! { [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import gguf' 2>/dev/null; }; then
  command -v python3 >/dev/null || { echo "python3 is required to write the test model" >&2; exit 1; }
  rm -rf "$VENV"
  python3 -m venv "$VENV" >&2
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "gguf==$GGUF_V" >&2
fi
mkdir -p "$(dirname "$OUT")"
"$VENV/bin/python" "$HERE/write_tiny_gguf.py" "$OUT.tmp.$$" >&2
mv "$OUT.tmp.$$" "$OUT"
echo "$OUT"
