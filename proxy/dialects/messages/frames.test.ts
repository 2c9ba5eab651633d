// The Messages stream read through the shared frame reader (../../engine/frames/delta-frame.ts) gives the
// client the same bytes and bills the same usage (input, cached, output tokens) as parsing every
// frame: over every stream of test/proxy/engine-streams.ts (every recorded engine stream — vLLM
// 0.32, llama.cpp — the simulator's, run, and text with escapes and split surrogate pairs), with
// its fields in other orders, whole and cut midway. The usage is the relay's own accounting
// (../../engine/frames/stream-usage.ts), fed as the relay feeds it.
import { describe, expect, it } from 'vitest';
import {
  block,
  parsed,
  recorded,
  reversed,
  STREAMS,
  simulatorStreams,
} from '../../../test/proxy/engine-streams.ts';
import { REAL_FRAMES } from '../../engine/frames/real-frames.fixture.ts';
import { StreamUsage } from '../../engine/frames/stream-usage.ts';
import type { TextUsage } from '../../usage.ts';
import { MessagesStream, MessagesTranslator } from './stream.ts';

const ALL = [...STREAMS, ...(await simulatorStreams())];
const PROMPT_BYTES = 4000; // the estimate's input for a stream whose engine reports no usage

/**
 * One stream as the relay runs it: the first frame parsed (for usage and an error frame), each
 * frame read fast where the translator takes it (`fast`) else parsed, an error frame ending it (a
 * stream cut before [DONE] is billed by the same rule). The client's bytes and the usage billed.
 */
function relayed(frames: Buffer[], fast: boolean): { bytes: string; usage: TextUsage; fastFrames: number } {
  const tr = new MessagesTranslator(new MessagesStream({ id: 'msg_1', model: 'm', stopSequences: ['END'] }));
  const usage = new StreamUsage(parsed(frames[0]!));
  const out: Buffer[] = [Buffer.from(tr.head(usage.head))];
  let fastFrames = 0;
  for (const b of frames) {
    const f = fast ? tr.fast(b, out) : undefined;
    if (f !== undefined) {
      usage.read(b, f);
      fastFrames++;
      continue;
    }
    const chunk = parsed(b);
    if (chunk.error !== undefined) break;
    usage.parsed(chunk);
    tr.chunk(chunk, out);
  }
  const billed = usage.ended(PROMPT_BYTES);
  out.push(tr.end(billed, { cost: '0', currency: 'USD' }));
  return { bytes: Buffer.concat(out).toString(), usage: billed, fastFrames };
}

function expectBothWaysSame(frames: Buffer[]): number {
  const fast = relayed(frames, true);
  const slow = relayed(frames, false);
  expect(fast.bytes).toBe(slow.bytes);
  expect(fast.usage).toEqual(slow.usage);
  return fast.fastFrames;
}

describe('Messages stream frames read from their bytes', () => {
  it('the recorded engine streams and the simulator streams are all here', () => {
    expect(recorded.length).toBeGreaterThanOrEqual(10);
    const sim = ALL.filter(([n]) => n.startsWith('simulator'));
    expect(sim.length).toBeGreaterThanOrEqual(7);
    for (const [, frames] of sim) expect(frames.length).toBeGreaterThanOrEqual(2);
  });

  it.each(ALL)('MSG-7 %s: the same bytes and usage as parsing every frame, whole or cut', (_name, chunks) => {
    for (const variant of [chunks, chunks.map(reversed)]) {
      const frames = variant.map(block);
      const fastFrames = expectBothWaysSame(frames);
      // (vLLM's refusal stream is one error frame: none is read fast.)
      if (variant.every((c) => c.error !== undefined)) expect(fastFrames).toBe(0);
      else expect(fastFrames).toBeGreaterThan(0);
      for (let n = 1; n < frames.length; n++) expectBothWaysSame(frames.slice(0, n));
    }
  });

  it("every frame of vLLM's and the simulator's text streams is read from its bytes (none parsed)", () => {
    const texts = [
      ...STREAMS.slice(0, 5),
      ...recorded.filter(([n]) => n === 'vllm-0.32/chat-stream-continuous-usage.json'),
      ...ALL.filter(([n]) => /^simulator: (continuous|final|no usage|cut)/.test(n)),
    ];
    expect(texts.length).toBe(10);
    for (const [, chunks] of texts) {
      const frames = chunks.map(block);
      expect(relayed(frames, true).fastFrames).toBe(frames.length);
    }
  });

  it("MSG-7 a stop string vLLM reports on its finishing frame (read fast) is the client's stop_sequence", () => {
    const [, chunks] = ALL.find(([n]) => n.includes('stop string'))!;
    const fast = relayed(chunks.map(block), true);
    expect(fast.fastFrames).toBe(chunks.length);
    expect(fast.bytes).toContain('"stop_reason":"stop_sequence","stop_sequence":"END"');
  });

  // llama.cpp with timings_per_token: `timings.cache_n` on every frame, usage only on the last.
  it('BILL-1 a cut llama.cpp stream with timings on its text frames bills the same cached tokens both ways', () => {
    const timed = (text: string, cacheN: number) =>
      block(
        REAL_FRAMES.llamacppContentTimings
          .replace('" there"', JSON.stringify(text))
          .replace('"cache_n":1792', `"cache_n":${cacheN}`),
      );
    const frames = [block(REAL_FRAMES.llamacppFirst), timed('Hi', 7), timed(' there', 7), timed('!', 7)];
    const fast = relayed(frames, true);
    const slow = relayed(frames, false);
    expect(slow.usage.cachedTokens).toBe(7);
    expect(fast.usage).toEqual(slow.usage);
    expect(fast.bytes).toBe(slow.bytes);
    // the text frames were read from their bytes
    expect(fast.fastFrames).toBeGreaterThanOrEqual(3);
  });

  it('a finishing frame whose stop_reason is not JSON is declined (the parse way refuses it)', () => {
    const tr = new MessagesTranslator(
      new MessagesStream({ id: 'msg_1', model: 'm', stopSequences: ['END'] }),
    );
    const out: Buffer[] = [];
    const b = block(
      '{"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop","stop_reason":tru}]}',
    );
    expect(tr.fast(b, out)).toBeUndefined();
    expect(out).toEqual([]);
    expect(() => parsed(b)).toThrow();
  });

  it('a repeated stop_reason counts last, as for JSON.parse', () => {
    const raw = (stop: string) =>
      block(
        `{"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop","stop_reason":"END",${stop}}]}`,
      );
    for (const stop of ['"stop_reason":null', '"stop_reason":"END"', '"stop_reason":7']) {
      const frames = [block(REAL_FRAMES.vllmFirst), raw(stop)];
      expect(relayed(frames, true).fastFrames).toBe(2);
      expectBothWaysSame(frames);
    }
  });
});
