// The fair queue alone (no server): who gets a freed slot, who is dropped when the queue is full,
// the wait budget and a caller gone. Real timers, short budgets.
import { describe, expect, it } from 'vitest';
import { Cancel } from '../engine/cancel.ts';
import { DemandBoard } from './board.ts';
import { FairQueue } from './fair-queue.ts';

const limits = { perReplica: 1, maxQueued: 4, maxQueuedBytes: 1_000, maxWaitMs: 60_000 };

function setup(l = limits) {
  const board = new DemandBoard();
  const q = new FairQueue(board);
  const order: string[] = [];
  const admit = (account: string, tag: string, o: { bytes?: number; cancel?: Cancel } = {}) => {
    const p = q.admit(
      { model: 'M', endpoints: 1, limits: l, account, bytes: o.bytes ?? 10 },
      o.cancel ?? new Cancel(),
    );
    return p.then(
      (release) => {
        order.push(tag);
        return release;
      },
      (err: { code?: string }) => {
        order.push(`${tag}:${err.code ?? 'cancelled'}`);
        return null;
      },
    );
  };
  return { board, admit, order };
}
const tick = () => new Promise((r) => setTimeout(r, 0));

describe('the fair queue', () => {
  it('gives freed slots to the accounts in turn, whatever order they queued in', async () => {
    const { admit, order, board } = setup({ ...limits, maxQueued: 10 });
    const slots: (() => void)[] = [(await admit('flood', 'f0'))!];
    const waiting = [
      admit('flood', 'f1'),
      admit('flood', 'f2'),
      admit('flood', 'f3'),
      admit('calm', 'c1'),
      admit('calm', 'c2'),
    ];
    for (const w of waiting) void w.then((release) => release && slots.push(release));
    expect(board.get('M').queued).toBe(5);
    // One slot: each release lets exactly the next call in.
    for (let i = 0; i < 5; i++) {
      slots[i]!();
      await tick();
      await tick();
    }
    await Promise.all(waiting);
    expect(order).toEqual(['f0', 'f1', 'c1', 'f2', 'c2', 'f3']);
    expect(board.get('M').queued).toBe(0);
  });

  it('when full, a call of an account with few waiting replaces the newest call of the busiest', async () => {
    const { admit, order } = setup();
    await admit('flood', 'f0');
    for (const i of [1, 2, 3, 4]) void admit('flood', `f${i}`);
    // Full (4 waiting): another flood call is refused outright, a calm one takes f4's place.
    await admit('flood', 'f5');
    void admit('calm', 'c1');
    await tick();
    expect(order).toEqual(['f0', 'f5:model_overloaded', 'f4:model_overloaded']);
  });

  it('bounds the bytes waiting as well as the calls', async () => {
    const { admit, order } = setup({ ...limits, maxQueued: 100, maxQueuedBytes: 100 });
    await admit('a', 'a0');
    void admit('a', 'a1', { bytes: 80 });
    await admit('a', 'a2', { bytes: 30 });
    expect(order).toEqual(['a0', 'a2:model_overloaded']);
  });

  it('a call past its wait budget is a 429, and one whose caller left is gone from the queue', async () => {
    const { admit, order, board } = setup({ ...limits, maxWaitMs: 50 });
    await admit('a', 'a0');
    const cancel = new Cancel();
    const left = admit('b', 'b1', { cancel });
    cancel.abort(new Error('client left'));
    await left;
    await admit('a', 'a1');
    expect(order).toEqual(['a0', 'b1:cancelled', 'a1:model_overloaded']);
    expect(board.get('M')).toEqual({ inFlight: 0, queued: 0, held: 0 });
  });
});
