// CallCharge against fake deps (no Redis): the rules its opening comment states, each pinned where
// it is decided — which way a call is held (lease carve, reserve first, reserve alongside), the
// allowance a short hold leaves, refusals (the balance's 429, the key limit's 429 naming it), a
// hold given back whenever the call fails or ends unbilled, and settle-then-deliver: the answer's
// last bytes wait for the settlement to be in the journal.
import { describe, expect, it } from 'vitest';
import type { KeySpend, Metering, ReserveResult } from '../../core/billing/index.ts';
import { ApiError } from '../../core/errors.ts';
import type { Principal } from '../auth/key-cache.ts';
import { Cancel } from '../engine/cancel.ts';
import type { BalanceView } from './balance-view.ts';
import { CallCharge, type ChargeDeps, type Quote, ReservationShortError } from './charge.ts';
import type { HoldRenewer } from './hold-renewer.ts';
import type { LeaseReclaim } from './lease-reclaim.ts';
import type { CreditLeases } from './leases.ts';
import type { Outbox } from './outbox.ts';
import { SlotLines } from './slot-lines.ts';

/** Text-like: min 100 (the prompt), max 1100 buys 10 output tokens; each 100 held past min buys 1. */
const QUOTE: Quote = { min: 100, max: 1100, full: 10, allowance: (held) => Math.floor((held - 100) / 100) };

const voided = { holds: 0, leases: 0 };

interface Fake {
  deps: ChargeDeps;
  /** Everything the fake deps were asked, in order. */
  log: string[];
  /** The reserve answers still to give (one per reserve), as the script would. */
  reserves: (ReserveResult | Error | Promise<ReserveResult>)[];
  /** The outbox's journal write: deliveries waiting for it. */
  journal: (() => void)[];
  finished: CallCharge[];
  carve: boolean;
  alongside: boolean;
}

function fake(o: { leases?: boolean; reclaim?: boolean } = {}): Fake {
  const f: Fake = {
    log: [],
    reserves: [],
    journal: [],
    finished: [],
    carve: false,
    alongside: false,
    deps: undefined as unknown as ChargeDeps,
  };
  const metering = {
    reserve: async (a: { holdId: string; min: number; max: number; keyId?: string | null }) => {
      f.log.push(`reserve ${a.holdId} ${a.min}..${a.max} key=${a.keyId}`);
      const r = f.reserves.shift();
      if (r === undefined) throw new Error('unexpected reserve');
      if (r instanceof Error) throw r;
      return r;
    },
    release: async (accountId: string, holdId: string) => {
      f.log.push(`release ${accountId} ${holdId}`);
      return 0;
    },
    charge: async () => {
      f.log.push('charge');
      return { ok: true, charged: 500, balance: 0, duplicate: false, keyLimit: null };
    },
  } as unknown as Metering;
  const leases = {
    leaseId: 'lease-1',
    tryCarve: (_a: string, max: number) => {
      f.log.push(`carve ${max}`);
      return f.carve;
    },
    settle: (_a: string, s: { cost: number; carved: number }) => {
      f.log.push(`lease settle ${s.cost} of ${s.carved}`);
      return 1;
    },
    uncarve: (_a: string, held: number) => f.log.push(`uncarve ${held}`),
  } as unknown as CreditLeases;
  const outbox = {
    recordHold: (s: { holdId: string; cost: number; carved: number }) => ({ ...s, seq: 2 }),
    sendHold: async (s: { holdId: string; cost: number; carved: number }) => {
      f.log.push(`settle ${s.holdId} ${s.cost} of ${s.carved}`);
      return { charged: s.cost, balance: 5000, duplicate: false, short: 0 };
    },
    afterJournaled: (deliver: () => void) => f.journal.push(deliver),
  } as unknown as Outbox;
  f.deps = {
    metering,
    leases: o.leases === false ? null : leases,
    outbox,
    renewer: {
      track: (_a: string, id: string) => f.log.push(`renew ${id}`),
      forget: (_a: string, id: string) => f.log.push(`forget ${id}`),
    } as unknown as HoldRenewer,
    reclaim:
      o.reclaim === false
        ? null
        : ({ reclaim: async () => void f.log.push('reclaim') } as unknown as LeaseReclaim),
    balances: { set: () => {} } as unknown as BalanceView,
    holdTtlMs: 60_000,
    slots: new SlotLines(),
    mayReserveAlongside: () => f.alongside,
    observe: (_c, _counts, charged, short) => f.log.push(`observed ${charged} short ${short}`),
    observeVoids: () => {},
    finished: (c) => f.finished.push(c),
    onError: (err, what) => f.log.push(`error ${what}: ${String(err)}`),
  };
  return f;
}

function principal(spendLimit: number | null = null): Principal {
  return { accountId: 'acct', keyId: 'key', secretHash: 'h', currency: 'USD', grants: new Set(), spendLimit };
}

function charge(f: Fake, o: { spendLimit?: number | null; cancel?: Cancel } = {}): CallCharge {
  return new CallCharge(
    f.deps,
    {
      principal: principal(o.spendLimit ?? null),
      model: 'm',
      kind: 'chat',
      requestId: 'req_1',
      cancel: o.cancel ?? new Cancel(),
    },
    QUOTE,
  );
}

