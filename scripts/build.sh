#!/bin/sh
# Compiles the services to plain JavaScript in dist/ (tsc, relative imports rewritten to .js) and
# copies the Lua scripts next to the compiled billing code (and the journal's SQL migrations next to it). Production and the benchmarks run
# `node dist/proxy/main.js` and friends: no TypeScript loader at run time, and no esbuild
# keep-names helper wrapping every closure (tsx always turns that on; it showed at ~2 % of the
# proxy's CPU).
set -eu
cd "$(dirname "$0")/.."
rm -rf dist
npx tsc -p tsconfig.build.json
mkdir -p dist/core/billing/lua
cp core/billing/lua/*.lua dist/core/billing/lua/
mkdir -p dist/core/journal/migrations
cp core/journal/migrations/*.sql dist/core/journal/migrations/
