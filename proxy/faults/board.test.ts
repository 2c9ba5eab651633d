import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ApiError, billingUnavailable, storeLostData } from '../../core/errors.ts';
import { FaultBoard } from './board.ts';
import { registerFaultMetrics } from './fault-metrics.ts';
import { FAULTS, type Fault, type FaultSources } from './faults.ts';

/** Sources of a replica where all is well; each case changes what it needs. */
function sources(over: Partial<FaultSources> = {}): FaultSources {
  return {
    redisMismatch: () => null,
    redisFailingMs: () => 0,
    settlementsFailingMs: () => 0,
    settlementsStalledEverywhere: () => false,
    shardsWithoutReplicas: () => [],
    journalWriteFailure: () => null,
    owedSettlements: () => 0,
    stallMs: 5_000,
    ...over,
  };
}

async function gauges(board: FaultBoard): Promise<Record<string, number>> {
  const registry = new Registry();
  registerFaultMetrics(registry, board);
  const out: Record<string, number> = {};
  for (const m of await registry.getMetricsAsJSON()) out[m.name] = m.values[0]!.value;
  return out;
}

const refusalOf = (e: ApiError | null) => (e === null ? null : { message: e.message, retry: e.retryAfterS });

describe('the fault table, read by readiness, refusal, /readyz and metrics', () => {
  it('a fake fault added to the table in one place is seen by all four readers', async () => {
    let broken = false;
    const fake: Fault = {
      type: 'FakeFault',
      holds: () => broken,
      message: () => 'the fake fault holds',
      check: 'fake',
      refuses: 'billable calls',
      refusal: () => new ApiError('server_error', 'fake fault', { retryAfterS: 7 }),
      metric: {
        name: 'mp_proxy_fake_fault',
        help: 'a fake fault (1) or none (0)',
        value: () => (broken ? 1 : 0),
      },
      runbook: 'docs/faults.md "The faults"',
    };
    const board = new FaultBoard([...FAULTS, fake], sources());

    expect(board.readiness()).toEqual({ redisData: true, billing: true, journal: true, fake: true });
    expect(board.reasons()).toEqual([]);
    expect(board.refusal()).toBeNull();
    expect((await gauges(board)).mp_proxy_fake_fault).toBe(0);

    broken = true;
    expect(board.readiness()).toEqual({ redisData: true, billing: true, journal: true, fake: false });
    expect(board.reasons()).toEqual(['the fake fault holds']);
    expect(refusalOf(board.refusal())).toEqual({ message: 'fake fault', retry: 7 });
    // It refuses billable calls only: any other /v1 call still goes through.
    expect(board.callRefusal()).toBeNull();
    expect((await gauges(board)).mp_proxy_fake_fault).toBe(1);
  });

  it('every fault has its own type, gauge and runbook row, and names a check and a refusal', () => {
    expect(new Set(FAULTS.map((f) => f.type)).size).toBe(FAULTS.length);
    expect(new Set(FAULTS.map((f) => f.metric.name)).size).toBe(FAULTS.length);
    for (const f of FAULTS) {
      expect(f.runbook).toMatch(/^docs\/faults\.md ".+"$/);
      expect(f.metric.name).toMatch(/^mp_proxy_[a-z_]+$/);
      expect(f.refusal()).toBeInstanceOf(ApiError);
    }
  });

  const failure = { since: Date.now() - 3_000, error: new Error('ENOSPC: no space left on device') };
  const lost = { expected: 'e1', found: null };
  it.each([
    {
      fault: 'none',
      s: sources(),
      ready: { redisData: true, billing: true, journal: true },
      reasons: [],
      refusal: null,
      every: null,
    },
    {
      fault: 'Redis lost its data',
      s: sources({ redisMismatch: () => lost, owedSettlements: () => 4 }),
      ready: { redisData: false, billing: true, journal: true },
      reasons: [
        'Redis lost its data or is another server: its epoch is missing, this replica knew e1; 4 settlements stay in the journal until Redis is restored from its AOF/RDB',
      ],
      refusal: storeLostData(),
      every: storeLostData(),
    },
    {
      fault: 'Redis unanswered past the stall bound (the outbox stalls with it: said once)',
      s: sources({ redisFailingMs: () => 6_000, settlementsFailingMs: () => 5_500 }),
      ready: { redisData: true, billing: false, journal: true },
      reasons: ['Redis has not answered for 6000 ms'],
      refusal: billingUnavailable(),
      every: null,
    },
    {
      fault: 'Redis unanswered within the stall bound',
      s: sources({ redisFailingMs: () => 5_000 }),
      ready: { redisData: true, billing: true, journal: true },
      reasons: [],
      refusal: null,
      every: null,
    },
    {
      fault: 'settlements stalled while Redis answers',
      s: sources({ settlementsFailingMs: () => 5_001, settlementsStalledEverywhere: () => true }),
      ready: { redisData: true, billing: false, journal: true },
      reasons: ['settlements have not reached Redis for 5001 ms'],
      refusal: billingUnavailable(),
      every: null,
    },
    {
      fault: 'the journal cannot be written',
      s: sources({ journalWriteFailure: () => failure }),
      ready: { redisData: true, billing: true, journal: false },
      reasons: [
        'the settlement journal cannot be written (ENOSPC: no space left on device): free space in PROXY_DATA_DIR',
      ],
      refusal: billingUnavailable(),
      every: null,
    },
    {
      fault: 'Redis lost its data and the journal cannot be written: the data store is what a call hears',
      s: sources({
        redisMismatch: () => ({ expected: 'e1', found: 'e2' }),
        journalWriteFailure: () => failure,
      }),
      ready: { redisData: false, billing: true, journal: false },
      reasons: [
        'Redis lost its data or is another server: its epoch is e2, this replica knew e1; 0 settlements stay in the journal until Redis is restored from its AOF/RDB',
        'the settlement journal cannot be written (ENOSPC: no space left on device): free space in PROXY_DATA_DIR',
      ],
      refusal: storeLostData(),
      every: storeLostData(),
    },
  ])('$fault', ({ s, ready, reasons, refusal, every }) => {
    const board = new FaultBoard(FAULTS, s);
    expect(board.readiness()).toEqual(ready);
    expect(board.reasons()).toEqual(reasons);
    expect(refusalOf(board.refusal())).toEqual(refusalOf(refusal));
    expect(refusalOf(board.callRefusal())).toEqual(refusalOf(every));
  });

  it('the gauges keep the names and meanings the chart alerts on', async () => {
    const g = await gauges(
      new FaultBoard(
        FAULTS,
        sources({
          redisMismatch: () => lost,
          redisFailingMs: () => 1_500,
          settlementsFailingMs: () => 2_500,
          journalWriteFailure: () => failure,
        }),
      ),
    );
    expect(g.mp_proxy_redis_data_lost).toBe(1);
    // Seconds, counted from the first failure, whether or not past the stall bound.
    expect(g.mp_proxy_redis_unanswered_seconds).toBe(1.5);
    expect(g.mp_proxy_outbox_stalled_seconds).toBe(2.5);
    expect(g.mp_proxy_journal_write_failing_seconds).toBeGreaterThanOrEqual(3);
    expect(g.mp_proxy_journal_write_failing_seconds).toBeLessThan(60);
    expect(await gauges(new FaultBoard(FAULTS, sources()))).toEqual({
      mp_proxy_redis_data_lost: 0,
      mp_proxy_redis_unanswered_seconds: 0,
      mp_proxy_outbox_stalled_seconds: 0,
      mp_proxy_redis_shards_without_replicas: 0,
      mp_proxy_journal_write_failing_seconds: 0,
    });
  });
});

