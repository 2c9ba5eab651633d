// `make e2e-cluster`: the chart on a control plane with real controllers (minutes: outside the
// `make test` budget).
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/cluster/*.e2e.ts'],
    pool: 'forks',
    testTimeout: 900_000,
    hookTimeout: 1_800_000,
  },
});