const held = (n: number, keyLimit: KeySpend | null = null): ReserveResult => ({
  ok: true,
  held: n,
  available: 10_000,
  voided,
  keyLimit,
  windows: null,
});
const refused = (keyLimit: KeySpend | null = null): ReserveResult => ({
  ok: false,
  available: 50,
  voided,
  keyLimit,
  rateLimit: null,
});

/** A run that records the allowance and cancel it was given and answers `answer`. */
function runs(answer: (allowance: number, cancel: Cancel) => Promise<string> = async (a) => `ran ${a}`) {
  const calls: { allowance: number; cancel: Cancel }[] = [];
  const discarded: string[] = [];
  return {
    calls,
    discarded,
    run: (allowance: number, cancel: Cancel) => {
      calls.push({ allowance, cancel });
      return answer(allowance, cancel);
    },
    discard: (r: string) => discarded.push(r),
  };
}

describe('CallCharge: how a call is held', () => {
  it('a lease that can carve the worst case: no Redis before the call, the full allowance', async () => {
    const f = fake();
    f.carve = true;
    const c = charge(f);
    const r = runs();
    expect(await c.hold(r)).toBe('ran 10');
    expect(c.allowance).toBe(10);
    expect(c.covered).toBe(true);
    expect(f.log).toEqual(['carve 1100']);
  });

  it('near the limit it reserves first, and a short hold lowers the allowance to what it pays for', async () => {
    const f = fake({ reclaim: false });
    f.reserves.push(held(600));
    const c = charge(f);
    const r = runs();
    expect(await c.hold(r)).toBe('ran 5');
    expect(r.calls.map((x) => x.allowance)).toEqual([5]);
    expect(f.log).toEqual(['carve 1100', 'reserve req_1 100..1100 key=key', 'renew req_1']);
  });

  it('a short reserve first has the leases give back their money, then reserves once more', async () => {
    const f = fake();
    f.reserves.push(held(300), held(1100));
    const r = runs();
    expect(await charge(f).hold(r)).toBe('ran 10');
    expect(f.log).toEqual([
      'carve 1100',
      'reserve req_1 100..1100 key=key',
      'renew req_1',
      'forget req_1',
      'release acct req_1',
      'reclaim',
      'reserve req_1 100..1100 key=key',
      'renew req_1',
    ]);
  });

  it('not even the prompt covered: 429 insufficient_quota, the engine never called, nothing held after', async () => {
    const f = fake({ reclaim: false });
    f.reserves.push(refused());
    const c = charge(f);
    const r = runs();
    const err = await c.hold(r).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe('insufficient_quota');
    expect(r.calls).toEqual([]);
    expect(f.finished).toEqual([c]);
  });

  it('a hold that buys no output at all is refused too (output is billed; the call is not worth making)', async () => {
    const f = fake({ reclaim: false });
    f.reserves.push(held(150)); // past min, but not one output token
    const c = charge(f);
    const r = runs();
    await expect(c.hold(r)).rejects.toMatchObject({ code: 'insufficient_quota' });
    expect(r.calls).toEqual([]);
    expect(f.log).toContain('release acct req_1');
  });

  it('a key with a spend limit always reserves first (never a lease), and its refusal names the limit', async () => {
    const f = fake();
    f.carve = true;
    f.reserves.push(
      refused({
        limit: 2_000_000_000,
        spent: 2_000_000_000,
        held: 0,
        window: 'month',
        resetsAt: Date.UTC(2026, 0, 1),
      }),
    );
    const err = (await charge(f, { spendLimit: 2_000_000_000 })
      .hold(runs())
      .catch((e: unknown) => e)) as ApiError;
    expect(err.code).toBe('insufficient_quota');
    expect(err.message).toContain("API key's monthly spend limit of 2");
    // No carve tried, and no lease reclaimed for a refusal the key's limit made.
    expect(f.log).toEqual(['reserve req_1 100..1100 key=key']);
  });

  it('far above the hold it reserves alongside the call: the engine call starts before the reserve answers', async () => {
    const f = fake();
    f.alongside = true;
    let answer!: (r: ReserveResult) => void;
    f.reserves.push(new Promise((res) => (answer = res)));
    const c = charge(f);
    const r = runs();
    const result = c.hold(r);
    await Promise.resolve();
    expect(r.calls.map((x) => x.allowance)).toEqual([10]);
    expect(c.covered).toBe(false); // the reservation is still on its way: nothing committed yet
    answer(held(1100));
    expect(await result).toBe('ran 10');
    expect(c.covered).toBe(true);
  });

  it('a reserve alongside that comes back short cancels the first engine call, discards it, and runs again lowered', async () => {
    const f = fake({ reclaim: false });
    f.alongside = true;
    f.reserves.push(held(400));
    const c = charge(f);
    const r = runs();
    expect(await c.hold(r)).toBe('ran 3');
    expect(r.calls.map((x) => x.allowance)).toEqual([10, 3]);
    expect(r.calls[0]!.cancel.reason).toBeInstanceOf(ReservationShortError);
    expect(r.calls[1]!.cancel.aborted).toBe(false);
    expect(r.discarded).toEqual(['ran 10']);
  });

  it('the request cancelled (the client left) stops the engine call made alongside too', async () => {
    const f = fake();
    f.alongside = true;
    f.reserves.push(held(1100));
    const cancel = new Cancel();
    const r = runs();
    await charge(f, { cancel }).hold(r);
    cancel.abort(new Error('client left'));
    expect(r.calls[0]!.cancel.aborted).toBe(true);
  });
});

