// The simulator held to the real engines it stands in for: every fixture folder under
// test/engines/fixtures/ (recorded from a real engine by fixtures/record.ts) is replayed to a
// simulator set up as that engine was (model name, context length, vLLM's
// --enable-force-include-usage), and each answer must have the recorded shape: status, content
// type, fields and their JSON types, a stream's order of frame kinds and each kind's fields, an
// error body's type, param and the type of its code, the metric families and their labels.
// Values (text, ids, token counts) differ by design and are not compared.
// A llama.cpp folder is held to less: the simulator imitates vLLM, so against llama.cpp's answers
// only what the proxy relies on from any engine is compared (status class, the OpenAI-schema
// fields and their JSON types, a stream's frame order, [DONE], where usage comes), and the known
// differences are listed in LLAMACPP_DIFFERS with why, each checked against the recording.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../engines/simulator/server.ts';
import {
  type Fixture,
  type Frame,
  fixtureCases,
  type Meta,
  type MetricFamily,
  metricFamilies,
  type RecordedCase,
} from './fixtures/cases.ts';
import { errorSignature, fieldPaths, frameKind, frameOrder } from './fixtures/shape.ts';

const root = fileURLToPath(new URL('./fixtures/', import.meta.url));
const folders = readdirSync(root, { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name);

const read = <T>(folder: string, file: string): T =>
  JSON.parse(readFileSync(join(root, folder, file), 'utf8')) as T;

/**
 * A stream's frame kinds for comparison: a last token sent with finish_reason ('content+finish')
 * and a finish after the last token ('content', 'finish') both end 'content', 'finish'. Whether
 * the last token rides with finish_reason is checked on its own (below): a real engine holds a
 * token back that ends mid-character (random weights make many), and then sends an empty finish.
 */
function comparableOrder(frames: readonly Frame[]): string[] {
  const kinds = frameOrder(frames).flatMap((k) => (k === 'content+finish' ? ['content', 'finish'] : [k]));
  return kinds.filter((k, i) => kinds[i - 1] !== k);
}

/** Field paths per kind of frame; a finish frame's delta is compared with the content frames'. */
function comparableFields(frames: readonly Frame[]): Record<string, string[]> {
  const out: Record<string, Set<string>> = {};
  for (const f of frames) {
    if (f === '[DONE]') continue;
    const kind = frameKind(f).replace('content+finish', 'finish');
    const set = out[kind] ?? new Set<string>();
    out[kind] = set;
    for (const p of fieldPaths(f)) if (!(kind === 'finish' && p.startsWith('choices[].delta'))) set.add(p);
  }
  return Object.fromEntries(Object.entries(out).map(([k, s]) => [k, [...s].sort()]));
}

/** A JSON body's field paths; an empty array and one with items are the same field. */
function bodyFields(body: unknown): string[] {
  return fieldPaths(body).map((p) => p.replace(/: \[\]$/, ': array'));
}

/** llama.cpp's recordings are compared by what the proxy relies on (below), not by vLLM's shape. */
const isLlamacpp = (meta: Meta) => meta.engine.startsWith('llama.cpp');

/**
 * Cases where llama.cpp answers otherwise than vLLM (and the simulator) by design: what it
 * answered, and why. Not compared with the simulator; the recording must still say this.
 */
const LLAMACPP_DIFFERS: Record<string, { status: number; why: string }> = {
  'chat-n2': {
    status: 400,
    why: 'llama-server serves n = 1 only ("Field n: value must be between 1 and 1")',
  },
  'error-bad-param': { status: 200, why: 'no range check on sampling params; temperature <= 0 means greedy' },
  'error-stream-options': { status: 200, why: 'stream_options without stream is ignored, not refused' },
  refusal: { status: 200, why: 'no stop_token_ids parameter: unknown fields are ignored, so no refusal' },
  'refusal-stream': { status: 200, why: 'the same, streamed: it never refuses after its head' },
  'too-long-max-tokens': {
    status: 400,
    why: 'max_tokens is never refused (generation stops at the context); the prompt (~2 tokens a word here) is over',
  },
  'too-long-max-tokens-stream': { status: 400, why: 'the same, refused before any stream head' },
  'chat-stream-continuous-usage': {
    status: 200,
    why: 'no continuous_usage_stats (vLLM-only): usage comes on the last frame only, as without it',
  },
  'tools-named-stream': {
    status: 200,
    why: 'no grammar for a named tool_choice with the tiny model\'s template: text, not a tool call (docs/engines.md "Real engines")',
  },
  tokenize: { status: 200, why: '/tokenize takes {content}, not {messages}: it answers {tokens: []}' },
};

/**
 * The fields the proxy reads or relays from any engine's chat answer (OpenAI's schema); llama.cpp
 * adds others (timings, system_fingerprint, error n_ctx/n_prompt_tokens) and vLLM others again.
 */
const RELIED = new Set([
  'id',
  'object',
  'created',
  'model',
  'choices[].index',
  'choices[].finish_reason',
  'choices[].message.role',
  'choices[].message.content',
  'choices[].delta.content',
  'usage.prompt_tokens',
  'usage.completion_tokens',
  'usage.total_tokens',
  'error.message',
  'data[].id',
  'data[].object',
]);
/** Fields of a kind of stream frame that differ by design: `kind: path` and why. */
const LLAMACPP_FIELD_DIFFERS: Record<string, string> = {
  'role: choices[].delta.content': 'llama.cpp opens with content null, vLLM with "": the proxy relays either',
};
const relied = (paths: readonly string[]) => paths.filter((p) => RELIED.has(p.split(':')[0]!));
const statusClass = (s: number) => Math.floor(s / 100);

const contentKind = (t: string | null) => t?.split(';')[0]?.trim() ?? null;

describe.each(folders)('the simulator answers as %s did', (folder) => {
  const meta = read<Meta>(folder, 'meta.json');
  const cases = fixtureCases({ model: meta.model, maxModelLen: meta.maxModelLen });
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({
      models: [meta.model],
      maxModelLen: meta.maxModelLen,
      forceIncludeUsage: meta.flags.includes('--enable-force-include-usage'),
      ttftMs: 0,
      itlMs: 2,
    });
  });
  afterAll(async () => {
    await sim?.close();
  });

  it.each(cases.map((c) => [c.name, c] as const))('%s', async (name, c) => {
    const recorded = read<Fixture>(folder, `${name}.json`);
    expect(recorded.request, 'the fixture was recorded from this request').toEqual(c.request);
    if (isLlamacpp(meta)) return reliedOn(name, recorded, await c.run(sim.url));
    const got = await c.run(sim.url);
    expect(got.status).toBe(recorded.status);
    expect(contentKind(got.contentType)).toBe(contentKind(recorded.contentType));
    if (recorded.frames === null) {
      expect(got.frames).toBeNull();
      expect(bodyFields(got.body)).toEqual(bodyFields(recorded.body));
      expect(errorSignature(got.body)).toEqual(errorSignature(recorded.body));
      return;
    }
    const frames = got.frames!;
    expect(comparableOrder(frames)).toEqual(comparableOrder(recorded.frames));
    expect(comparableFields(frames)).toEqual(comparableFields(recorded.frames));
    const errorOf = (fs: readonly Frame[]) =>
      errorSignature(fs.find((f) => f !== '[DONE]' && 'error' in f) ?? null);
    expect(errorOf(frames)).toEqual(errorOf(recorded.frames));
    // Where the engine sent its last token with finish_reason, the simulator must too.
    if (recorded.frames.some((f) => f !== '[DONE]' && frameKind(f) === 'content+finish'))
      expect(frames.some((f) => f !== '[DONE]' && frameKind(f) === 'content+finish')).toBe(true);
  });

  it.skipIf(isLlamacpp(meta))(
    '/metrics: every vllm: family the simulator exports is one the engine has, with the same labels',
    async () => {
      const recorded = new Map(read<MetricFamily[]>(folder, 'metrics.json').map((f) => [f.name, f]));
      const ours = metricFamilies(await fetch(`${sim.url}/metrics`).then((r) => r.text())).filter((f) =>
        f.name.startsWith('vllm:'),
      );
      expect(ours.length).toBeGreaterThan(5);
      for (const f of ours) expect({ [f.name]: recorded.get(f.name) ?? 'missing' }).toEqual({ [f.name]: f });
      // Those the platform reads (dashboards, alerts, the autoscaler's signals) must be among them.
      for (const name of [
        'vllm:num_requests_running',
        'vllm:num_requests_waiting',
        'vllm:kv_cache_usage_perc',
      ])
        expect(ours.map((f) => f.name)).toContain(name);
      expect(recorded.has('vllm:gpu_cache_usage_perc')).toBe(false);
    },
  );
});

