// The Responses stream's frames read from their bytes (./delta-frame.ts) read exactly what the
// parse way reads, and a stream translated that way is byte for byte the stream translated by
// parsing every frame: over the streams of test/proxy/engine-streams.ts (every recorded engine
// stream, the simulator's, run; text with escapes, non-ASCII and split surrogate pairs) and the
// same frames with their fields in other orders. Every frame it cannot read with certainty is declined (and parsed).
import { describe, expect, it } from 'vitest';
import {
  block,
  type Chunk,
  parsed,
  recorded,
  reversed,
  STREAMS,
  simulatorStreams,
  textFrame,
  textStream,
  usage,
} from '../../../test/proxy/engine-streams.ts';
import { echoOf } from '../../dialects/responses/response.ts';
import { ResponsesStream, ResponsesTranslator } from '../../dialects/responses/stream.ts';
import type { ResponsesRequest } from '../../schemas/responses.ts';
import { type DeltaFrame, deltaFrame, FrameShape } from './delta-frame.ts';
import { REAL_FRAMES } from './real-frames.fixture.ts';
import { hasContent, usageIn } from './reported-usage.ts';

/** Those streams and the simulator's, run. */
const ALL = [...STREAMS, ...(await simulatorStreams())];

/** A stream translated with the fast way (where it takes a frame) or by parsing every frame. */
function translate(frames: Buffer[], fast: boolean): { bytes: string; fastFrames: number } {
  const echo = echoOf({ model: 'm', input: 'hi' } as ResponsesRequest, 'm', 16, new Map());
  echo.id = 'resp_1';
  echo.createdAt = 1; // both ways of one stream may straddle a second
  const tr = new ResponsesTranslator(new ResponsesStream(echo), () => {});
  const out: Buffer[] = [Buffer.from(tr.head())];
  let fastFrames = 0;
  for (const b of frames) {
    if (fast && tr.fast(b, out) !== undefined) fastFrames++;
    else tr.chunk(parsed(b), out);
  }
  out.push(tr.end({ inputTokens: 9, cachedTokens: 0, outputTokens: 4 }, { cost: '0', currency: 'USD' }));
  // Item ids are new per stream; completed_at may fall in the next second (created_at is fixed above).
  const bytes = Buffer.concat(out)
    .toString()
    .replace(/"(msg|rs|fc)_[^"]+"/g, '"$1_x"')
    .replace(/"completed_at":\d+/g, '"completed_at":1');
  return { bytes, fastFrames };
}

/** What the parse way (the relay and ./stream.ts chunk()) reads from a frame the fast way took. */
function expectSameReading(b: Buffer): void {
  const f = deltaFrame(b);
  if (f === undefined) return;
  const c = parsed(b);
  expect(c.error).toBeUndefined();
  const choice = (c.choices as { delta?: Chunk; finish_reason?: unknown }[])[0];
  const content = choice?.delta?.content;
  expect(f.text === null ? null : JSON.parse(f.text.toString())).toBe(
    typeof content === 'string' && content !== '' ? content : null,
  );
  expect(f.finish).toBe(choice?.finish_reason ?? null);
  const stop = (choice as { stop_reason?: unknown } | undefined)?.stop_reason ?? null;
  expect(f.stopAt === -1 ? null : JSON.parse(b.toString('utf8', f.stopAt, f.stopEnd))).toEqual(stop);
  expect(f.text !== null).toBe(hasContent(c));
  const u = c.usage;
  if (typeof u === 'object' && u !== null) expect(usageIn(b, f.usageAt)).toEqual(u);
  else expect(f.usageAt).toBe(-1);
  expect(f.cached).toBe((c.timings as { cache_n?: number } | undefined)?.cache_n ?? null);
  // Nothing else in the delta that the parse way would show.
  for (const k of Object.keys(choice?.delta ?? {}))
    if (k !== 'role' && k !== 'content') expect(choice!.delta![k]).toBeNull();
}

