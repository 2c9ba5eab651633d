// `make e2e-vllm`: the proxy in front of a real vLLM (minutes: the install, the engine's start and
// CPU generation stay outside the `make test` budget).
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/engines/vllm/*.e2e.ts'],
    pool: 'forks',
    // Each file starts its own vLLM: one at a time, or two share the machine's cores.
    fileParallelism: false,
    testTimeout: 300_000,
    // The first run installs vLLM (about 6 minutes); a start on a loaded machine takes minutes too.
    hookTimeout: 1_800_000,
    globalSetup: ['test/security/global-log-scan.ts'],
  },
});