// Issue 38: on a Redis Cluster a fault of one shard (its primary failing over, or left without
// replicas after) is that shard's accounts' alone: the replica stays ready for the others.
describe('faults of one Redis Cluster shard', () => {
  const ON_DEAD_SHARD = 'acct_dead';
  it("one shard's settlements stalled: its accounts are refused, the others served, the replica stays ready and says why", () => {
    const board = new FaultBoard(
      FAULTS,
      sources({
        settlementsFailingMs: (accountId) =>
          accountId === undefined || accountId === ON_DEAD_SHARD ? 6_000 : 0,
      }),
    );
    expect(board.readiness()).toEqual({ redisData: true, billing: true, journal: true });
    expect(board.reasons()).toEqual(['settlements have not reached Redis for 6000 ms']);
    expect(refusalOf(board.refusal(ON_DEAD_SHARD))).toEqual(refusalOf(billingUnavailable()));
    expect(board.refusal('acct_elsewhere')).toBeNull();
    expect(board.callRefusal()).toBeNull();
  });

  it('every shard stalled: the replica is unready and refuses every account', () => {
    const board = new FaultBoard(
      FAULTS,
      sources({ settlementsFailingMs: () => 6_000, settlementsStalledEverywhere: () => true }),
    );
    expect(board.readiness().billing).toBe(false);
    expect(refusalOf(board.refusal('acct_elsewhere'))).toEqual(refusalOf(billingUnavailable()));
  });

  it('a primary without replicas (REDIS_WAIT_REPLICAS unmet after a promotion) is named, counted and refuses nothing', async () => {
    const s = sources({
      shardsWithoutReplicas: () => [{ shard: '127.0.0.1:7002', since: Date.now() - 1_000, held: 12 }],
    });
    const board = new FaultBoard(FAULTS, s);
    expect(board.readiness()).toEqual({ redisData: true, billing: true, journal: true });
    expect(board.reasons()).toEqual([
      expect.stringMatching(
        /^Redis primaries without the replicas REDIS_WAIT_REPLICAS asks for \(degraded, still billing\): 127\.0\.0\.1:7002 for \d+ ms, 12 settlements kept in the journal$/,
      ),
    ]);
    expect(board.refusal(ON_DEAD_SHARD)).toBeNull();
    expect(board.refusal()).toBeNull();
    expect((await gauges(board)).mp_proxy_redis_shards_without_replicas).toBe(1);
  });
});
