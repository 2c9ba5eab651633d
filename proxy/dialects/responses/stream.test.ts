// A Responses stream's bytes are the same whichever way its engine frames are read: from their
// bytes (../../engine/frames/delta-frame.ts; more streams in its delta-frame.test.ts) or parsed and translated — and they parse as the events the SDK's stream helper accumulates.
import { describe, expect, it } from 'vitest';
import { parseChunk } from '../../calls/engine-stream.ts';
import type { ResponsesRequest } from '../../schemas/responses.ts';
import { echoOf } from './response.ts';
import { ResponsesStream, ResponsesTranslator } from './stream.ts';

const usage = (n: number) => ({ prompt_tokens: 9, completion_tokens: n, total_tokens: 9 + n });
const frame = (choices: unknown[], n: number) =>
  Buffer.from(
    `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices, usage: usage(n) })}\n\n`,
  );
const words = ['Hel', 'lo "you"', ' \\ 東京', '\n🌧'];
const engine = (finish: string) => [
  frame([{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }], 0),
  ...words.map((w, i) =>
    frame([{ index: 0, delta: { content: w }, logprobs: null, finish_reason: null }], i + 1),
  ),
  frame([{ index: 0, delta: {}, logprobs: null, finish_reason: finish, stop_reason: null }], 4),
  frame([], 4),
];

function run(fast: boolean, finish: string): string {
  const echo = echoOf({ model: 'm', input: 'hi' } as ResponsesRequest, 'm', 16, new Map());
  echo.id = 'resp_1';
  const tr = new ResponsesTranslator(new ResponsesStream(echo), () => {});
  const out: Buffer[] = [Buffer.from(tr.head())];
  let fastFrames = 0;
  for (const b of engine(finish)) {
    if (fast && tr.fast(b, out) !== undefined) fastFrames++;
    else tr.chunk(parseChunk(b.toString('utf8', 6, b.length - 2)), out);
  }
  if (fast) expect(fastFrames).toBe(engine(finish).length); // every frame of this stream
  out.push(tr.end({ inputTokens: 9, cachedTokens: 0, outputTokens: 4 }, { cost: '0', currency: 'USD' }));
  // Item ids are new per stream; completed_at may fall in the next second.
  return Buffer.concat(out)
    .toString()
    .replace(/"(msg|rs|fc)_[^"]+"/g, '"$1_x"')
    .replace(/"completed_at":\d+/g, '"completed_at":1');
}

const events = (s: string) =>
  s
    .split('\n\n')
    .filter(Boolean)
    .map((e) => JSON.parse(e.split('\n')[1]!.slice(6)) as Record<string, unknown>);

describe('Responses stream: frames read from bytes or parsed, the same events', () => {
  it.each(['stop', 'length'])('finish_reason %s', (finish) => {
    const fast = run(true, finish);
    expect(fast).toBe(run(false, finish));
    const evs = events(fast);
    expect(evs.map((e) => e.sequence_number)).toEqual(evs.map((_, i) => i));
    const last = evs.at(-1)! as {
      type: string;
      response: { status: string; output: { content: { text: string }[] }[] };
    };
    expect(last.type).toBe(finish === 'length' ? 'response.incomplete' : 'response.completed');
    expect(last.response.output[0]!.content[0]!.text).toBe(words.join(''));
    const deltas = evs.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta);
    expect(deltas).toEqual(words);
  });
});
