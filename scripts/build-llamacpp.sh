#!/usr/bin/env bash
# Builds llama.cpp's own HTTP server (`llama-server`, the engine behind a Model of engine type
# `llamacpp`) from source, once per version: the tests run the proxy's engine-facing suite against
# it as well as against the simulator. The source is the llama.cpp tree that the Python registry's
# llama-cpp-python sdist vendors (pinned: the registry is the one place this machine and CI can
# fetch it from); only the C++ server is compiled, not the Python bindings, so what the tests meet
# is the server a cluster runs. No web UI (nothing to fetch at build time), no TLS, static, built
# for this CPU. Cached outside the repo in $MODELPLANE_CACHE (default ~/.cache/modelplane)/
# llamacpp-py<version>/, so a test run builds it only on a fresh machine (7 min 27 s on this 2-core
# machine nearly idle; 58 minutes while other builds kept the load at 12 to 19).
# LLAMACPP_BUILD_JOBS caps the compile's parallelism (default 2). Prints the binary's path on
# stdout; everything else goes to stderr. With --check it only prints the cached binary's path, and
# exits 3 when there is none (the tests use it: a build belongs in make test-deps, not a test).
set -euo pipefail
V="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
CACHE="${MODELPLANE_CACHE:-$HOME/.cache/modelplane}/llamacpp-py$V"
BIN="$CACHE/llama-server"
if [ -x "$BIN" ]; then echo "$BIN"; exit 0; fi
if [ "${1:-}" = --check ]; then echo "llama-server is not built: run make test-deps ($0)" >&2; exit 3; fi
for tool in cmake c++ python3; do
  command -v "$tool" >/dev/null || { echo "$tool is required to build llama-server" >&2; exit 1; }
done
mkdir -p "$CACHE"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
{
  start=$(date +%s)
  echo "building llama-server from llama-cpp-python $V's vendored llama.cpp (once; minutes)"
  python3 -m pip download --quiet --no-deps --no-binary :all: "llama-cpp-python==$V" -d "$WORK"
  tar -xzf "$WORK/llama_cpp_python-$V.tar.gz" -C "$WORK" "llama_cpp_python-$V/vendor/llama.cpp"
  SRC="$WORK/llama_cpp_python-$V/vendor/llama.cpp"
  nice -n 10 cmake -S "$SRC" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF \
    -DGGML_NATIVE=ON >/dev/null
  # The compiler's warnings go to a log; its last lines are shown if the build fails.
  nice -n 10 cmake --build "$WORK/build" --target llama-server -j "${LLAMACPP_BUILD_JOBS:-2}" \
    >"$WORK/build.log" 2>&1 || { tail -n 40 "$WORK/build.log"; exit 1; }
  "$WORK/build/bin/llama-server" --version 2>&1 | tail -n 2 || true
  # Renamed into place last, so an interrupted build never leaves a binary the cache check trusts.
  mv "$WORK/build/bin/llama-server" "$BIN.tmp.$$"
  mv "$BIN.tmp.$$" "$BIN"
  echo "llama-server built in $(($(date +%s) - start)) s"
} >&2
echo "$BIN"