describe('CallCharge: a failed or unbilled call holds nothing after', () => {
  it('the engine call failing gives the reserved hold back, once', async () => {
    const f = fake({ reclaim: false });
    f.reserves.push(held(1100));
    const c = charge(f);
    await expect(
      c.hold(
        runs(async () => {
          throw new Error('engine down');
        }),
      ),
    ).rejects.toThrow('engine down');
    expect(f.log.filter((l) => l.startsWith('release') || l.startsWith('forget'))).toEqual([
      'forget req_1',
      'release acct req_1',
    ]);
    c.release();
    expect(f.log.filter((l) => l.startsWith('release'))).toHaveLength(1);
    expect(f.finished).toEqual([c]);
  });

  it('a carved hold is uncarved, not released in Redis', async () => {
    const f = fake();
    f.carve = true;
    const c = charge(f);
    await c.hold(runs());
    c.release();
    expect(f.log).toEqual(['carve 1100', 'uncarve 1100']);
  });

  it('released while its reserve was on the way: the hold that reserve made is dropped at once', async () => {
    const f = fake({ reclaim: false });
    let answer!: (r: ReserveResult) => void;
    f.reserves.push(new Promise((res) => (answer = res)));
    const c = charge(f);
    const result = c.hold(runs()).catch((e: unknown) => e);
    await Promise.resolve();
    c.release(); // the call ended (shutdown, the client gone) before Redis answered
    answer(held(1100));
    expect(await result).toMatchObject({ code: 'insufficient_quota' });
    expect(f.log).toContain('release acct req_1');
    expect(f.log).not.toContain('renew req_1');
  });

  it('a reserve whose reply was lost releases whatever it may have made, and fails the call', async () => {
    const f = fake({ reclaim: false });
    f.reserves.push(new Error('connection lost'));
    await expect(charge(f).hold(runs())).rejects.toThrow('connection lost');
    expect(f.log).toContain('release acct req_1');
  });
});

describe('CallCharge: settle, then deliver', () => {
  it('the settlement is made before the answer, and the answer waits for the journal', async () => {
    const f = fake({ reclaim: false });
    f.reserves.push(held(1100));
    const c = charge(f);
    await c.hold(runs());
    const delivered: string[] = [];
    c.settle(700, { inputTokens: 3, outputTokens: 6 }, () => delivered.push('answer'));
    expect(f.log).toContain('settle req_1 700 of 1100');
    expect(delivered).toEqual([]); // not journaled yet
    expect(f.finished).toEqual([]); // still running until its answer is out (shutdown waits)
    f.journal.shift()!();
    expect(delivered).toEqual(['answer']);
    expect(f.finished).toEqual([c]);
    await Promise.resolve();
    expect(f.log).toContain('observed 700 short 0');
  });

  it('the true cost is settled even past the hold (never capped), and a leased call settles through its lease', async () => {
    const f = fake();
    f.carve = true;
    const c = charge(f);
    await c.hold(runs());
    c.settle(1500, { outputTokens: 12 });
    expect(f.log).toContain('lease settle 1500 of 1100');
  });

  it('settled once: a release after settling gives nothing back, a second settle charges nothing', async () => {
    const f = fake({ reclaim: false });
    f.reserves.push(held(1100));
    const c = charge(f);
    await c.hold(runs());
    c.settle(700, { outputTokens: 6 });
    c.release();
    c.settle(700, { outputTokens: 6 });
    expect(f.log.filter((l) => l.startsWith('settle') || l.startsWith('release'))).toEqual([
      'settle req_1 700 of 1100',
    ]);
  });

  it('a delivery that throws still marks the call finished', async () => {
    const f = fake();
    f.carve = true;
    const c = charge(f);
    await c.hold(runs());
    c.settle(10, {}, () => {
      throw new Error('socket gone');
    });
    expect(() => f.journal.shift()!()).toThrow('socket gone');
    expect(f.finished).toEqual([c]);
  });

  it('a charge made at once (a video job) is made once, and never after a hold', async () => {
    const f = fake();
    const c = charge(f);
    const args = { accountId: 'acct', chargeId: 'v', cost: 500, usage: { videoSeconds: 4 } } as Parameters<
      CallCharge['chargeNow']
    >[0];
    expect((await c.chargeNow(args)).ok).toBe(true);
    expect(f.log).toEqual(['charge', 'observed 500 short 0']);
    await expect(c.chargeNow(args)).rejects.toThrow('a charge is made once');
    expect(f.finished).toEqual([c]);
  });
});
