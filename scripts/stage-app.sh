#!/bin/sh
# Stages the application layer of the images into <dest>/app: the folders images/app-contents.txt
# lists (compiled dist/ folders and, for the console, sources), without source maps, tests or the
# web app's sources (its build, console/web/dist, is what the console serves). The one way both
# image builds assemble /app — scripts/build-images.sh and images/service.Dockerfile — so an image
# built with Docker holds what `make images` does. Run after scripts/build.sh and the web build.
set -eu
cd "$(dirname "$0")/.."
dest=${1:?usage: scripts/stage-app.sh <dest>}
mkdir -p "$dest/app/dist" "$dest/app/src"
grep -v -e '^#' -e '^[[:space:]]*$' images/app-contents.txt | while read -r entry; do
  case $entry in
    dist/*) from=$entry ;;
    src/*) from=${entry#src/} ;;
    *) echo "images/app-contents.txt: '$entry' is neither dist/<folder> nor src/<folder>" >&2; exit 1 ;;
  esac
  if [ ! -d "$from" ]; then
    echo "images/app-contents.txt lists $entry, but $from is missing (run scripts/build.sh first)" >&2
    exit 1
  fi
  cp -r "$from" "$dest/app/$entry"
done
rm -rf "$dest/app/src/console/web/src"
find "$dest/app" \( -name '*.map' -o -name '*.test.ts' -o -name '*.test.tsx' \) -delete
