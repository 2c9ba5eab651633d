#!/usr/bin/env bash
# Installs the system programs the platform and its tests run for real: redis-server and postgresql (always),
# etcd (operator tests), prometheus (alert rules and dashboards), ffmpeg (its ffprobe checks the simulator's MP4s), wrk (benchmarks). On Debian as root they are installed with apt-get;
# otherwise the one command to run is printed and we stop.
set -euo pipefail
want=()
command -v redis-server >/dev/null || want+=(redis-server)
# PostgreSQL, the durable money journal: `make dev` runs one of its own and the tests one per run.
# Debian keeps its programs out of PATH, in /usr/lib/postgresql/<version>/bin.
compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || command -v postgres >/dev/null || want+=(postgresql)
for arg in "$@"; do
  case "$arg" in
    etcd) command -v etcd >/dev/null || want+=(etcd-server) ;;
    ffmpeg) command -v ffprobe >/dev/null || want+=(ffmpeg) ;;
    wrk) command -v wrk >/dev/null || want+=(wrk) ;;
    chromium) command -v chromium >/dev/null || want+=(chromium) ;;
    # Debian's prometheus package: the server (the dashboards' test scrapes the platform with it)
    # and promtool (the alert rules' checks and unit tests).
    prometheus) command -v promtool >/dev/null || want+=(prometheus) ;;
    # `make images`: umoci writes the OCI image layouts, skopeo turns them into archives.
    images)
      command -v umoci >/dev/null || want+=(umoci)
      command -v skopeo >/dev/null || want+=(skopeo)
      ;;
  esac
done
[ ${#want[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing ${want[*]} with apt-get" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq "${want[@]}" >&2
else
  echo "missing: ${want[*]}. Install with: sudo apt-get install -y ${want[*]}" >&2
  exit 1
fi
