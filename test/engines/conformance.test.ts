// The simulator held to the real engines it stands in for: every fixture folder under
// test/engines/fixtures/ (recorded from a real engine by fixtures/record.ts) is replayed to a
// simulator set up as that engine was (model name, context length, vLLM's
// --enable-force-include-usage), and each answer must have the recorded shape: status, content
// type, fields and their JSON types, a stream's order of frame kinds and each kind's fields, an
// error body's type, param and the type of its code, the metric families and their labels.
// Values (text, ids, token counts) differ by design and are not compared.
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

  it('/metrics: every vllm: family the simulator exports is one the engine has, with the same labels', async () => {
    const recorded = new Map(read<MetricFamily[]>(folder, 'metrics.json').map((f) => [f.name, f]));
    const ours = metricFamilies(await fetch(`${sim.url}/metrics`).then((r) => r.text())).filter((f) =>
      f.name.startsWith('vllm:'),
    );
    expect(ours.length).toBeGreaterThan(5);
    for (const f of ours) expect({ [f.name]: recorded.get(f.name) ?? 'missing' }).toEqual({ [f.name]: f });
    // Those the platform reads (dashboards, alerts, the autoscaler's signals) must be among them.
    for (const name of ['vllm:num_requests_running', 'vllm:num_requests_waiting', 'vllm:kv_cache_usage_perc'])
      expect(ours.map((f) => f.name)).toContain(name);
    expect(recorded.has('vllm:gpu_cache_usage_perc')).toBe(false);
  });
});
