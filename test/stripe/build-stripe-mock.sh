#!/usr/bin/env bash
# Builds stripe-mock (Stripe's own mock of its API, driven by Stripe's OpenAPI spec) from the Go
# module proxy: the Stripe payment provider's tests create real Checkout Sessions against it rather
# than against a hand-written fake. Pinned, so a test run never meets a newer spec by surprise; the
# spec and fixtures are embedded in the binary, so it runs from anywhere. Cached outside the repo,
# keyed by version. Prints the binary's path on stdout.
set -euo pipefail
V="${STRIPE_MOCK_VERSION:-v0.203.0}"
exec "$(dirname "$0")/../../scripts/go-install-cached.sh" "stripe-mock-$V" "github.com/stripe/stripe-mock@$V" stripe-mock
