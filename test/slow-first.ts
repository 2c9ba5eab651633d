// The order test files start in: the slowest first, so that no long file starts last and runs
// alone while the other worker idles (a fresh clone has no timing cache, and vitest then starts
// the largest files first — schemathesis.test.ts, small and 47 s long, came last and added its
// whole length to the run). The list is from a CI run's timings (longest first); files not named
// keep vitest's own order after it. test/layout checks every name still exists.
import { BaseSequencer, type TestSpecification } from 'vitest/node';

export const SLOW_FIRST = [
  'test/console/playground.test.ts',
  'test/console/browser.test.ts',
  'test/k8s/fence.test.ts',
  'test/hostile/schemathesis.test.ts',
  'test/chaos/cluster-shard-failover.test.ts',
  'test/build.test.ts',
  'test/k8s/weights.test.ts',
  'test/chaos/engine-drain.test.ts',
  'test/chaos/background-replica-killed.test.ts',
  'core/redis/epoch.test.ts',
  'test/console/playground-media.test.ts',
  'test/console/batches-page.test.ts',
  'test/console/playground-compare.test.ts',
  'test/chaos/cluster-failover.test.ts',
  'test/chaos/redis-hung.test.ts',
  'test/monitoring/live-metrics.test.ts',
  'test/console/playground-tools.test.ts',
  'test/console/default-limits.test.ts',
  'test/chaos/redis-restart.test.ts',
  'test/chaos/journal-hung.test.ts',
  'test/k8s/placement.test.ts',
  'test/hostile/slow-clients.test.ts',
  'test/chart/dry-run.test.ts',
  'test/proxy/rate-limits.test.ts',
  'test/proxy/batch-replicas.test.ts',
  'test/chaos/batch-kill.test.ts',
];

export default class SlowFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (f: TestSpecification) => {
      const at = SLOW_FIRST.findIndex((name) => f.moduleId.endsWith(`/${name}`));
      return at === -1 ? SLOW_FIRST.length : at;
    };
    // A stable sort: the files not named keep vitest's order.
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}
