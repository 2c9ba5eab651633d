import { defineConfig } from 'vitest/config';
import SlowFirst from './test/slow-first.ts';

export default defineConfig({
  test: {
    include: ['**/*.test.ts', '**/*.test.tsx'],
    exclude: ['**/node_modules/**', '**/dist/**', '.data/**'],
    // Each test file starts its own redis-server (and some start servers); 2 cores is the machine.
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    testTimeout: 30_000,
    // The slowest files start first (test/slow-first.ts): none left to run alone at the end.
    sequence: { sequencer: SlowFirst },
    // The run's logs land in .data/test-logs; after the last test every line is scanned for
    // credentials (issue 24), and a finding fails the run.
    // One PostgreSQL per run, started by the first test file that asks (test/helpers/postgres.ts).
    globalSetup: ['test/security/global-log-scan.ts', 'test/helpers/postgres-global.ts'],
    hookTimeout: 120_000,
  },
});
