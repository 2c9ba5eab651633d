#!/usr/bin/env bash
# Installs the editor tools the editor-client tests drive (issue 25) from the npm registry, once
# per version, outside the repo in $MODELPLANE_CACHE (default ~/.cache/modelplane)/editor-tools-<v>/
# so a test run installs them only on a fresh machine. Prints the folder holding node_modules/.bin
# on stdout; everything else goes to stderr.
set -euo pipefail
CODEX=0.169.0 CLAUDE=2.1.328
DIR="${MODELPLANE_CACHE:-$HOME/.cache/modelplane}/editor-tools-codex$CODEX-claude$CLAUDE"
if [ -x "$DIR/node_modules/.bin/codex" ] && [ -x "$DIR/node_modules/.bin/claude" ]; then echo "$DIR"; exit 0; fi
WORK="$DIR.tmp.$$"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK"
{
  echo "installing @openai/codex@$CODEX and @anthropic-ai/claude-code@$CLAUDE from the npm registry"
  (cd "$WORK" && echo '{"private":true}' > package.json &&
    npm install --no-audit --no-fund --loglevel=error "@openai/codex@$CODEX" "@anthropic-ai/claude-code@$CLAUDE")
  # Moved into place last, so an interrupted install never leaves a folder the check above trusts.
  rm -rf "$DIR"
  mv "$WORK" "$DIR"
} >&2
echo "$DIR"