/** A llama.cpp answer against the simulator's: only what the proxy relies on from any engine. */
function reliedOn(name: string, recorded: Fixture, got: RecordedCase): void {
  const differs = LLAMACPP_DIFFERS[name];
  if (differs) {
    expect(recorded.status, differs.why).toBe(differs.status);
    return;
  }
  expect(statusClass(got.status)).toBe(statusClass(recorded.status));
  expect(contentKind(got.contentType)).toBe(contentKind(recorded.contentType));
  if (recorded.frames === null) {
    expect(got.frames).toBeNull();
    expect(relied(bodyFields(got.body))).toEqual(relied(bodyFields(recorded.body)));
    return;
  }
  const frames = got.frames!;
  // A stream read to its end ends [DONE] (the abort case leaves before it).
  if (recorded.frames.at(-1) === '[DONE]') expect(frames.at(-1)).toBe('[DONE]');
  expect(comparableOrder(frames)).toEqual(comparableOrder(recorded.frames));
  const fields = (fs: readonly Frame[]) =>
    Object.fromEntries(
      Object.entries(comparableFields(fs)).map(([k, ps]) => [
        k,
        relied(ps).filter((p) => !(`${k}: ${p.split(':')[0]}` in LLAMACPP_FIELD_DIFFERS)),
      ]),
    );
  expect(fields(frames)).toEqual(fields(recorded.frames));
}