describe('Responses stream frames read from their bytes', () => {
  it('the recorded engine streams are all here', () => {
    expect(recorded.length).toBeGreaterThanOrEqual(10);
  });

  it.each(ALL)('%s: the same bytes as parsing every frame, fields in any order', (_name, chunks) => {
    for (const variant of [chunks, chunks.map(reversed)]) {
      const frames = variant.map(block);
      for (const b of frames) expectSameReading(b);
      const fast = translate(frames, true);
      expect(fast.bytes).toBe(translate(frames, false).bytes);
      // (vLLM's refusal stream is one error frame: the relay ends such a stream; none is read fast.)
      const errors = variant.filter((c) => c.error !== undefined).length;
      if (errors === variant.length) expect(fast.fastFrames).toBe(0);
      else expect(fast.fastFrames).toBeGreaterThan(0);
    }
  });

  it('every frame of a text stream is read from its bytes (none parsed)', () => {
    const frames = STREAMS.slice(0, 5).flatMap(([, c]) => c.map(block));
    for (const b of frames) expect(deltaFrame(b)).toBeDefined();
    const vllm = recorded.find(([n]) => n === 'vllm-0.32/chat-stream-continuous-usage.json')![1];
    for (const c of vllm) expect(deltaFrame(block(c))).toBeDefined();
  });

  it('the text of a delta is its JSON string as the engine wrote it, escapes and all', () => {
    const raw =
      '{"id":"c","model":"m","choices":[{"index":0,"delta":{"content":"\\u00fc\\/\\"x"},"finish_reason":null}]}';
    const f = deltaFrame(block(raw))!;
    expect(f.text!.toString()).toBe('"\\u00fc\\/\\"x"');
    expect(JSON.parse(f.text!.toString())).toBe('ü/"x');
  });

  const choice = (c: Chunk) => ({
    id: 'c',
    model: 'm',
    choices: [{ index: 0, finish_reason: null, ...c }],
    usage: usage(1),
  });
  it.each([
    ['reasoning', choice({ delta: { reasoning_content: 'hm' } })],
    ['reasoning beside content', choice({ delta: { content: 'x', reasoning: 'hm' } })],
    ['a tool call', choice({ delta: { tool_calls: [{ index: 0, id: 'c', function: { name: 'f' } }] } })],
    ['content that is not a string', choice({ delta: { content: 5 } })],
    ['a finish reason with an escape', choice({ delta: {}, finish_reason: 'st\u00f6p' })],
    ['a finish reason that is not a string', choice({ delta: {}, finish_reason: 1 })],
    ['a delta that is not an object', choice({ delta: 'x' })],
    [
      'two choices',
      {
        id: 'c',
        model: 'm',
        choices: [
          { index: 0, delta: {} },
          { index: 1, delta: {} },
        ],
      },
    ],
    ['choices that are not an array', { id: 'c', model: 'm', choices: null }],
    ['no choices at all', { id: 'c', model: 'm', usage: usage(1) }],
    ['usage that is not an object', { ...choice({ delta: {} }), usage: 3 }],
    ['an error frame', { error: { message: 'boom', code: 500 } }],
    ['an error beside choices', { ...choice({ delta: { content: 'x' } }), error: { message: 'boom' } }],
    ['JSON with spaces', '{"id":"c", "choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}]}'],
    [
      'an escaped key',
      '{"id":"c","ch\\u006fices":[],"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}]}',
    ],
    ['an escaped key in the delta', '{"choices":[{"delta":{"c\\u006fntent":"x"},"finish_reason":null}]}'],
    ['an unclosed frame', '{"id":"c","choices":[{"index":0,"delta":{"content":"x"}'],
    ['not an object', '[1]'],
  ])('declines %s', (_name, c) => {
    expect(deltaFrame(block(c))).toBeUndefined();
  });

  it('a repeated key counts last, as for JSON.parse', () => {
    const raw =
      '{"choices":[{"delta":{"content":"a"},"finish_reason":null}],"usage":{"prompt_tokens":1},"choices":[{"delta":{"content":"b","content":"c"},"finish_reason":"stop"}],"usage":null}';
    const f = deltaFrame(block(raw))!;
    expect(JSON.parse(f.text!.toString())).toBe('c');
    expect(f.finish).toBe('stop');
    expect(f.usageAt).toBe(-1);
    expectSameReading(block(raw));
  });

  describe("FrameShape: a stream's text frames read by their learnt shape", () => {
    const same = (a: DeltaFrame | undefined, b: DeltaFrame | undefined) =>
      expect(a && { ...a, text: a.text?.toString() ?? null }).toEqual(
        b && { ...b, text: b.text?.toString() ?? null },
      );

    it.each(ALL)('%s: a frame the shape reads reads as deltaFrame reads it', (_name, chunks) => {
      for (const variant of [chunks, chunks.map(reversed)]) {
        let shape: FrameShape | null = null;
        for (const b of variant.map(block)) {
          const byShape = shape?.read(b);
          const whole = deltaFrame(b);
          if (byShape !== undefined) same(byShape, whole);
          if (whole !== undefined) shape ??= FrameShape.learn(b, whole);
        }
      }
    });

    const vllm = (
      content: string,
      tail = ',"token_ids":null}],"usage":{"prompt_tokens":9,"completion_tokens":1}}',
    ) =>
      block(
        `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":${JSON.stringify(content)}},"logprobs":null,"finish_reason":null${tail}`,
      );
    const learnt = () => FrameShape.learn(vllm('a'), deltaFrame(vllm('a'))!)!;

    it('learnt from a text frame; later text frames read by it, their own text and usage', () => {
      const b = block(
        '{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"say \\"},\\"logprobs\\":null \\\\"},"logprobs":null,"finish_reason":null,"token_ids":null}],"usage":{"prompt_tokens":9,"completion_tokens":22,"prompt_tokens_details":{"cached_tokens":3}}}',
      );
      const f = learnt().read(b)!;
      expect(JSON.parse(f.text!.toString())).toBe('say "},"logprobs":null \\');
      expect(usageIn(b, f.usageAt)).toEqual({
        prompt_tokens: 9,
        completion_tokens: 22,
        prompt_tokens_details: { cached_tokens: 3 },
      });
      same(f, deltaFrame(b));
      expect(learnt().read(vllm(''))?.text).toBeNull(); // an empty delta: no text, as deltaFrame
    });

    it.each([
      [
        'the finishing frame',
        vllm('.', ',"token_ids":null}],"usage":{"prompt_tokens":9}}')
          .toString()
          .replace('"finish_reason":null', '"finish_reason":"stop"'),
      ],
      // the same length as the learnt frame's bytes, other bytes
      [
        'a finish reason as long as null',
        vllm('x').toString().replace('"finish_reason":null', '"finish_reason":"ok"'),
      ],
      ['token ids as long as null', vllm('x').toString().replace('"token_ids":null', '"token_ids":[12]')],
      ['logprobs', vllm('x').toString().replace('"logprobs":null', '"logprobs":{"content":[]}')],
      ['usage null', vllm('x', ',"token_ids":null}],"usage":null}').toString()],
      [
        'a key after the usage',
        vllm('x', ',"token_ids":null}],"usage":{"prompt_tokens":9},"error":{"message":"boom"}}').toString(),
      ],
      [
        'a usage object that does not close',
        vllm('x', ',"token_ids":null}],"usage":{"prompt_tokens":9}').toString(),
      ],
      ['another model', vllm('x').toString().replace('"model":"m"', '"model":"n"')],
      [
        'a content string that does not end',
        'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"abc\n\n',
      ],
    ])('not read by the shape: %s', (_name, text) => {
      const b = Buffer.from(text.replace(/^data: /, 'data: '));
      expect(learnt().read(b)).toBeUndefined();
    });

    it('not learnt from frames with timings, a repeated key, usage before the choices, or no text', () => {
      const tim = Buffer.from(`data: ${REAL_FRAMES.llamacppContentTimings}\n\n`);
      expect(FrameShape.learn(tim, deltaFrame(tim)!)).toBeNull();
      const twice = block(
        '{"choices":[{"delta":{"content":"a"},"finish_reason":null}],"choices":[{"delta":{"content":"b"},"finish_reason":null}]}',
      );
      expect(FrameShape.learn(twice, deltaFrame(twice)!)).toBeNull();
      const usageFirst = block(
        '{"usage":{"prompt_tokens":1},"choices":[{"delta":{"content":"a"},"finish_reason":null}]}',
      );
      expect(FrameShape.learn(usageFirst, deltaFrame(usageFirst)!)).toBeNull();
      const role = block(textStream([])[0]);
      expect(FrameShape.learn(role, deltaFrame(role)!)).toBeNull();
      const fin = block(textFrame('x', 1, 'stop'));
      expect(FrameShape.learn(fin, deltaFrame(fin)!)).toBeNull();
      // llama.cpp's text frames (no usage) are learnt, and read by their shape
      const ll = Buffer.from(`data: ${REAL_FRAMES.llamacppContent}\n\n`);
      const shape = FrameShape.learn(ll, deltaFrame(ll)!)!;
      const next = Buffer.from(`data: ${REAL_FRAMES.llamacppContent.replace('"Hi"', '" there"')}\n\n`);
      same(shape.read(next), deltaFrame(next));
      expect(JSON.parse(shape.read(next)!.text!.toString())).toBe(' there');
    });
  });
});
