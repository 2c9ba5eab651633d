// `make e2e-cluster` (the last step of `make test`): the chart on a control plane with real
// controllers, one control plane for the whole file.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/cluster/*.e2e.ts'],
    pool: 'forks',
    testTimeout: 900_000,
    hookTimeout: 1_800_000,
  },
});
