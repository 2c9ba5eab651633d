import { describe, expect, it } from 'vitest';
import { EngineBody } from './body.ts';

function body() {
  const calls: string[] = [];
  const b = new EngineBody({
    pause: () => calls.push('pause'),
    resume: () => calls.push('resume'),
    abort: () => calls.push('abort'),
  });
  return { b, calls };
}

describe('EngineBody.readable', () => {
  it('gives every chunk in order, queued ones first, and ends', async () => {
    const { b } = body();
    b.push(Buffer.from('one '));
    const r = b.readable();
    b.push(Buffer.from('two '));
    b.push(Buffer.from('three'));
    b.finish();
    const chunks: Buffer[] = [];
    for await (const c of r) chunks.push(c as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe('one two three');
  });

  it('pauses the engine while its buffer is full and resumes it when read', async () => {
    const { b, calls } = body();
    const r = b.readable();
    for (let i = 0; i < 3; i++) b.push(Buffer.alloc(600 * 1024, i));
    expect(calls).toEqual(['pause']);
    const reader = r[Symbol.asyncIterator]();
    let total = 0;
    while (total < 3 * 600 * 1024) total += ((await reader.next()).value as Buffer).length;
    expect(calls).toEqual(['pause', 'resume']);
    b.finish();
    expect((await reader.next()).done).toBe(true);
    expect(total).toBe(3 * 600 * 1024);
  });

  it('fails the Readable when the engine body fails', async () => {
    const { b } = body();
    const r = b.readable();
    b.fail(new Error('engine went away'));
    await expect(async () => {
      for await (const _ of r);
    }).rejects.toThrow('engine went away');
  });
});
