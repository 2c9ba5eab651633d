// Flags every modelplane Node service runs with (make dev, the benchmarks; production start
// commands in docs/operations.md "Running the services in production"). A proxy allocates a few
// short-lived strings and buffers per request and per stream frame; with V8's default 16 MB young
// generation the scavenger ran so often that it was 9-12 % of the proxy's CPU. A 64 MB semi-space
// cut the proxy's CPU per stream by about a sixth (bench/RESULTS.md), for at most ~200 MB more
// resident memory under load.
export const NODE_SERVICE_FLAGS: readonly string[] = ['--max-semi-space-size=64'];
