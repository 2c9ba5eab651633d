#!/usr/bin/env bash
# A Python virtualenv of pinned packages, cached outside the repo in $MODELPLANE_CACHE (default
# ~/.cache/modelplane)/<name>/, made once by `make test-deps` and only read by the tests. It is built
# aside under a per-process name and renamed into place last, as the Go tools are: an interrupted
# install never leaves a venv the cache check trusts, and two installs at once (two checkouts, two
# test files on a cold cache) never write into or delete each other's. A venv's interpreter finds
# its packages through its own pyvenv.cfg; the entry scripts in bin/ (pip, st, ...) and activate
# name the path they were built at, so that is rewritten to the final path before the rename.
# Prints the venv's python on stdout, everything else goes to stderr. With --check it only prints
# the cached venv's python, and exits 3 when there is none (a test never installs).
# usage: scripts/py-venv-cached.sh [--check] <name> <import to check> <requirement>...
set -euo pipefail
CHECK=0
if [ "${1:-}" = --check ]; then CHECK=1; shift; fi
[ $# -ge 3 ] || { echo "usage: $0 [--check] <name> <import to check> <requirement>..." >&2; exit 2; }
NAME=$1 IMPORT=$2
shift 2
CACHE="${MODELPLANE_CACHE:-$HOME/.cache/modelplane}"
VENV="$CACHE/$NAME"
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import $IMPORT" 2>/dev/null; then
  echo "$VENV/bin/python"
  exit 0
fi
if [ "$CHECK" = 1 ]; then echo "$NAME is not installed: run make test-deps ($0)" >&2; exit 3; fi
command -v python3 >/dev/null || { echo "python3 is required for $NAME" >&2; exit 1; }
mkdir -p "$CACHE"
WORK="$VENV.tmp.$$"
trap 'rm -rf "$WORK"' EXIT
{
  python3 -m venv "$WORK"
  "$WORK/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
  "$WORK/bin/python" -c "import $IMPORT"
  grep -lI --null "$WORK" "$WORK"/bin/* | xargs -0 -r sed -i "s|$WORK|$VENV|g"
  # A venv left by an interrupted or broken install is replaced; one that another install put in
  # place meanwhile and that works is kept, and ours is dropped.
  if [ -e "$VENV" ] && ! "$VENV/bin/python" -c "import $IMPORT" 2>/dev/null; then rm -rf "$VENV"; fi
  mv -T "$WORK" "$VENV" 2>/dev/null || true
} >&2
"$VENV/bin/python" -c "import $IMPORT" >&2
echo "$VENV/bin/python"
