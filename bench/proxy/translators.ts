// CPU time per stream of each dialect's stream translator alone (../../proxy/dialects/): a
// 16-token answer in the simulator's frames (role frame, 16 text frames, the last finishing, the
// usage-only frame — what bench/proxy/run.ts streams), fed as the relay feeds it (the fast way
// where a translator takes the frame, else parsed), its bytes gathered per frame. CPU time, not
// wall time, and the dialects take turns: steadier than whole-proxy rates on a shared machine.
//   npx tsx bench/proxy/translators.ts      (BENCH_ROUNDS=7 rounds of 20000 streams per dialect)
import { parseChunk } from '../../proxy/calls/engine-stream.ts';
import { messagesDialect } from '../../proxy/dialects/messages/text.ts';
import { chatDialect } from '../../proxy/dialects/openai/text.ts';
import { echoOf } from '../../proxy/dialects/responses/response.ts';
import { responsesDialect } from '../../proxy/dialects/responses/text.ts';
import type { StreamTranslator } from '../../proxy/dialects/translator.ts';
import type { ResponsesRequest } from '../../proxy/schemas/responses.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const STREAMS = 20_000;
const MODEL = 'bench/model';
const WORDS = 'Tree sand warm town home data text sun snow mint town blue open code sun rock'.split(' ');

// The simulator's frames byte for byte (engines/simulator/chat/stream.ts, vLLM's shape): usage on
// every frame (the proxy asks for continuous usage), the first frame ending in vLLM's
// prompt_token_ids / prompt_text, the finish_reason on the last token's frame, the usage-only frame
// with system_fingerprint after its usage.
const HEAD =
  '{"id":"chatcmpl-5fc26064b70cf7fb39a5ee01","object":"chat.completion.chunk","created":1795633409,"model":"bench/model"';
const running = (n: number) =>
  `"usage":{"prompt_tokens":13,"total_tokens":${13 + n},"completion_tokens":${n},"completion_tokens_details":null}`;
const frame = (rest: string) => Buffer.from(`data: ${HEAD},${rest}}\n\n`);
const engine = [
  frame(
    `"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],${running(0)},"prompt_token_ids":null,"prompt_text":null`,
  ),
  ...WORDS.map((w, i) =>
    frame(
      `"choices":[{"index":0,"delta":{"content":${JSON.stringify(i === 0 ? w : ` ${w}`)}},"logprobs":null,"finish_reason":${
        i === WORDS.length - 1 ? '"length","stop_reason":null' : 'null'
      },"token_ids":null}],${running(i + 1)}`,
    ),
  ),
  frame(
    '"choices":[],"usage":{"prompt_tokens":13,"total_tokens":29,"completion_tokens":16,"prompt_tokens_details":{"cached_tokens":0,"created_cache_tokens":0}},"system_fingerprint":"modelplane-simulator (not a real model)"',
  ),
];
const usage = { inputTokens: 13, cachedTokens: 0, outputTokens: 16 };
const cost = { cost: '0.0000115', currency: 'USD' };
const entry = { id: MODEL, kind: 'chat' } as Parameters<typeof chatDialect>[0];
const request = {
  model: MODEL,
  input: 'Say hello to the benchmark in a few words.',
  max_output_tokens: 16,
  store: false,
  stream: true,
} as ResponsesRequest;

const all: Record<string, () => StreamTranslator> = {
  'chat completions': () => chatDialect(entry, { include_usage: true }).translator(),
  Messages: () =>
    messagesDialect({ model: MODEL, stopSequences: undefined, estimateInput: () => 13 }).translator(),
  Responses: () => responsesDialect(echoOf(request, MODEL, 16, new Map()), () => {}).translator(),
};
// BENCH_ONLY=Responses: one dialect (to profile it).
const dialects = process.env.BENCH_ONLY ? { [process.env.BENCH_ONLY]: all[process.env.BENCH_ONLY]! } : all;

/** One stream through a translator: the bytes its client gets. */
function stream(tr: StreamTranslator): number {
  const out: Buffer[] = [];
  let bytes = 0;
  const head = tr.head(null);
  if (head !== '') out.push(Buffer.from(head));
  for (const b of engine) {
    if (tr.fast(b, out) === undefined) tr.chunk(parseChunk(b.toString('utf8', 6, b.length - 2)), out);
    bytes += Buffer.concat(out).length; // the relay writes each engine read's pieces at once
    out.length = 0;
  }
  return bytes + tr.end(usage, cost).length;
}

const cpuUs = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const bytes: Record<string, number> = {};
for (const [name, make] of Object.entries(dialects))
  for (let i = 0; i < STREAMS; i++) bytes[name] = stream(make());
const perStream: Record<string, number[]> = Object.fromEntries(Object.keys(dialects).map((k) => [k, []]));
for (let round = 0; round < ROUNDS; round++)
  for (const [name, make] of Object.entries(dialects)) {
    const t0 = cpuUs();
    for (let i = 0; i < STREAMS; i++) stream(make());
    perStream[name]!.push((cpuUs() - t0) / STREAMS);
  }
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const chat = median(perStream['chat completions'] ?? [1]);
console.log('| translator | CPU µs per stream (median) | ÷ chat | bytes to the client |');
console.log('|---|---:|---:|---:|');
for (const [name, xs] of Object.entries(perStream))
  console.log(`| ${name} | ${median(xs).toFixed(1)} | ${(median(xs) / chat).toFixed(2)} | ${bytes[name]} |`);
