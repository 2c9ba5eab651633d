// A batch line's charge (docs/batches.md "Billing"): covered by its batch's hold, it holds and
// settles nothing in Redis; it runs the call within the line's budget and hands the usage back.
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../core/errors.ts';
import type { Principal } from '../auth/key-cache.ts';
import { Cancel } from '../engine/cancel.ts';
import { BatchLineCharge, type LineTicket } from './batch-line-charge.ts';
import { BatchMoney } from './batch-money.ts';
import { CallCharge, type Charge, type Quote } from './charge.ts';

/** A text quote: 10 nano of prompt, 1 nano per output token, up to `full` tokens. */
const quote = (full: number): Quote => ({
  min: 10,
  max: 10 + full,
  full,
  allowance: (held) => Math.max(0, held - 10),
});
const call = () => ({
  principal: { accountId: 'acct', keyId: 'key' } as Principal,
  model: 'm',
  kind: 'chat' as const,
  requestId: 'req',
  cancel: new Cancel(),
});
const ticket = (budget: number): LineTicket => ({ budget, usage: null, cancel: null, preempted: false });
const run = { run: async (allowance: number) => allowance, discard: () => {} };
/** Billing's batch door, without Redis: openLine touches none. */
const door = new BatchMoney({ redis: null as never, reclaim: null, charged: () => {} });

describe('a batch line charge', () => {
  it('is a charge of its own, not a kind of the interactive CallCharge', () => {
    const c = door.openLine(call(), quote(5), ticket(100));
    expect(c).toBeInstanceOf(BatchLineCharge);
    expect(c).not.toBeInstanceOf(CallCharge);
  });

  it('runs the call with its whole allowance within the budget, lowered to the budget beyond it', async () => {
    const t = ticket(100);
    const c = door.openLine(call(), quote(50), t);
    expect(await c.hold(run)).toBe(50);
    expect([c.allowance, c.covered, t.cancel !== null]).toEqual([50, true, true]);
    expect(await door.openLine(call(), quote(500), ticket(100)).hold(run)).toBe(90);
  });

  it('refuses a call larger than the batch estimated, and a preempted line with model_overloaded', async () => {
    await expect(door.openLine(call(), quote(5), ticket(9)).hold(run)).rejects.toThrow(
      /larger than the batch/,
    );
    const t = ticket(100);
    t.preempted = true;
    const err = await door
      .openLine(call(), quote(5), t)
      .hold(run)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe('model_overloaded');
  });

  it('settling hands the usage to the runner and delivers at once; it never charges at once', async () => {
    const t = ticket(100);
    const c = door.openLine(call(), quote(5), t);
    let delivered = false;
    c.settle(123, { inputTokens: 3, outputTokens: 4 }, () => {
      delivered = true;
    });
    expect(delivered).toBe(true);
    expect(t.usage).toEqual({ inputTokens: 3, outputTokens: 4 });
    const asCharge: Charge = c;
    expect(() => asCharge.chargeNow({} as never)).toThrow(/never charged at once/);
  });
});
