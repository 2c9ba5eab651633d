import { describe, expect, it } from 'vitest';
import { batchLineAhead } from './batch-ahead.ts';

const usage = { keyId: 'k', model: 'M', kind: 'chat' as const };
const r = (seq: number) =>
  JSON.stringify({
    t: 'r',
    seq,
    accountId: 'a',
    leaseId: 'l',
    holdId: `h${seq}`,
    cost: 1,
    carved: 2,
    usage,
  });
const batch = { accountId: 'a', leaseId: 'l', batchId: '1', seqs: [2, 3] };
const b = JSON.stringify({ t: 'b', ...batch });
const ack = JSON.stringify({ t: 'a', s: [1] });
const text = (...lines: string[]) => Buffer.from(`${lines.join('\n')}\n`);
const linesOf = (buf: Buffer | null) => buf?.toString().split('\n').filter(Boolean) ?? null;

describe('a lease batch line moved ahead of its records (a full journal disk)', () => {
  it.each([
    {
      why: 'none of its records reached the file: its line goes before the first of them',
      lines: [r(1), ack, r(2), r(3), b],
      done: r(1).length + 1,
      want: [r(1), ack, b, r(2), r(3)],
    },
    {
      why: 'other lines between its records keep their order',
      lines: [r(2), r(4), r(3), b, ack],
      done: 0,
      want: [b, r(2), r(4), r(3), ack],
    },
    {
      why: 'a record line is (partly) in the file already: the batch waits for the disk',
      lines: [r(1), r(2), r(3), b],
      done: r(1).length + 5,
      want: null,
    },
    {
      why: 'a record line was written before this failure: not among these lines, the batch waits',
      lines: [r(3), b],
      done: 0,
      want: null,
    },
  ])('$why', ({ lines, done, want }) => {
    expect(linesOf(batchLineAhead(text(...lines), done, batch))).toEqual(want);
  });
});
