// The scaler's decision with a clock of numbers: no cluster, no Redis (operator/autoscale/decide.ts).
import { describe, expect, it } from 'vitest';
import { type AutoscalePolicy, decideReplicas, freshMemory, type ScaleMemory } from './decide.ts';

const policy: AutoscalePolicy = {
  min: 0,
  max: 5,
  targetInFlight: 4,
  scaleDownDelayMs: 30_000,
  windowMs: 60_000,
  idleMs: 120_000,
};
const demand = (inFlight: number, queued = 0, held = 0) => ({ inFlight, queued, held });

/** Runs samples every `stepMs` from t=0 with a given demand, feeding each decision's replicas back. */
function run(
  steps: { demand: ReturnType<typeof demand>; engine?: Parameters<typeof decideReplicas>[1]['engine'] }[],
  o: { current?: number; stepMs?: number; p?: AutoscalePolicy; memory?: ScaleMemory } = {},
) {
  let current = o.current ?? 0;
  let memory = o.memory ?? freshMemory(0);
  const out: { t: number; desired: number; reason: string }[] = [];
  steps.forEach((step, i) => {
    const t = i * (o.stepMs ?? 10_000);
    const d = decideReplicas(
      o.p ?? policy,
      { now: t, current, demand: step.demand, engine: step.engine ?? null },
      memory,
    );
    memory = d.memory;
    current = d.desired;
    out.push({ t, desired: d.desired, reason: d.reason });
  });
  return out;
}
const repeat = <T>(n: number, x: T): T[] => Array.from({ length: n }, () => x);

describe('the scaler decision', () => {
  it('desired = ceil(demand / targetInFlight), clamped to maxReplicas, up at once', () => {
    const r = run(
      [{ demand: demand(1) }, { demand: demand(9) }, { demand: demand(12, 3) }, { demand: demand(100) }],
      {
        current: 1,
      },
    );
    expect(r.map((x) => x.desired)).toEqual([1, 3, 4, 5]);
    expect(r[1]!.reason).toBe('ScaledUp');
  });

  it('one held request wakes a model at zero; two proxies holding one each still make one replica', () => {
    const one = run([{ demand: demand(0, 0, 1) }]);
    expect(one[0]).toMatchObject({ desired: 1, reason: 'WokenByHeldRequest' });
    // The proxies' counts are summed before the decision: held 2 over two proxies is still ≤ target.
    const two = run([{ demand: demand(0, 0, 2) }, { demand: demand(0, 0, 2) }]);
    expect(two.map((x) => x.desired)).toEqual([1, 1]);
  });

  it('scales down only after scaleDownDelay and to the highest want of the window', () => {
    // Up to 4 at t=0, then demand for 1 replica: held at 4 until a window of lower wants has passed.
    const r = run([{ demand: demand(16) }, ...repeat(10, { demand: demand(2) })], {
      memory: freshMemory(-60_000),
    });
    expect(r[0]!.desired).toBe(4);
    // 10 s and 20 s after the scale-up: within the 30 s delay.
    expect(r[1]).toMatchObject({ desired: 4, reason: 'HoldingScaleDown' });
    expect(r[2]).toMatchObject({ desired: 4, reason: 'HoldingScaleDown' });
    // Past the delay but the t=0 want of 4 is still in the 60 s window until t=60 s.
    expect(r[5]).toMatchObject({ desired: 4, reason: 'HoldingScaleDown' });
    expect(r[6]).toMatchObject({ desired: 1, reason: 'ScaledDown' });
  });

  it('a bursty load does not flap: one spike per window keeps the replicas', () => {
    const spiky = repeat(4, [{ demand: demand(12) }, ...repeat(4, { demand: demand(1) })]).flat();
    const r = run(spiky, { current: 3, memory: freshMemory(-60_000) });
    expect(new Set(r.map((x) => x.desired))).toEqual(new Set([3]));
  });

  it('goes to zero only after the idle period with no demand at all, and never below minReplicas', () => {
    const r = run([{ demand: demand(1) }, ...repeat(20, { demand: demand(0) })], {
      current: 1,
      memory: freshMemory(-60_000),
    });
    // Demand last seen at t=0; idle 120 s reached at t=120 s; the last want of 1 (t=110 s) leaves the
    // 60 s window at t=170 s.
    expect(r.findIndex((x) => x.desired === 0) * 10_000).toBe(170_000);
    expect(r.find((x) => x.desired === 0)!.reason).toBe('ScaledToZero');
    const kept = run(repeat(30, { demand: demand(0) }), { current: 2, p: { ...policy, min: 1 } });
    expect(kept.at(-1)!.desired).toBe(1);
  });

  it('a model asleep stays asleep with no demand, on a new leader too', () => {
    expect(run(repeat(5, { demand: demand(0) }), { current: 0 }).map((x) => x.desired)).toEqual([
      0, 0, 0, 0, 0,
    ]);
  });

  it('a new leader watches a whole window before scaling down (its memory starts empty)', () => {
    const r = run(repeat(8, { demand: demand(1) }), { current: 4 });
    expect(r.slice(0, 6).every((x) => x.desired === 4)).toBe(true);
    expect(r[6]!.desired).toBe(1);
  });

  it("engines' own signals: every replica saturated (waiting ≥ 5 each, or KV cache ≥ 0.8) adds one", () => {
    const waiting = { replicas: 2, waiting: 10, running: 16, kvCacheUsage: 0.3 };
    expect(run([{ demand: demand(8), engine: waiting }], { current: 2 })[0]!.desired).toBe(3);
    const kv = { replicas: 2, waiting: 0, running: 16, kvCacheUsage: 0.85 };
    expect(run([{ demand: demand(8), engine: kv }], { current: 2 })[0]!.desired).toBe(3);
    const calm = { replicas: 2, waiting: 4, running: 8, kvCacheUsage: 0.5 };
    expect(run([{ demand: demand(8), engine: calm }], { current: 2 })[0]!.desired).toBe(2);
  });
});
