// The engine chat-completion streams the stream translators' fast-path tests run both ways (read
// from the bytes, every frame parsed): every stream real engines recorded (test/engines/fixtures/),
// the simulator's own frames (engines/simulator/chat/stream.ts, run for real: vLLM's shape, stop
// strings, reasoning, tool calls, a cut), and text with escapes, non-ASCII and split surrogate
// pairs. Used by proxy/dialects/responses/delta-frame.test.ts and
// proxy/dialects/messages/frames.test.ts.
import { readdirSync, readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import type { ChoicePlan, Step } from '../../engines/simulator/chat/plan.ts';
import { type StreamPlan, streamChat } from '../../engines/simulator/chat/stream.ts';
import { usageOf } from '../../engines/simulator/chat/usage.ts';
import { parseChunk } from '../../proxy/calls/engine-stream.ts';
import { REAL_FRAMES } from '../../proxy/engine/frames/real-frames.fixture.ts';
import type { Fixture } from '../engines/fixtures/cases.ts';

export type Chunk = Record<string, unknown>;
export const block = (o: unknown) =>
  Buffer.from(`data: ${typeof o === 'string' ? o : JSON.stringify(o)}\n\n`);
export const parsed = (b: Buffer) => parseChunk(b.toString('utf8', 6, b.length - 2));

const FIXTURES = new URL('../engines/fixtures/', import.meta.url);
/** Every recorded chat stream, as its frames (without [DONE]). */
export const recorded: [string, Chunk[]][] = readdirSync(FIXTURES, { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .flatMap((d) =>
    readdirSync(new URL(`${d.name}/`, FIXTURES))
      .filter((f) => f.endsWith('.json'))
      .map((f) => [`${d.name}/${f}`, JSON.parse(readFileSync(new URL(`${d.name}/${f}`, FIXTURES), 'utf8'))]),
  )
  .filter(
    ([, fx]) =>
      Array.isArray((fx as Fixture).frames) && (fx as Fixture).request.path === '/v1/chat/completions',
  )
  .map(([name, fx]) => [name as string, (fx as Fixture).frames!.filter((f): f is Chunk => f !== '[DONE]')]);

/** The same object with its keys in reverse order, and so its first choice and that choice's delta. */
export function reversed(c: Chunk): Chunk {
  const rev = (o: Chunk) => Object.fromEntries(Object.entries(o).reverse());
  const choices = Array.isArray(c.choices)
    ? c.choices.map((ch: Chunk) =>
        rev(
          typeof ch.delta === 'object' && ch.delta !== null ? { ...ch, delta: rev(ch.delta as Chunk) } : ch,
        ),
      )
    : c.choices;
  return rev({ ...c, choices });
}

export const usage = (n: number) => ({ prompt_tokens: 9, completion_tokens: n, total_tokens: 9 + n });
export const textFrame = (content: unknown, n: number, finish: string | null = null) => ({
  id: 'c',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'm',
  choices: [{ index: 0, delta: { content }, logprobs: null, finish_reason: finish, token_ids: null }],
  usage: usage(n),
});
/** A stream of these texts, finishing as given, in the simulator's (vLLM's) shape. */
export const textStream = (texts: unknown[], finish = 'stop'): Chunk[] => [
  {
    ...textFrame('', 0),
    choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }],
    prompt_token_ids: null,
  },
  ...texts.map((t, i) => textFrame(t, i + 1, i === texts.length - 1 ? finish : null)),
  {
    id: 'c',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'm',
    choices: [],
    usage: usage(texts.length),
    system_fingerprint: 'fp',
  },
];

/** The frames the simulator writes for one choice's steps (run for real, no waits). */
async function simulated(
  steps: Step[],
  o: { finish?: string; stop?: string | null; usage?: 'none' | 'final' | 'continuous'; cut?: boolean } = {},
): Promise<Chunk[]> {
  let text = '';
  const res = {
    writeHead: () => res,
    write: (f: string, done?: () => void) => {
      text += f;
      done?.();
      return true;
    },
    end: (f?: string) => {
      text += f ?? '';
    },
    destroy: () => {},
  } as unknown as ServerResponse;
  const tokens = steps.reduce((n, s) => n + s.tokens, 0);
  const plan: StreamPlan = {
    meta: { id: 'chatcmpl-sim', created: 1795633409, model: 'sim/model', system_fingerprint: 'sim' },
    createdCacheTokens: 0,
    plans: [
      {
        index: 0,
        steps,
        finishReason: o.finish ?? 'stop',
        stopReason: o.stop ?? null,
      } as ChoicePlan,
    ],
    usage: usageOf(13, 5, tokens),
    includeUsage: o.usage !== 'none',
    continuousUsage: o.usage === 'continuous',
    failure: o.cut ? 'mid-stream' : null,
    firstTokenAt: 0,
    itlMs: 0,
    onTokens: () => {},
    onFailure: () => {},
  };
  await streamChat(res, new AbortController().signal, plan);
  return text
    .split('\n\n')
    .filter((f) => f.startsWith('data: ') && f !== 'data: [DONE]')
    .map((f) => JSON.parse(f.slice(6)) as Chunk);
}

const words = (ws: string[]): Step[] => ws.map((text) => ({ kind: 'content', text, tokens: 1 }));
/** The simulator's streams: its text answers in each usage mode, a stop string, reasoning, tools, a cut. */
export const simulatorStreams = async (): Promise<[string, Chunk[]][]> => [
  [
    'simulator: continuous usage, stopped by a stop string',
    await simulated(words(['Tree', ' sand', ' "warm"', ' town']), { usage: 'continuous', stop: 'END' }),
  ],
  ['simulator: final usage, length', await simulated(words(['a', ' b', ' c']), { finish: 'length' })],
  ['simulator: no usage', await simulated(words(['a', ' b']), { usage: 'none' })],
  [
    'simulator: reasoning then text',
    await simulated(
      [
        { kind: 'reasoning', text: 'hm', tokens: 1 },
        { kind: 'content', text: 'ok', tokens: 1 },
      ],
      { usage: 'continuous' },
    ),
  ],
  [
    'simulator: a tool call',
    await simulated(
      [
        { kind: 'tool-start', call: 0, id: 'call_1', name: 'f', tokens: 1 },
        { kind: 'tool-args', call: 0, text: '{"a":1}', tokens: 3 },
      ],
      { finish: 'tool_calls', usage: 'continuous' },
    ),
  ],
  ['simulator: nothing generated', await simulated([], { usage: 'continuous' })],
  [
    'simulator: cut midway',
    await simulated(words(['one', ' two', ' three', ' four']), { usage: 'continuous', cut: true }),
  ],
];

/** Every stream above but the simulator's (those are made by running it: simulatorStreams()). */
export const STREAMS: [string, Chunk[]][] = [
  ['quotes, backslashes, control characters', textStream(['say "hi"', ' \\ \n\t', '\u0001\u001f', '\u2028'])],
  ['non-ASCII and emoji', textStream(['Grüße ', '東京', ' 🌧'], 'length')],
  // An emoji split between two tokens: each frame holds half a surrogate pair (escaped).
  ['a surrogate pair split across frames', textStream(['a', '\ud83c', '\udf27', 'b'])],
  ['empty and null content between texts', textStream(['x', '', null, 'y'])],
  ['a stream without text', textStream([''])],
  [
    'REAL_FRAMES (vLLM)',
    ['vllmFirst', 'vllmContent', 'vllmLastToken', 'vllmUsage'].map((k) =>
      JSON.parse(REAL_FRAMES[k as keyof typeof REAL_FRAMES]),
    ),
  ],
  [
    'REAL_FRAMES (llama.cpp)',
    ['llamacppFirst', 'llamacppContent', 'llamacppContentTimings', 'llamacppFinish', 'llamacppUsage'].map(
      (k) => JSON.parse(REAL_FRAMES[k as keyof typeof REAL_FRAMES]),
    ),
  ],
  ...recorded,
];
