import { describe, expect, it } from 'vitest';
import { EngineBody } from './body.ts';
import { EngineEvents } from './events.ts';
import type { SseEvent } from './sse.ts';

/** An EngineBody fed by hand, recording what its consumer asked of the engine. */
function fakeEngine() {
  const log: string[] = [];
  const body = new EngineBody({
    pause: () => log.push('pause'),
    resume: () => log.push('resume'),
    abort: (r) => log.push(`abort:${r.message}`),
  });
  return { body, log };
}

describe('EngineBody', () => {
  it('replays chunks that came before the consumer, then live ones, then the end', async () => {
    const { body } = fakeEngine();
    body.push(Buffer.from('{"a":'));
    const text = body.text();
    body.push(Buffer.from('1}'));
    body.finish();
    expect(await text).toBe('{"a":1}');
  });

  it('a failure after the head reaches the consumer; destroy aborts the engine once', async () => {
    const { body, log } = fakeEngine();
    const text = body.text();
    body.destroy(new Error('gone'));
    body.destroy(new Error('again'));
    await expect(text).rejects.toThrow('gone');
    expect(log).toEqual(['abort:gone']);
  });

  it('a sink returning false pauses the engine; resume resumes it once', () => {
    const { body, log } = fakeEngine();
    body.consume({ data: () => false, end: () => {}, error: () => {} });
    body.push(Buffer.from('x'));
    body.push(Buffer.from('y'));
    body.resume();
    body.resume();
    expect(log).toEqual(['pause', 'resume']);
  });
});

describe('EngineEvents', () => {
  it('next() takes one event; the rest of the same read stay queued for the listener', async () => {
    const { body, log } = fakeEngine();
    const events = new EngineEvents(body);
    const first = events.next();
    body.push(Buffer.from('data: 1\n\ndata: 2\n\ndata: 3\n\n'));
    expect((await first)?.data).toBe('1');
    body.push(Buffer.from('data: 4\n\n')); // nobody listening: queued, engine paused
    expect(log).toEqual(['pause']);
    const seen: string[] = [];
    let batches = 0;
    let ended = false;
    events.listen({
      event: (ev: SseEvent) => seen.push(ev.data),
      batchEnd: () => batches++,
      end: () => {
        ended = true;
      },
      error: () => {},
    });
    expect(log).toEqual(['pause', 'resume']);
    expect(seen).toEqual(['2', '3', '4']);
    body.push(Buffer.from('data: 5\n\ndata: [DONE]\n\n'));
    body.finish();
    expect(seen).toEqual(['2', '3', '4', '5', '[DONE]']);
    expect(batches).toBe(2);
    expect(ended).toBe(true);
  });

  it('next() is null when the body ends first, and rejects when it fails', async () => {
    const a = fakeEngine();
    const ea = new EngineEvents(a.body);
    a.body.finish();
    expect(await ea.next()).toBeNull();
    const b = fakeEngine();
    const eb = new EngineEvents(b.body);
    const n = eb.next();
    b.body.fail(new Error('reset'));
    await expect(n).rejects.toThrow('reset');
  });

  it('a final event without its blank line is still delivered at the end', async () => {
    const { body } = fakeEngine();
    const events = new EngineEvents(body);
    body.push(Buffer.from('data: last'));
    body.finish();
    expect((await events.next())?.data).toBe('last');
  });

  it('a listener that pauses while queued events are replayed stays paused', async () => {
    const { body, log } = fakeEngine();
    const events = new EngineEvents(body);
    const first = events.next();
    body.push(Buffer.from('data: 1\n\ndata: 2\n\n'));
    await first;
    body.push(Buffer.from('data: 3\n\n'));
    events.listen({ event: () => events.pause(), end: () => {}, error: () => {} });
    expect(log).toEqual(['pause', 'resume', 'pause']);
  });
});

describe('EngineBody replay', () => {
  it('a chunk pushed while queued chunks are replayed is delivered after them, in order', () => {
    const { body } = fakeEngine();
    body.push(Buffer.from('a'));
    body.push(Buffer.from('b'));
    const seen: string[] = [];
    body.consume({
      data: (c) => {
        seen.push(c.toString());
        if (c.toString() === 'a') body.push(Buffer.from('c')); // the engine delivers mid-replay
        return true;
      },
      end: () => seen.push('end'),
      error: () => {},
    });
    body.finish();
    expect(seen).toEqual(['a', 'b', 'c', 'end']);
  });
});
